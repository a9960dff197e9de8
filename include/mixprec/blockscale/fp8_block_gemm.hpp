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
//     p   = Σ_k float(qa[i][k]) · float(qb[j][k]) over the chunk, from +0, in the order
//           gemm<bfloat16, bfloat16> has on this machine's gemm path (docs/gemm.md, "Accumulation
//           order": pairs swapped on the portable, AVX2, AVX-512 and AVX512-BF16 paths, AMX chunks
//           on amx_bf16), each addition rounded once
//     acc = acc + (p · sa(i, t)) · sb(j, t)        (DeepSeek's "tl.dot(a, b) · a_s · b_s")
//   C[i][j] = acc
// where sa, sb are the blocks' decode scales.  p is exactly gemm<bfloat16, bfloat16> on the
// chunk's codes (every fp8 value is a bf16 value), as mx_gemm is gemm on its dequantised
// operands; force_gemm_path or MIXPREC_GEMM_PATH picks the path, and so the order.  Until the
// product ran on gemm p was summed sequentially; the order changes only the last bits, and the
// bound below holds for every order.  The promotion's three roundings are kept apart: the
// products are stored before the additions read them (detail/block_products.hpp,
// contraction_barrier), so no compiler fuses them, whatever -ffp-contract says.
//
// Each product of two fp8 values is exact in float (at most 8 significant bits, magnitudes in
// [2^-32, 57344^2]), so p is the chunk's exact product sum with at most w − 1 roundings.  With no
// underflow or overflow on the way,
//   |C − E| <= gamma(w − 1 + 2 + T − 1) · Σ_k |â_ik| · |b̂_jk|,   gamma(n) = n·u / (1 − n·u), u = 2^-24,
// w = min(K, 128) the chunk depth, T = ceil(K / 128) the chunk count, E the exact product of the
// dequantised operands â = qa · sa, b̂ = qb · sb (tests/blockscale/fp8_block_gemm_test.cpp).
// Tensor cores sum a chunk with fewer bits and in another order (DeepSeek-V3 §3.3.2: about 14), so a
// GPU's C agrees with this one within such a bound, not bit for bit.
//
// How it runs: the codes decoded once into bf16, each chunk's p taken by mixprec::gemm one tile
// of C at a time and promoted into C (detail/block_products.hpp).  Threads: the tiles of C split
// as gemm splits (set_gemm_threads; products under 2^23 multiply-adds per thread stay on one);
// the result does not depend on the thread count, nor on the caller's rounding mode or FTZ/DAZ.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "../bulk/simd_path.hpp"
#include "../detail/bits.hpp"
#include "../errors.hpp"
#include "../gemm/detail/sources.hpp"
#include "../types.hpp"
#include "detail/block_products.hpp"
#include "fp8_block.hpp"

namespace mixprec::blockscale {
namespace detail {
// The codes as bfloat16 values (exact: every e4m3fn and e5m2 value is one), through the gemm's
// table of the 256 codes (gemm/detail/sources.hpp: lookup_words, vpermi2w on AVX-512), into
// storage that is not zeroed first: every element is written.  A scalar lookup into a zero-filled
// vector took 11 % and 5 % of an fp8-block training step.
template <class T>
std::unique_ptr<bfloat16[]> as_bfloat16(const fp8_block_matrix<T>& m) {
  static_assert(sizeof(bfloat16) == sizeof(std::uint16_t), "a bfloat16 is its 16-bit code");
  const std::size_t n = m.rows() * m.cols();
  std::unique_ptr<bfloat16[]> values(new bfloat16[n]);
  mixprec::detail::lookup_words(reinterpret_cast<const unsigned char*>(m.data()), n,
                                mixprec::detail::bfloat16_table_of<T>().codes.data(),
                                reinterpret_cast<std::uint16_t*>(values.get()), active_simd_path());
  return values;
}
}  // namespace detail

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
  if (K == 0) {  // no chunk: acc = 0
    for (std::size_t i = 0; i < M; ++i) std::fill(c + i * ldc, c + i * ldc + N, 0.0f);
    return;
  }
  const std::unique_ptr<bfloat16[]> qa = detail::as_bfloat16(a), qb = detail::as_bfloat16(b);
  const std::size_t chunks = a.block_cols(), height_a = a.block_height(), height_b = b.block_height();
  // The running sums in C itself (no beta to keep C's old values for).
  detail::for_each_block_product(
      qa.get(), K, qb.get(), K, M, N, K, fp8_block_size, detail::block_sums::by_caller, c, ldc,
      [&](const detail::block_product& p) {
        const std::size_t t = p.block;
        float scales_b[detail::tile_cols];
        for (std::size_t col = 0; col < p.cols; ++col)
          scales_b[col] = b.scale_invs()[(p.col + col) / height_b * chunks + t];
        for (std::size_t r = 0; r < p.rows; ++r) {  // p · sa(i, t), then · sb(j, t): two roundings
          const float scale_a = a.scale_invs()[(p.row + r) / height_a * chunks + t];
          float* product = p.product + r * p.ld;
          for (std::size_t col = 0; col < p.cols; ++col) product[col] = (product[col] * scale_a) * scales_b[col];
        }
        detail::contraction_barrier();  // the additions below round on their own, never fused with the above
        for (std::size_t r = 0; r < p.rows; ++r) {
          const float* scaled = p.product + r * p.ld;
          float* acc = p.sums + r * p.sums_ld;
          if (t == 0) {
            for (std::size_t col = 0; col < p.cols; ++col) acc[col] = 0.0f + scaled[col];
          } else {
            for (std::size_t col = 0; col < p.cols; ++col) acc[col] = acc[col] + scaled[col];
          }
        }
      });
}

}  // namespace mixprec::blockscale
