// Transformer Engine's statistics of an MX quantisation (its mxfp8 recipe's underflows%, mse,
// scale_inv_min/max; docs/fp8.md, "Quantisation statistics"):
//
//   auto r = mixprec::mx_statistics(a, lda, m);   // m = mx_quantize(a, ...); r.tensor, r.quantization
//
// The matrix is dequantised (mx_dequantize, into a buffer of rows × cols floats) and compared with
// a value by value; scale_inv_min/max are the smallest and largest block scales 2^(e - 127) (an
// MX block scale multiplies on dequantisation, as TE's scale_inv).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../errors.hpp"
#include "../scaling/fp8/quantization_statistics.hpp"
#include "matrix.hpp"
#include "quantize.hpp"

namespace mixprec {

template <class T>
quantization_report mx_statistics(const float* a, std::size_t lda, const mx_matrix<T>& m) {
  const std::size_t rows = m.rows(), cols = m.cols();
  if (rows > 0 && cols > 0 && a == nullptr) {
    throw invalid_argument("mx_statistics: null input pointer for a " + std::to_string(rows) + " × " +
                           std::to_string(cols) + " matrix");
  }
  if (rows > 1 && lda < cols) {
    throw invalid_argument("mx_statistics: lda = " + std::to_string(lda) +
                           " is less than cols = " + std::to_string(cols));
  }
  std::vector<float> dequantised(rows * cols);
  if (!dequantised.empty()) mx_dequantize(m, dequantised.data(), cols);
  std::vector<float> scale_invs(m.blocks());
  for (std::size_t b = 0; b < scale_invs.size(); ++b) scale_invs[b] = static_cast<float>(m.scales()[b]);
  return statistics_of_dequantized(a, lda, dequantised.data(), cols, rows, cols, scale_invs.data(), scale_invs.size());
}

}  // namespace mixprec
