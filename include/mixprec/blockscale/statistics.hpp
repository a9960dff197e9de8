// Transformer Engine's statistics of a block-fp8 or an NVFP4 quantisation (underflows%, mse,
// scale_inv_min/max and the input's own statistics; docs/fp8.md, "Quantisation statistics"):
//
//   auto q = mixprec::blockscale::fp8_block_quantize<mixprec::float8_e4m3fn>(a, rows, cols, lda);
//   auto r = mixprec::blockscale::fp8_block_statistics(a, lda, q);
//   auto t = mixprec::blockscale::nvfp4_quantize(a, rows, cols, lda, options);
//   auto s = mixprec::blockscale::nvfp4_statistics(a, lda, *t.rowwise);   // or *t.columnwise
//
// The quantised matrix is dequantised (into a buffer of rows × cols floats) and compared with the
// float input a value by value (statistics_of_dequantized).  The scale range is TE's over the
// copy's scale_inv tensor: the block decode scales of block fp8 (float(q) · scale_inv is the
// value), the ue4m3 block scales of NVFP4 (TE's _rowwise_scale_inv / _columnwise_scale_inv; the
// value also takes the per-tensor decode scale, m.decode_scale(), which is not in the range).
// Overflows are not counted: a block scale is set from its block's amax (TE counts overflows for
// per-tensor delayed scaling only).
#pragma once

#include <cstddef>
#include <vector>

#include "../scaling/fp8/quantization_statistics.hpp"
#include "fp8_block.hpp"
#include "nvfp4.hpp"

namespace mixprec::blockscale {

// a: the float matrix (leading dimension lda) that m was quantised from.
template <class T>
quantization_report fp8_block_statistics(const float* a, std::size_t lda, const fp8_block_matrix<T>& m) {
  const std::vector<float> scale_invs(m.scale_invs(), m.scale_invs() + m.block_rows() * m.block_cols());
  return mixprec::detail::dequantized_matrix_report(
      "fp8_block_statistics", a, lda, m.rows(), m.cols(),
      [&](float* out, std::size_t ldo) { fp8_block_dequantize(m, out, ldo); }, scale_invs);
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
  return mixprec::detail::dequantized_matrix_report(
      "nvfp4_statistics", a, lda, m.rows(), m.cols(),
      [&](float* out, std::size_t ldo) { nvfp4_dequantize(m, out, ldo); }, scale_invs);
}

}  // namespace mixprec::blockscale
