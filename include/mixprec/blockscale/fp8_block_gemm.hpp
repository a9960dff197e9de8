// C = A · Bᵀ on fp8 block-scaled operands with fp32 promotion every 128 elements of K: the CPU
// reference of the block-scaled GPU GEMMs (DeepSeek-V3's fp8_gemm_kernel in inference/kernel.py,
// DeepGEMM, TE's Float8BlockScaling GEMMs).
//
//   mixprec::blockscale::fp8_block_gemm(a, b, c, ldc);    // a: M × K, b: N × K, c: M × N row-major
//
// Both operands are blocked along K, their rows being the GEMM's M and N: A is typically the 1×128
// activation, B the 128×128 weight stored as the linear layer keeps it (out_features × in_features),
// as DeepSeek-V3's fp8_gemm(a, a_s, b, b_s) takes them.  Any pair of block kinds is accepted (TE
// refuses 128×128 × 128×128; this reference computes it all the same).
//
// Order of operations for each C[i][j], everything in float32, each operation rounded once:
//   acc = 0
//   for each K chunk t = 0, 1, ... (columns 128t .. min(K, 128t + 128) − 1):
//     p   = 0;  for k in the chunk, increasing:  p = p + float(qa[i][k]) · float(qb[j][k])
//     acc = acc + (p · sa(i, t)) · sb(j, t)        (DeepSeek's "tl.dot(a, b) · a_s · b_s")
//   C[i][j] = acc
// where sa, sb are the blocks' decode scales.  Each product of two fp8 values is exact in float
// (at most 8 significant bits, magnitudes in [2^-32, 57344^2]), so p is the chunk's exact
// product sum with one rounding per addition.  With no underflow or overflow on the way,
//   |C − E| <= gamma(w − 1 + 2 + T − 1) · Σ_k |â_ik| · |b̂_jk|,   gamma(n) = n·u / (1 − n·u), u = 2^-24,
// w = min(K, 128) the chunk depth, T = ceil(K / 128) the chunk count, E the exact product of the
// dequantised operands â = qa · sa, b̂ = qb · sb (tests/blockscale/fp8_block_gemm_test.cpp).
// Tensor cores sum a chunk with fewer bits and in another order (DeepSeek-V3 §3.3.2: about 14), so a
// GPU's C agrees with this one within such a bound, not bit for bit.  On a target with FMA and
// floating-point contraction allowed (GCC's -ffp-contract=fast, Clang's default) the compiler may
// fuse the last multiplication and addition: the bound still holds, the order above does not.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "../errors.hpp"
#include "fp8_block.hpp"

namespace mixprec::blockscale {

template <class TA, class TB>
void fp8_block_gemm(const fp8_block_matrix<TA>& a, const fp8_block_matrix<TB>& b, float* c, std::size_t ldc) {
  const std::size_t M = a.rows(), N = b.rows(), K = a.cols();
  if (b.cols() != K) {
    throw invalid_argument("fp8_block_gemm: A is " + std::to_string(M) + " × " + std::to_string(K) + " but B is " +
                           std::to_string(N) + " × " + std::to_string(b.cols()) +
                           " (C = A · Bᵀ: both must have K columns)");
  }
  detail::check_float_matrix("fp8_block_gemm", "output", c, M, N, ldc, sizeof(float));
  if (M == 0 || N == 0) return;
  // The codes as floats (exact), so that the inner loop is a plain float dot product.
  std::vector<float> fa(M * K), fb(N * K);
  for (std::size_t x = 0; x < M * K; ++x) fa[x] = static_cast<float>(a.data()[x]);
  for (std::size_t x = 0; x < N * K; ++x) fb[x] = static_cast<float>(b.data()[x]);
  const std::size_t chunks = a.block_cols(), height_a = a.block_height(), height_b = b.block_height();
  for (std::size_t i = 0; i < M; ++i) {
    const float* row_a = fa.data() + i * K;
    const float* scales_a = a.scale_invs() + (i / height_a) * chunks;
    for (std::size_t j = 0; j < N; ++j) {
      const float* row_b = fb.data() + j * K;
      const float* scales_b = b.scale_invs() + (j / height_b) * chunks;
      float acc = 0.0f;
      for (std::size_t t = 0; t < chunks; ++t) {
        const std::size_t k0 = t * fp8_block_size, k1 = std::min(K, k0 + fp8_block_size);
        float p = 0.0f;
        for (std::size_t k = k0; k < k1; ++k) p += row_a[k] * row_b[k];
        const float scaled = p * scales_a[t];
        acc += scaled * scales_b[t];
      }
      c[i * ldc + j] = acc;
    }
  }
}

}  // namespace mixprec::blockscale
