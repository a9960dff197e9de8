// Transformer Engine's statistics of an MX quantisation (its mxfp8 recipe's underflows%, mse,
// scale_inv_min/max; docs/fp8.md, "Quantisation statistics"):
//
//   auto r = mixprec::mx_statistics(a, lda, m);   // m = mx_quantize(a, ...); r.tensor, r.quantization
//
// The matrix is dequantised (mx_dequantize, into a buffer of rows × cols floats) and compared with
// a value by value; scale_inv_min/max are the smallest and largest block scales 2^(e - 127) (an
// MX block scale multiplies on dequantisation, as TE's scale_inv).  Overflows are the values the
// OCP scale rule leaves above the element format's range and the quantise clips (an e4m3 block
// whose amax has a significand above 1.8125 · 2^k: detail::overflow_boundary).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "../scaling/fp8/quantization_statistics.hpp"
#include "matrix.hpp"
#include "quantize.hpp"

namespace mixprec {

template <class T>
quantization_report mx_statistics(const float* a, std::size_t lda, const mx_matrix<T>& m) {
  std::vector<float> scale_invs(m.blocks());
  for (std::size_t b = 0; b < scale_invs.size(); ++b) scale_invs[b] = static_cast<float>(m.scales()[b]);
  const float largest = static_cast<float>(std::numeric_limits<T>::max());
  return detail::dequantized_matrix_report<T>(
      "mx_statistics", a, lda, m.rows(), m.cols(), [&](float* out, std::size_t ldo) { mx_dequantize(m, out, ldo); },
      scale_invs, [&](std::size_t r, std::size_t c) { return largest * static_cast<float>(m.scale(r, c)); });
}

}  // namespace mixprec
