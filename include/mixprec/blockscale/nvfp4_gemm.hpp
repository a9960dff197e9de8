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
//
// How it runs: each element decoded once with its block scale, q · s, into bfloat16 (exact), and
// each 16-deep block's product taken by mixprec::gemm (its bf16 kernels) one tile of C at a time
// (detail/block_products.hpp).  Since every block sum is exact, gemm's order inside a block
// changes nothing: the result is the order above bit for bit, on every gemm path and thread
// count (tests/blockscale/nvfp4_gemm_test.cpp checks it against that scalar loop).  Threads: the
// tiles of C split as gemm splits (set_gemm_threads; products under 2^23 multiply-adds per
// thread stay on one), and the caller's rounding mode and FTZ/DAZ do not change the result.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "../detail/bits.hpp"
#include "../errors.hpp"
#include "../types.hpp"
#include "detail/block_products.hpp"
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
  if (M == 0 || N == 0) return;
  const std::size_t blocks = a.blocks_per_line(), length = blocks * nvfp4_block_size;
  // Each element decoded with its block's scale, q · s, as a bfloat16 (exact: 2 significant bits
  // times e4m3's 4 are at most 6, and 2^-10 <= |q · s| <= 2688 is in bf16's normal range), through
  // a table of the 16 codes per scale code, filled as scales turn up.
  std::uint16_t table[256][16];
  bool filled[256] = {};
  // Into storage that is not zeroed first (every element is written), two codes per byte (element
  // 2k in the low nibble, mx/packing.hpp).
  const auto decoded = [&](const nvfp4_matrix& m, std::size_t lines) {
    std::unique_ptr<bfloat16[]> values(new bfloat16[lines * length]);
    for (std::size_t l = 0; l < lines; ++l) {
      for (std::size_t kb = 0; kb < blocks; ++kb) {
        const float8_ue4m3 scale_code = m.scale(l, kb);
        const unsigned sc = scale_code.bits();
        if (!filled[sc]) {
          const float s = static_cast<float>(scale_code);
          for (unsigned q = 0; q < 16; ++q) {
            const float value = static_cast<float>(float4_e2m1fn::from_bits(static_cast<std::uint8_t>(q))) * s;
            table[sc][q] = static_cast<std::uint16_t>(mixprec::detail::bit_cast<std::uint32_t>(value) >> 16);
          }
          filled[sc] = true;
        }
        const unsigned char* codes = m.block_data(l, kb);
        bfloat16* out = values.get() + l * length + kb * nvfp4_block_size;
        for (std::size_t k = 0; k < nvfp4_block_size / 2; ++k) {
          out[2 * k] = mixprec::detail::code_access::make<bfloat16>(table[sc][codes[k] & 0x0Fu]);
          out[2 * k + 1] =
              mixprec::detail::code_access::make<bfloat16>(table[sc][static_cast<unsigned>(codes[k]) >> 4]);
        }
      }
    }
    return values;
  };
  if (length == 0) {  // K = 0: acc = 0
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) {
        float& out = c[i * ldc + j];
        out = beta == 0.0f ? scale * 0.0f : detail::stored(scale * 0.0f) + detail::stored(beta * out);
      }
    }
    return;
  }
  const std::unique_ptr<bfloat16[]> qa = decoded(a, M), qb = decoded(b, N);
  // Each block's product is Σ_k (q_a s_a)(q_b s_b) = (Σ_k q_a q_b) · (s_a s_b) = t_b: every partial
  // sum in any order is a multiple of s_a s_b / 4 below 576 s_a s_b, at most 20 bits, so gemm's
  // kernels (sequential, pairs swapped or AMX chunks) all give it exactly; gemm's own epilogue
  // with beta = 1 then rounds acc + t_b once.  Only that accumulation over blocks, in increasing
  // order, and the epilogue below round, as above.
  // The running sums in a compact scratch tile (gemm goes over them once per 16 k: kept in L2, not
  // strided through C), written to C with the epilogue after the last block.
  detail::for_each_block_product(qa.get(), length, qb.get(), length, M, N, length, nvfp4_block_size,
                                 detail::block_sums::by_gemm, nullptr, 0, [&](const detail::block_product& p) {
                                   for (std::size_t r = 0; r < p.rows; ++r) {
                                     const float* acc = p.sums + r * p.sums_ld;
                                     float* out = c + (p.row + r) * ldc + p.col;
                                     if (beta == 0.0f) {
                                       for (std::size_t col = 0; col < p.cols; ++col) out[col] = scale * acc[col];
                                     } else {
                                       for (std::size_t col = 0; col < p.cols; ++col) {
                                         out[col] = detail::stored(scale * acc[col]) + detail::stored(beta * out[col]);
                                       }
                                     }
                                   }
                                 });
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
