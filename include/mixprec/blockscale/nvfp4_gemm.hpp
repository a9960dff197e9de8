// Matrix product on NVFP4 operands: C = alpha × A × B + beta × C, A (M × K) as its row-wise copy
// and B (K × N) as its column-wise copy, so that both are blocked along K, the layout a
// block-scaled MMA (Blackwell's tcgen05.mma ... .block_scale, scale vector size 16) takes.
//
// The order, modelled on that instruction: for each C[i][j] and each block b of 16 along K,
//
//   t_b = (Σ_k q_a[k] · q_b[k]) · fl(s_a · s_b)         exact in float: e2m1 products are
//                                                        multiples of 1/4 up to 36, a block's sum
//                                                        at most 576 (12 bits); s_a · s_b has 8
//   acc = fl(acc + t_b)                                  bits, so t_b has at most 20
//   C[i][j] = fl(fl(alpha · fl(d_a · d_b)) · acc)   (+ fl(beta · C[i][j]), rounded once more)
//
// with d_a, d_b the copies' per-tensor decode scales (as TE passes alpha = S_dec_a · S_dec_b to
// the GEMM).  Only the accumulation and the three epilogue operations round, so against the exact
// product of the dequantised operands â = q · s · d (computed without rounding)
//
//   |C - (alpha Σ_k â_ik b̂_kj + beta C)| <= gamma_(nb + 4) (|alpha| Σ_k |â_ik b̂_kj| + |beta C|),
//
// nb = ceil(K / 16), gamma_n = n u / (1 - n u), u = 2^-24, outside float's subnormal range.  The
// hardware's own accumulation order inside an MMA is not documented; this is the library's.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../errors.hpp"
#include "nvfp4.hpp"

namespace mixprec::blockscale {
namespace detail {
// A product stored and read back, so that no compiler fuses it into the following addition
// (GCC's default -ffp-contract=fast would where the target has FMA) and it rounds once, as above.
inline float stored(float x) noexcept {
  volatile float kept = x;
  return kept;
}
}  // namespace detail

inline void nvfp4_gemm(float alpha, const nvfp4_matrix& a, const nvfp4_matrix& b, float beta, float* c,
                       std::size_t ldc) {
  if (a.columnwise() || !b.columnwise()) {
    throw invalid_argument(std::string("nvfp4_gemm: A must be a rowwise copy and B a columnwise copy (both blocked "
                                       "along K); got A ") +
                           (a.columnwise() ? "columnwise" : "rowwise") + " and B " +
                           (b.columnwise() ? "columnwise" : "rowwise"));
  }
  if (a.hadamard_transformed() != b.hadamard_transformed()) {
    // One operand transformed along K and the other not: the product is neither the untransformed
    // one nor anything else meaningful (hadamard.hpp: only (S·H/4)(S·H/4)ᵀ = I cancels).
    throw invalid_argument(std::string("nvfp4_gemm: A's copy is ") + (a.hadamard_transformed() ? "" : "not ") +
                           "Hadamard-transformed and B's copy is " + (b.hadamard_transformed() ? "" : "not ") +
                           "(both or neither must be)");
  }
  const std::size_t M = a.rows(), N = b.cols(), K = a.cols();
  if (b.rows() != K) {
    throw invalid_argument("nvfp4_gemm: A is " + std::to_string(M) + " × " + std::to_string(K) + " but B is " +
                           std::to_string(b.rows()) + " × " + std::to_string(N) + " (A's columns must be B's rows)");
  }
  mixprec::detail::check_mx_arguments("nvfp4_gemm", c, M, N, ldc);
  const float scale = alpha * (a.decode_scale() * b.decode_scale());
  const std::size_t blocks = a.blocks_per_line(), length = blocks * nvfp4_block_size;
  // Every code of each operand decoded once (exact), and its block scales as floats, so that the
  // inner loop is a plain float dot product; the arithmetic and its order are as above.
  const auto decoded = [&](const nvfp4_matrix& m, std::size_t lines, std::vector<float>& values,
                           std::vector<float>& scales) {
    values.resize(lines * length);
    scales.resize(lines * blocks);
    for (std::size_t l = 0; l < lines; ++l) {
      for (std::size_t kb = 0; kb < blocks; ++kb) {
        const unsigned char* codes = m.block_data(l, kb);
        for (std::size_t k = 0; k < nvfp4_block_size; ++k) {
          values[l * length + kb * nvfp4_block_size + k] = static_cast<float>(
              float4_e2m1fn::from_bits(static_cast<std::uint8_t>(mixprec::detail::read_packed_code<4>(codes, k))));
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
        for (std::size_t k = 0; k < nvfp4_block_size; ++k) sum += pa[k] * pb[k];
        acc += sum * (sa[i * blocks + kb] * sb[j * blocks + kb]);
      }
      float& out = c[i * ldc + j];
      out = beta == 0.0f ? scale * acc : detail::stored(scale * acc) + detail::stored(beta * out);
    }
  }
}

// On the tensors' copies: A's rowwise, B's columnwise.
inline void nvfp4_gemm(float alpha, const nvfp4_tensor& a, const nvfp4_tensor& b, float beta, float* c,
                       std::size_t ldc) {
  if (!a.rowwise || !b.columnwise) {
    throw invalid_argument(std::string("nvfp4_gemm: needs A's rowwise copy and B's columnwise copy; A ") +
                           (a.rowwise ? "has" : "lacks") + " its rowwise copy, B " + (b.columnwise ? "has" : "lacks") +
                           " its columnwise copy");
  }
  nvfp4_gemm(alpha, *a.rowwise, *b.columnwise, beta, c, ldc);
}

}  // namespace mixprec::blockscale
