// Scalar references of the block-scaled GEMMs, sharing no code with the library's loops (the
// fast paths run on mixprec::gemm; these are the documented orders written out, one element at a
// time):
//
//   nvfp4_gemm_reference       nvfp4_gemm.hpp's order: exact block sums, float accumulation in
//                              block order, the epilogue (the library's loop before it ran on gemm)
//   fp8_block_gemm_in_order    fp8_block_gemm.hpp's order, each 128-chunk summed from +0 in one of
//                              gemm's orders (tests/gemm/gemm_reference.hpp), then promoted
//   fp8_block_gemm_sequential  fp8_block_gemm's loop before it ran on gemm (sequential chunk sums),
//                              for the benchmark's "before" figures
#pragma once

#include <mixprec/blockscale/fp8_block.hpp>
#include <mixprec/blockscale/nvfp4.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "../gemm/gemm_reference.hpp"

namespace block_gemm_reference {

// Stored and read back: rounded once, never fused into what follows.
inline float rounded(float x) noexcept {
  volatile float kept = x;
  return kept;
}

inline void nvfp4_gemm_reference(float alpha, const mixprec::blockscale::nvfp4_matrix& a,
                                 const mixprec::blockscale::nvfp4_matrix& b, float beta, float* c, std::size_t ldc) {
  using mixprec::blockscale::nvfp4_block_size;
  const std::size_t M = a.rows(), N = b.cols();
  const float scale = alpha * (a.decode_scale() * b.decode_scale());
  const std::size_t blocks = a.blocks_per_line(), length = blocks * nvfp4_block_size;
  const auto decoded = [&](const mixprec::blockscale::nvfp4_matrix& m, std::size_t lines, std::vector<float>& values,
                           std::vector<float>& scales) {
    values.resize(lines * length);
    scales.resize(lines * blocks);
    for (std::size_t l = 0; l < lines; ++l) {
      for (std::size_t kb = 0; kb < blocks; ++kb) {
        const unsigned char* codes = m.block_data(l, kb);
        for (std::size_t k = 0; k < nvfp4_block_size; ++k) {
          values[l * length + kb * nvfp4_block_size + k] = static_cast<float>(mixprec::float4_e2m1fn::from_bits(
              static_cast<std::uint8_t>(mixprec::detail::read_packed_code<4>(codes, k))));
        }
        scales[l * blocks + kb] = static_cast<float>(m.scale(l, kb));
      }
    }
  };
  std::vector<float> qa, qb, sa, sb;
  decoded(a, M, qa, sa);
  decoded(b, N, qb, sb);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (std::size_t kb = 0; kb < blocks; ++kb) {
        const float* pa = qa.data() + i * length + kb * nvfp4_block_size;
        const float* pb = qb.data() + j * length + kb * nvfp4_block_size;
        float sum = 0.0f;
        for (std::size_t k = 0; k < nvfp4_block_size; ++k) sum += pa[k] * pb[k];  // exact, fused or not
        acc += sum * (sa[i * blocks + kb] * sb[j * blocks + kb]);                 // the product is exact
      }
      float& out = c[i * ldc + j];
      out = beta == 0.0f ? scale * acc : rounded(scale * acc) + rounded(beta * out);
    }
  }
}

// acc = 0; for each chunk t: p = chunk sum in `order` from +0; acc = acc + (p · sa(i, t)) · sb(j, t).
template <class TA, class TB>
void fp8_block_gemm_in_order(const mixprec::blockscale::fp8_block_matrix<TA>& a,
                             const mixprec::blockscale::fp8_block_matrix<TB>& b, float* c, std::size_t ldc,
                             gemm_test::summation order) {
  const std::size_t M = a.rows(), N = b.rows(), K = a.cols();
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (std::size_t k0 = 0; k0 < K; k0 += 128) {
        const std::size_t width = std::min<std::size_t>(128, K - k0);
        const float p = gemm_test::same_order_sum(width, order, [&](std::size_t k) {
          return std::make_pair(static_cast<float>(a.element(i, k0 + k)), static_cast<float>(b.element(j, k0 + k)));
        });
        const float scaled = rounded(p * a.scale_inv_at(i, k0));
        acc = acc + rounded(scaled * b.scale_inv_at(j, k0));
      }
      c[i * ldc + j] = acc;
    }
  }
}

// fp8_block_gemm's loop before it ran on gemm, verbatim (timing only: fused or not as the
// compiler chose).
template <class TA, class TB>
void fp8_block_gemm_sequential(const mixprec::blockscale::fp8_block_matrix<TA>& a,
                               const mixprec::blockscale::fp8_block_matrix<TB>& b, float* c, std::size_t ldc) {
  const std::size_t M = a.rows(), N = b.rows(), K = a.cols(), size = mixprec::blockscale::fp8_block_size;
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
        const std::size_t k0 = t * size, k1 = std::min(K, k0 + size);
        float p = 0.0f;
        for (std::size_t k = k0; k < k1; ++k) p += row_a[k] * row_b[k];
        const float scaled = p * scales_a[t];
        acc += scaled * scales_b[t];
      }
      c[i * ldc + j] = acc;
    }
  }
}

}  // namespace block_gemm_reference
