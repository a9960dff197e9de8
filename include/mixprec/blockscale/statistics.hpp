// Transformer Engine's statistics of a block-fp8 or an NVFP4 quantisation (underflows%, mse,
// scale_inv_min/max and the input's own statistics; docs/fp8.md, "Quantisation statistics"):
//
//   auto q = mixprec::blockscale::fp8_block_quantize<mixprec::float8_e4m3fn>(a, rows, cols, lda);
//   auto r = mixprec::blockscale::fp8_block_statistics(a, lda, q);
//   auto t = mixprec::blockscale::nvfp4_quantize(a, rows, cols, lda, options);
//   auto s = mixprec::blockscale::nvfp4_statistics(a, lda, *t.rowwise);   // or *t.columnwise
//   auto scales = mixprec::blockscale::torchao_quantize(a, rows, cols, lda, scaling, q, ldq);
//   auto u = mixprec::blockscale::torchao_statistics(a, rows, cols, lda, scaling, q, ldq, scales);
//
// The quantised matrix is dequantised (into a buffer of rows × cols floats) and compared with the
// float input a value by value (statistics_of_dequantized).  The scale range is TE's over the
// copy's scale_inv tensor: the block decode scales of block fp8 (float(q) · scale_inv is the
// value), the ue4m3 block scales of NVFP4 (TE's _rowwise_scale_inv / _columnwise_scale_inv; the
// value also takes the per-tensor decode scale, m.decode_scale(), which is not in the range), and
// 1 / scale of each line of torchao's tensor-wise or axis-wise casts (rowwise.hpp: a value is its
// code divided by its line's scale, which is in the range as its reciprocal).
// Overflows are mixprec's definition (TE counts them for per-tensor delayed scaling only): the
// values that their block's rounded scale leaves above the element format's range, which the
// quantise clipped (detail::overflow_boundary).  Power-of-two fp8 block scales (TE's default)
// round down, and other fp8 block scales leave a block's amax at most a rounding above 448: no
// overflows.  A normal ue4m3 NVFP4 scale is rounded by at most 1/16, so a block's amax decodes to
// at most 6.375 < 7; a block whose amax is below about 2^-6 / 448 of the tensor's amax gets a
// subnormal ue4m3 scale, rounded more coarsely, and can clip (tested).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "../scaling/fp8/quantization_statistics.hpp"
#include "fp8_block.hpp"
#include "nvfp4.hpp"
#include "rowwise.hpp"

namespace mixprec::blockscale {

// a: the float matrix (leading dimension lda) that m was quantised from.
template <class T>
quantization_report fp8_block_statistics(const float* a, std::size_t lda, const fp8_block_matrix<T>& m) {
  const std::vector<float> scale_invs(m.scale_invs(), m.scale_invs() + m.block_rows() * m.block_cols());
  const float largest = static_cast<float>(std::numeric_limits<T>::max());
  return mixprec::detail::dequantized_matrix_report<T>(
      "fp8_block_statistics", a, lda, m.rows(), m.cols(),
      [&](float* out, std::size_t ldo) { fp8_block_dequantize(m, out, ldo); }, scale_invs,
      [&](std::size_t r, std::size_t c) { return largest * m.scale_inv_at(r, c); });
}

// a: the float matrix (leading dimension lda) that the copy m (row-wise or column-wise) was
// quantised from.
inline quantization_report nvfp4_statistics(const float* a, std::size_t lda, const nvfp4_matrix& m) {
  std::vector<float> scale_invs(m.lines() * m.blocks_per_line());
  for (std::size_t line = 0; line < m.lines(); ++line) {
    for (std::size_t j = 0; j < m.blocks_per_line(); ++j) {
      scale_invs[line * m.blocks_per_line() + j] = static_cast<float>(m.scale(line, j));
    }
  }
  const unsigned largest_code = std::numeric_limits<float4_e2m1fn>::max().bits();
  return mixprec::detail::dequantized_matrix_report<float4_e2m1fn>(
      "nvfp4_statistics", a, lda, m.rows(), m.cols(),
      [&](float* out, std::size_t ldo) { nvfp4_dequantize(m, out, ldo); }, scale_invs,
      [&](std::size_t r, std::size_t c) {
        const std::size_t line = m.columnwise() ? c : r, position = m.columnwise() ? r : c;
        return m.decode(largest_code, m.scale(line, position / nvfp4_block_size));
      });
}

// a: the float matrix (rows × cols, leading dimension lda) that torchao_quantize cast into q
// (leading dimension ldq) under `scaling`, returning `scales`.
template <class T>
quantization_report torchao_statistics(const float* a, std::size_t rows, std::size_t cols, std::size_t lda,
                                       const torchao_scaling& scaling, const T* q, std::size_t ldq,
                                       const std::vector<float>& scales) {
  detail::check_torchao_scaling("torchao_statistics", scaling);
  const std::size_t expected = detail::scale_count(scaling, rows, cols);
  if (rows > 0 && cols > 0 && scales.size() != expected) {
    throw invalid_argument("torchao_statistics: " + std::to_string(scales.size()) + " scales for a " +
                           std::to_string(rows) + " × " + std::to_string(cols) + " matrix whose scaling has " +
                           std::to_string(expected));
  }
  std::vector<float> scale_invs(scales.size());
  for (std::size_t k = 0; k < scales.size(); ++k) scale_invs[k] = 1.0f / scales[k];
  const float largest = static_cast<float>(std::numeric_limits<T>::max());
  return mixprec::detail::dequantized_matrix_report<T>(
      "torchao_statistics", a, lda, rows, cols,
      [&](float* out, std::size_t ldo) { torchao_dequantize(q, rows, cols, ldq, scaling, scales.data(), out, ldo); },
      scale_invs, [&](std::size_t r, std::size_t c) { return largest / scales[detail::scale_line(scaling, r, c)]; });
}

}  // namespace mixprec::blockscale
