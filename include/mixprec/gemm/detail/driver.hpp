// The blocked product (GotoBLAS / BLIS loop structure) over one kernel family, its threads, and
// the choice of family per path and type pair.
//
//   for jc over N by nc                           columns of C and B
//     for each group of rows                      (all rows, or mc rows: see partial sums)
//       for pc over K by kc                       B panel kc x nc packed once per (jc, group, pc)
//         for ic over the group by mc             A block mc x kc packed once per (.., ic)
//           for jr by nr, ir by mr                one micro-kernel call per tile
//
// Partial sums.  Each C element is one chain of sums over the whole of K (tile.hpp); between K
// blocks the chain's running sums are stored as floats and reloaded, which changes nothing.
// With beta == 0 (or K <= kc) they are stored in C itself.  Otherwise C's old values are needed
// by the epilogue at the end, so the sums go to a per-thread buffer of mc x nc floats and the
// rows are taken mc at a time (B panels are then packed once per mc rows instead of once).
//
// Threads split the rows (or, when there are more column tiles than row tiles, the columns) of
// C into contiguous ranges of whole tiles, never K: every C element is computed by one thread in
// the same order, so the result does not depend on the thread count (tests check it bit for
// bit).  Each thread packs its own operands into its own buffers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "../../bulk/simd_path.hpp"
#include "../../detail/parallel.hpp"
#include "../options.hpp"
#include "environment.hpp"
#include "families.hpp"
#include "packing.hpp"
#include "sources.hpp"
#include "tile.hpp"

namespace mixprec::detail {

// A grow-only, 64-byte aligned array of trivially copyable T.
template <class T>
class aligned_array {
 public:
  T* get(std::size_t n) {
    if (n > capacity_) {
      data_.reset(static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64})));
      capacity_ = n;
    }
    return data_.get();
  }

 private:
  struct release {
    void operator()(T* p) const noexcept { ::operator delete (p, std::align_val_t{64}); }
  };
  std::unique_ptr<T, release> data_;
  std::size_t capacity_ = 0;
};

// One thread's buffers.  Their size depends on the blocking only (never on M, N or K beyond
// it): packed A block and B panel, their float copies for fallback tiles, keys, staging for
// the sources, and the partial sums of the beta != 0 case.
struct gemm_buffers {
  aligned_array<unsigned char> a_packed, b_packed;
  aligned_array<float> a_float, b_float, staging, partials;
  aligned_array<int> a_keys, b_keys;
};

// This thread's buffers: kept for later calls on the caller's thread, freed with a helper thread.
inline gemm_buffers& thread_buffers() {
  thread_local gemm_buffers buffers;
  return buffers;
}

inline void prefetch_for_writing(const float* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 1);
#else
  (void)p;
#endif
}

struct gemm_problem {
  std::size_t K;
  float factor, beta;
  float* C;
  std::size_t ldc;
  simd_path decode_path;  // bulk kernels the sources decode with
};

// Rows [i0, i1) x columns [j0, j1) of C on one thread.
template <class Family>
void run_region(const panel_source& a, const panel_source& b, const gemm_problem& p, std::size_t i0, std::size_t i1,
                std::size_t j0, std::size_t j1, gemm_buffers& buffers) {
  using a_type = typename Family::a_type;
  using b_type = typename Family::b_type;
  constexpr std::size_t mr = Family::mr, nr = Family::nr, kc = Family::kc, mc = Family::mc, nc = Family::nc;
  const std::size_t K = p.K;
  const std::size_t depth_max = std::min(kc, K);
  const bool partials_apart = p.beta != 0.0f && K > kc;
  const std::size_t group = partials_apart ? mc : i1 - i0;

  auto* a_packed =
      reinterpret_cast<a_type*>(buffers.a_packed.get(mc / mr * Family::a_panel_size(depth_max) * sizeof(a_type)));
  auto* b_packed =
      reinterpret_cast<b_type*>(buffers.b_packed.get(nc / nr * Family::b_panel_size(depth_max) * sizeof(b_type)));
  int* a_keys = buffers.a_keys.get(mc / mr);
  int* b_keys = buffers.b_keys.get(nc / nr);
  float* staging = buffers.staging.get(std::max(staging_floats(mr, mc, depth_max), staging_floats(nr, nc, depth_max)));
  float* partials = partials_apart ? buffers.partials.get(mc * nc) : nullptr;
  float* a_float = nullptr;  // float copies for fallback tiles, allocated at the first one
  float* b_float = nullptr;

  typename Family::context context;
  alignas(64) float edge_partial[mr * nr];
  alignas(64) float edge_out[mr * nr];

  for (std::size_t jc = j0; jc < j1; jc += nc) {
    const std::size_t nb = std::min(nc, j1 - jc);
    for (std::size_t ig = i0; ig < i1; ig += group) {
      const std::size_t ig_end = std::min(i1, ig + group);
      for (std::size_t pc = 0; pc < K; pc += kc) {
        const std::size_t depth = std::min(kc, K - pc);
        const bool first = pc == 0, last = pc + depth == K;
        Family::pack_b(b, jc, nb, pc, depth, b_packed, b_keys, staging, p.decode_path);
        bool b_float_packed = false;
        for (std::size_t ic = ig; ic < ig_end; ic += mc) {
          const std::size_t mb = std::min(mc, ig_end - ic);
          Family::pack_a(a, ic, mb, pc, depth, a_packed, a_keys, staging, p.decode_path);
          bool a_float_packed = false;
          for (std::size_t jr = 0; jr < nb; jr += nr) {
            const std::size_t cols = std::min(nr, nb - jr);
            for (std::size_t ir = 0; ir < mb; ir += mr) {
              const std::size_t rows = std::min(mr, mb - ir);
              const std::size_t i = ic + ir, j = jc + jr;
              // The next tile's rows of C (or of the running sums) arrive while this one computes:
              // the kernel reads them first thing, and C is far too large for the caches.
              if (ir + mr < mb) {
                const float* next =
                    partials_apart && !last ? partials + (i + mr - ig) * nc + (j - jc) : p.C + (i + mr) * p.ldc + j;
                const std::size_t next_ld = partials_apart && !last ? nc : p.ldc;
                for (std::size_t r = 0; r < std::min(mr, mb - ir - mr); ++r) {
                  for (std::size_t c = 0; c < cols; c += 16) prefetch_for_writing(next + r * next_ld + c);
                }
              }
              // Where the running sums live between K blocks, and where this block's result goes.
              float* store = partials_apart ? partials + (i - ig) * nc + (j - jc) : p.C + i * p.ldc + j;
              const std::size_t store_ld = partials_apart ? nc : p.ldc;
              tile_io io;
              io.partial = first ? nullptr : store;
              io.partial_ld = store_ld;
              io.out = last ? p.C + i * p.ldc + j : store;
              io.out_ld = last ? p.ldc : store_ld;
              io.final = last;
              io.factor = p.factor;
              io.beta = p.beta;
              // Edge tiles run on local copies padded to mr x nr.
              const bool edge = rows < mr || cols < nr;
              float* const real_out = io.out;
              const std::size_t real_out_ld = io.out_ld;
              if (edge) {
                if (io.partial != nullptr) {
                  std::fill(edge_partial, edge_partial + mr * nr, 0.0f);
                  for (std::size_t r = 0; r < rows; ++r)
                    std::copy_n(io.partial + r * store_ld, cols, edge_partial + r * nr);
                  io.partial = edge_partial;
                  io.partial_ld = nr;
                }
                std::fill(edge_out, edge_out + mr * nr, 0.0f);
                if (io.final && io.beta != 0.0f) {
                  for (std::size_t r = 0; r < rows; ++r)
                    std::copy_n(real_out + r * real_out_ld, cols, edge_out + r * nr);
                }
                io.out = edge_out;
                io.out_ld = nr;
              }
              const a_type* a_panel = a_packed + ir / mr * Family::a_panel_size(depth);
              const b_type* b_panel = b_packed + jr / nr * Family::b_panel_size(depth);
              if constexpr (Family::has_fallback) {
                // The flushing instruction only where it cannot flush (sources.hpp, "keys"; the
                // tile itself checks the running sums), else the same order in float FMAs.
                const bool ran = keys_allow_flushing_kernel(a_keys[ir / mr], b_keys[jr / nr]) &&
                                 Family::tile(context, depth, a_panel, b_panel, io);
                if (!ran) {
                  if (a_float == nullptr) {
                    a_float = buffers.a_float.get(mc * depth_max);
                    b_float = buffers.b_float.get(nc * depth_max);
                  }
                  if (!a_float_packed) {
                    pack_float_panels<mr>(a, ic, mb, pc, depth, Family::float_order, a_float, staging, p.decode_path);
                    a_float_packed = true;
                  }
                  if (!b_float_packed) {
                    pack_float_panels<nr>(b, jc, nb, pc, depth, Family::float_order, b_float, staging, p.decode_path);
                    b_float_packed = true;
                  }
                  Family::fallback_tile(depth, a_float + ir * depth, b_float + jr * depth, io);
                }
              } else {
                Family::tile(context, depth, a_panel, b_panel, io);
              }
              if (edge) {
                for (std::size_t r = 0; r < rows; ++r) std::copy_n(edge_out + r * nr, cols, real_out + r * real_out_ld);
              }
            }
          }
        }
      }
    }
  }
}

// Splits C over up to `threads` threads (the caller's included) in ranges of whole tiles
// (detail/parallel.hpp, grain 1 tile) and runs run_region on each, with the float environment of
// environment.hpp on every thread.  Each thread packs into its own thread_local buffers; a
// helper thread's are freed when it ends, and a range that ran on the caller's thread because a
// helper could not start uses the caller's.  Ranges have ceil(tiles / threads) tiles each but
// the last: the largest range, which sets the time, is as small as any split into that many
// ranges allows, and no split can change a result (every C element is computed by one thread,
// in the same order, whatever the split).
template <class Family>
void run_threads(const panel_source& a, const panel_source& b, const gemm_problem& p, std::size_t M, std::size_t N,
                 unsigned threads) {
  const std::size_t row_tiles = (M + Family::mr - 1) / Family::mr, column_tiles = (N + Family::nr - 1) / Family::nr;
  const bool split_rows = row_tiles >= column_tiles;
  const std::size_t tiles = split_rows ? row_tiles : column_tiles, tile = split_rows ? Family::mr : Family::nr;
  const std::size_t extent = split_rows ? M : N;
  run_chunks(split_work(tiles, threads, 1, 1), [&](std::size_t, std::size_t first, std::size_t last) {
    const float_environment environment;
    const std::size_t begin = std::min(extent, first * tile), end = std::min(extent, last * tile);
    if (begin == end) return;
    if (split_rows) {
      run_region<Family>(a, b, p, begin, end, 0, N, thread_buffers());
    } else {
      run_region<Family>(a, b, p, 0, M, begin, end, thread_buffers());
    }
  });
}

// Every family that run_on_path runs in this build; X(family).  The compiled mode
// (docs/design.md) builds their drivers once, in src/compiled/gemm.cpp, and declares them extern
// here, before run_on_path (which every file that includes gemm.hpp instantiates) names them.
#if MIXPREC_X86_SIMD && MIXPREC_AMX_HARDWARE
#define MIXPREC_GEMM_AMX_HARDWARE_FAMILY(X) X(amx_family<hardware_tiles>)
#else
#define MIXPREC_GEMM_AMX_HARDWARE_FAMILY(X)
#endif
// clang-format off
#if MIXPREC_X86_SIMD
#define MIXPREC_GEMM_FOR_EACH_FAMILY(X)                                               \
  X(portable_family<k_order::sequential>) X(portable_family<k_order::pairs_swapped>)  \
  X(avx2_family<k_order::sequential>) X(avx2_family<k_order::pairs_swapped>)          \
  X(avx512_family<k_order::sequential>) X(avx512_family<k_order::pairs_swapped>)      \
  X(pair_family) X(amx_family<emulated_tiles>) MIXPREC_GEMM_AMX_HARDWARE_FAMILY(X)
#else
#define MIXPREC_GEMM_FOR_EACH_FAMILY(X)                                               \
  X(portable_family<k_order::sequential>) X(portable_family<k_order::pairs_swapped>)  \
  X(amx_family<emulated_tiles>)
#endif
// clang-format on
#define MIXPREC_GEMM_INSTANTIATION_OF(EXTERN, FAMILY)                                                                  \
  EXTERN template void run_threads<FAMILY>(const panel_source&, const panel_source&, const gemm_problem&, std::size_t, \
                                           std::size_t, unsigned);
#define MIXPREC_GEMM_EXTERN_INSTANTIATION_OF(FAMILY) MIXPREC_GEMM_INSTANTIATION_OF(extern, FAMILY)
#define MIXPREC_GEMM_DEFINE_INSTANTIATION_OF(FAMILY) MIXPREC_GEMM_INSTANTIATION_OF(, FAMILY)
#if defined(MIXPREC_COMPILED)
MIXPREC_GEMM_FOR_EACH_FAMILY(MIXPREC_GEMM_EXTERN_INSTANTIATION_OF)
#endif

// The float family of a path in the order the operands ask for.
template <template <k_order> class Family>
void run_float_family(bool pairs, const panel_source& a, const panel_source& b, const gemm_problem& p, std::size_t M,
                      std::size_t N, unsigned threads) {
  if (pairs) return run_threads<Family<k_order::pairs_swapped>>(a, b, p, M, N, threads);
  run_threads<Family<k_order::sequential>>(a, b, p, M, N, threads);
}

// The family each path runs for this pair of sources: the flushing bf16 kernels only when both
// operands are exact in bfloat16; the float kernels sum such operands in vdpbf16ps's pair order
// so that every non-AMX path gives the same bits.
inline void run_on_path(gemm_path path, const panel_source& a, const panel_source& b, const gemm_problem& p,
                        std::size_t M, std::size_t N, unsigned threads) {
  const bool bf16_operands = a.exact_in_bfloat16() && b.exact_in_bfloat16();
#if MIXPREC_X86_SIMD
  switch (path) {
    case gemm_path::avx2:
      return run_float_family<avx2_family>(bf16_operands, a, b, p, M, N, threads);
    case gemm_path::avx512:
      return run_float_family<avx512_family>(bf16_operands, a, b, p, M, N, threads);
    case gemm_path::avx512_bf16:
      if (bf16_operands) return run_threads<pair_family>(a, b, p, M, N, threads);
      return run_float_family<avx512_family>(false, a, b, p, M, N, threads);
    case gemm_path::amx_bf16:
#if MIXPREC_AMX_HARDWARE
      if (bf16_operands) return run_threads<amx_family<hardware_tiles>>(a, b, p, M, N, threads);
#endif
      return run_float_family<avx512_family>(bf16_operands, a, b, p, M, N, threads);
    case gemm_path::amx_bf16_emulated:
      if (bf16_operands) return run_threads<amx_family<emulated_tiles>>(a, b, p, M, N, threads);
      if (simd_path_supported(simd_path::avx512)) return run_float_family<avx512_family>(false, a, b, p, M, N, threads);
      if (simd_path_supported(simd_path::avx2)) return run_float_family<avx2_family>(false, a, b, p, M, N, threads);
      return run_float_family<portable_family>(false, a, b, p, M, N, threads);
    default:
      return run_float_family<portable_family>(bf16_operands, a, b, p, M, N, threads);
  }
#else
  if (bf16_operands && path == gemm_path::amx_bf16_emulated) {
    return run_threads<amx_family<emulated_tiles>>(a, b, p, M, N, threads);
  }
  run_float_family<portable_family>(bf16_operands, a, b, p, M, N, threads);
#endif
}

// The bulk conversion kernels a path's sources decode with.
inline simd_path decode_path_for(gemm_path path) {
  switch (path) {
    case gemm_path::portable:
      return simd_path::portable;
    case gemm_path::avx2:
      return simd_path::avx2;
    case gemm_path::avx512:
    case gemm_path::avx512_bf16:
    case gemm_path::amx_bf16:
      return simd_path::avx512;
    default:
      return best_simd_path() == simd_path::avx512_bf16 ? simd_path::avx512 : best_simd_path();
  }
}

}  // namespace mixprec::detail
