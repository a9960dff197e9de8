// The loop that fp8_block_gemm and nvfp4_gemm share: mixprec::gemm on each K block of bf16
// operands, one tile of C at a time, the blocks' products added to running sums in increasing
// block order.
//
//   for each tile of C (tile_rows × tile_cols; the tiles split over threads)
//     for block t = 0, 1, ... (k in [t·depth, min(K, (t + 1)·depth)))
//       by_caller:  product = gemm<bfloat16, bfloat16>(the tile's rows of A and B, that K range)
//                   promote(tile, t, product)            the caller's promotion step
//       by_gemm:    sums = gemm(..., beta = t == 0 ? 0 : 1, sums)   = fl(sums + product)
//     by_gemm: promote(tile) once, after the last block
//
// A K block is a separate gemm call of depth <= `depth`, so each element's block product is
// gemm's sum in its documented order on this path (docs/gemm.md, "Accumulation order"), from +0,
// over that block alone; the factor is 1, so gemm's epilogue is 1 · s (beta 0) or fma(1, s, C)
// (beta 1), exact or one rounding of the sum.  Each element of C is computed by one thread in
// the same order whatever the tiling and the thread count, so neither changes a bit.  A tile's
// products and sums stay in cache while the blocks of K go by; a gemm over all of M × N per
// block would stream C through memory once per block, which for 16-deep NVFP4 blocks costs more
// than the products.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>

#include "../../detail/parallel.hpp"
#include "../../gemm/detail/environment.hpp"
#include "../../gemm/gemm.hpp"
#include "../../gemm/options.hpp"
#include "../../types.hpp"

namespace mixprec::blockscale::detail {

// One block's product over one tile of C, handed to the caller's promotion step.  Element (r, c)
// of the tile, r < rows and c < cols, is C(row + r, col + c); product[r * ld + c] is its block
// product (the caller may overwrite it), sums[r * sums_ld + c] its running sum (uninitialised at
// block 0): in a scratch tile, or in C itself where the caller passed C for them.
struct block_product {
  std::size_t row, rows, col, cols, block;
  bool last;  // the last block of K: the sums are final
  float* product;
  std::size_t ld;
  float* sums;
  std::size_t sums_ld;
};

// Keeps the compiler from fusing a multiplication before this point into an addition after it:
// GCC's -ffp-contract=fast (its default in GNU mode) fuses across statements where the target
// has FMA, but not through memory that an asm statement may have changed.  Clang's default
// (-ffp-contract=on) and MSVC's /fp:precise fuse only within one expression, which the callers
// never write.
inline void contraction_barrier() noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __asm__ __volatile__("" ::: "memory");
#endif
}

// Rows and columns of C per tile: multiples of every gemm micro-tile (6 × 16, 12 × 32, 32 × 32);
// 384 KiB of products or sums.  Chosen by measurement on the 2-core AMD EPYC (AVX2): against
// 96 × 256 it packs each operand panel half as often (the float kernels' packing of bf16 is what
// a 16-deep call spends most on besides the products); larger tiles gained nothing.
constexpr std::size_t tile_rows = 192, tile_cols = 512;

// Who adds each block's product to the running sums.
enum class block_sums {
  by_caller,  // promote(p) after every block, with that block's product
  by_gemm,    // gemm itself, sums = fl(sums + product) (beta = 1: C = fma(1, s, 1 · C), docs/gemm.md,
              // one rounding); promote(p) after the last block only, with product = nullptr
};

// A: M rows of bf16 values, lda apart, K along each row; B: N rows, ldb apart (C = A · Bᵀ).  The
// running sums live in `sums_in` (M × N, sums_ld apart: C itself, for a caller with no beta)
// or, for nullptr, in a scratch tile per thread.
template <class Promote>
void for_each_block_product(const bfloat16* a, std::size_t lda, const bfloat16* b, std::size_t ldb, std::size_t M,
                            std::size_t N, std::size_t K, std::size_t depth, block_sums sums_by, float* sums_in,
                            std::size_t sums_ld, const Promote& promote) {
  if (M == 0 || N == 0 || K == 0) return;
  gemm_options options;
  options.path = resolve_gemm_path();  // once: every block and thread on the same path
  options.threads = 1;
  const std::size_t blocks = K / depth + (K % depth != 0 ? 1 : 0);
  const std::size_t row_tiles = (M + tile_rows - 1) / tile_rows, column_tiles = (N + tile_cols - 1) / tile_cols;
  const bool split_rows = row_tiles >= column_tiles;
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const double shares = work / gemm_work_per_thread;  // gemm's rule for the global thread setting
  const unsigned threads =
      shares < 1.0 ? 1u : static_cast<unsigned>(std::min(static_cast<double>(gemm_threads()), shares));
  const std::size_t ld = std::min(tile_cols, N), scratch = std::min(tile_rows, M) * ld;
  const auto run = [&](std::size_t, std::size_t first, std::size_t last) {
    const mixprec::detail::float_environment environment;  // the promotion steps too: nearest, no flushing
    const std::unique_ptr<float[]> product(sums_by == block_sums::by_caller ? new float[scratch] : nullptr);
    const std::unique_ptr<float[]> scratch_sums(sums_in == nullptr ? new float[scratch] : nullptr);
    const std::size_t i_end = split_rows ? std::min(M, last * tile_rows) : M;
    const std::size_t j_end = split_rows ? N : std::min(N, last * tile_cols);
    for (std::size_t i = split_rows ? first * tile_rows : 0; i < i_end; i += tile_rows) {
      for (std::size_t j = split_rows ? 0 : first * tile_cols; j < j_end; j += tile_cols) {
        const std::size_t rows = std::min(tile_rows, M - i), cols = std::min(tile_cols, N - j);
        float* const sums = sums_in == nullptr ? scratch_sums.get() : sums_in + i * sums_ld + j;
        const std::size_t s_ld = sums_in == nullptr ? ld : sums_ld;
        for (std::size_t t = 0; t < blocks; ++t) {
          const std::size_t k = t * depth, width = std::min(depth, K - k);
          const bool last_block = t + 1 == blocks;
          if (sums_by == block_sums::by_gemm) {
            gemm(transpose::no, transpose::yes, rows, cols, width, 1.0f, a + i * lda + k, lda, b + j * ldb + k, ldb,
                 t == 0 ? 0.0f : 1.0f, sums, s_ld, options);
            if (last_block) promote(block_product{i, rows, j, cols, t, true, nullptr, ld, sums, s_ld});
          } else {
            gemm(transpose::no, transpose::yes, rows, cols, width, 1.0f, a + i * lda + k, lda, b + j * ldb + k, ldb,
                 0.0f, product.get(), ld, options);
            promote(block_product{i, rows, j, cols, t, last_block, product.get(), ld, sums, s_ld});
          }
        }
      }
    }
  };
  mixprec::detail::run_chunks(mixprec::detail::split_work(split_rows ? row_tiles : column_tiles, threads, 1, 1), run);
}

}  // namespace mixprec::blockscale::detail
