// Matrix product on MX operands (issue 7): C = alpha × A × B + beta × C with A (M × K) and B
// (K × N) in MX formats, fp32 accumulation, through any float GEMM with the contract signature of
// DESIGN.md ("CPU matrix product"):
//
//   void float_gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* A,
//                   std::size_t lda, const float* B, std::size_t ldb, float beta, float* C,
//                   std::size_t ldc);          // C = alpha * A * B + beta * C, row-major
//
//   mixprec::mx_gemm(1.0f, a, b, 0.0f, c, ldc);               // mixprec::gemm<float, float>
//   mixprec::mx_gemm(1.0f, a, b, 0.0f, c, ldc, float_gemm);   // any other (a BLAS sgemm, ...)
//
// The product runs over K in chunks of k_chunk (a multiple of 32, default 256): the chunk's
// columns of A and rows of B are dequantised into float panels (exact: every MX value is a
// float, mx/quantize.hpp), then float_gemm(M, N, k_chunk, alpha, panel_a, k_chunk, panel_b, N,
// beta_k, C, ldc) with beta_k = beta for the first chunk and 1 after it.  So C accumulates in
// float, chunk by chunk in increasing k, each chunk's sum in float_gemm's own order; with the
// contract's rounding (each element's products summed in float, then C = fma(alpha, s, beta × C))
// the result is within gamma_(K + K / k_chunk + 1) × (|alpha| Σ|â_ik b̂_kj| + |beta C|) of the
// exact product of the dequantised operands (gamma_n = n u / (1 - n u), u = 2^-24; docs/fp8.md).
// The quantisation error of â against the original A is separate (mx/quantize.hpp).
//
// Either operand may be blocked along either axis (mx_dequantize_region).  Blocks along K (A by
// rows, B by columns) are the layout a hardware MX product takes: A's blocks then decode straight
// into the panel's rows, B's are written down the panel's columns.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "../errors.hpp"
#include "../gemm/gemm.hpp"
#include "matrix.hpp"
#include "quantize.hpp"

namespace mixprec {

template <class TA, class TB, class FloatGemm,
          class = std::enable_if_t<
              std::is_invocable<FloatGemm&, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                                const float*, std::size_t, float, float*, std::size_t>::value>>
void mx_gemm(float alpha, const mx_matrix<TA>& a, const mx_matrix<TB>& b, float beta, float* c, std::size_t ldc,
             FloatGemm&& float_gemm, std::size_t k_chunk = 256) {
  const std::size_t M = a.rows(), N = b.cols(), K = a.cols();
  if (b.rows() != K) {
    throw invalid_argument("mx_gemm: A is " + std::to_string(M) + " × " + std::to_string(K) + " but B is " +
                           std::to_string(b.rows()) + " × " + std::to_string(N) + " (A's columns must be B's rows)");
  }
  if (k_chunk == 0 || k_chunk % mx_block_size != 0) {
    throw invalid_argument("mx_gemm: k_chunk is " + std::to_string(k_chunk) + ", it must be a positive multiple of 32");
  }
  detail::check_mx_arguments("mx_gemm", c, M, N, ldc);
  if (M == 0 || N == 0) return;
  if (K == 0) {  // no chunk: C = beta * C as the contract's GEMM does (beta == 0: C is not read)
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  const std::size_t width = std::min(k_chunk, K);
  std::vector<float> panel_a(M * width), panel_b(width * N);
  for (std::size_t k0 = 0; k0 < K; k0 += k_chunk) {
    const std::size_t depth = std::min(k_chunk, K - k0);
    mx_dequantize_region(a, 0, M, k0, depth, panel_a.data(), depth);
    mx_dequantize_region(b, k0, depth, 0, N, panel_b.data(), N);
    float_gemm(M, N, depth, alpha, static_cast<const float*>(panel_a.data()), depth,
               static_cast<const float*>(panel_b.data()), N, k0 == 0 ? beta : 1.0f, c, ldc);
  }
}

// On mixprec::gemm<float, float> (whose order and bound are in docs/gemm.md).
template <class TA, class TB>
void mx_gemm(float alpha, const mx_matrix<TA>& a, const mx_matrix<TB>& b, float beta, float* c, std::size_t ldc,
             std::size_t k_chunk = 256) {
  mx_gemm(
      alpha, a, b, beta, c, ldc,
      [](std::size_t m, std::size_t n, std::size_t k, float al, const float* pa, std::size_t lda, const float* pb,
         std::size_t ldb, float be, float* pc, std::size_t ld) { gemm(m, n, k, al, pa, lda, pb, ldb, be, pc, ld); },
      k_chunk);
}

}  // namespace mixprec
