// Kernel families: a micro-kernel with its blocking, its packed layouts and, for the kernels on
// flushing instructions (vdpbf16ps, TDPBF16PS), the float kernel that computes their order
// exactly where they must not run.  The driver (driver.hpp) is written once against this
// interface:
//
//   mr, nr                 micro-tile of C;  kc, mc, nc  cache blocking (docs/gemm.md, "Blocking")
//   a_type, b_type         packed element types;  a_panel_size(depth), b_panel_size(depth)
//   pack_a, pack_b         a block of op(A) / op(B)^T through its source, with bf16 keys
//   context                per-thread state (the tile registers for AMX)
//   tile(ctx, depth, a, b, io)        one tile; false: it must not run on these values
//   has_fallback, float_order, fallback_tile(depth, a, b, io)
//                          the exact float kernel on float panels (pack_float_panels, float_order)
//
// Blocking (Zen 5 here: 48 KiB L1d, 1 MiB L2 per core): a B micro-panel (kc x nr) stays in L1
// while the A micro-panels of an mc x kc block stream from L2; the kc x nc B panel lives in L3.
// kc is even (pairs never straddle blocks) and, for AMX, a multiple of 32 (chunks start at
// multiples of 32 of the whole K).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "amx_kernel.hpp"
#include "kernel_portable.hpp"
#include "kernels_x86.hpp"
#include "packing.hpp"
#include "sources.hpp"
#include "tile.hpp"

namespace mixprec::detail {

struct no_context {};

template <class Tile, std::size_t KC, std::size_t MC, std::size_t NC, k_order Order>
struct float_family {
  static constexpr std::size_t mr = Tile::mr, nr = Tile::nr, kc = KC, mc = MC, nc = NC;
  static_assert(kc % 32 == 0 && mc % mr == 0 && nc % nr == 0, "blocks of whole tiles and pairs");
  static constexpr bool has_fallback = false;
  static constexpr k_order float_order = Order;
  using a_type = float;
  using b_type = float;
  using context = no_context;

  static std::size_t a_panel_size(std::size_t depth) noexcept { return depth * mr; }
  static std::size_t b_panel_size(std::size_t depth) noexcept { return depth * nr; }
  static void pack_a(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                     float* out, int*, float* staging, simd_path path) {
    pack_float_panels<mr>(source, row, rows, k, depth, Order, out, staging, path);
  }
  static void pack_b(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                     float* out, int*, float* staging, simd_path path) {
    pack_float_panels<nr>(source, row, rows, k, depth, Order, out, staging, path);
  }
  static bool tile(context&, std::size_t depth, const float* a, const float* b, const tile_io& io) {
    Tile::run(depth, a, b, io);
    return true;
  }
  static void fallback_tile(std::size_t, const float*, const float*, const tile_io&) {}
};

template <k_order Order>
using portable_family = float_family<gemm_portable::tile, 256, 128, 2048, Order>;

#if MIXPREC_X86_SIMD
template <k_order Order>
using avx2_family = float_family<gemm_avx2::tile, 256, 144, 2048, Order>;
template <k_order Order>
using avx512_family = float_family<gemm_avx512::tile, 256, 240, 2048, Order>;

// vdpbf16ps on pair panels; where it must not run, the AVX-512 float kernel on panels in
// pairs_swapped order (the instruction's order).
struct pair_family {
  using pair_tile = gemm_avx512_bf16::tile;
  using float_tile = gemm_avx512::tile;
  static constexpr std::size_t mr = pair_tile::mr, nr = pair_tile::nr, kc = 512, mc = 240, nc = 2048;
  static_assert(mc % mr == 0 && nc % nr == 0 && float_tile::mr == mr && float_tile::nr == nr, "one tile shape");
  static constexpr bool has_fallback = true;
  static constexpr k_order float_order = k_order::pairs_swapped;
  using a_type = std::uint32_t;
  using b_type = std::uint32_t;
  using context = no_context;

  static std::size_t pair_lines(std::size_t depth) noexcept { return (depth + 1) / 2; }
  static std::size_t a_panel_size(std::size_t depth) noexcept { return pair_lines(depth) * mr; }
  static std::size_t b_panel_size(std::size_t depth) noexcept { return pair_lines(depth) * nr; }
  static void pack_a(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                     std::uint32_t* out, int* keys, float* staging, simd_path path) {
    pack_pair_panels<mr>(source, row, rows, k, depth, pair_lines(depth), out, keys, staging, path);
  }
  static void pack_b(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                     std::uint32_t* out, int* keys, float* staging, simd_path path) {
    pack_pair_panels<nr>(source, row, rows, k, depth, pair_lines(depth), out, keys, staging, path);
  }
  static bool tile(context&, std::size_t depth, const std::uint32_t* a, const std::uint32_t* b, const tile_io& io) {
    return pair_tile::run(pair_lines(depth), a, b, io);
  }
  static void fallback_tile(std::size_t depth, const float* a, const float* b, const tile_io& io) {
    float_tile::run(depth, a, b, io);
  }
};
#endif

// TDPBF16PS on 32 x 32 tiles (Tiles: emulated_tiles or hardware_tiles); where it must not run,
// amx_order_tile on float panels.
template <class Tiles>
struct amx_family {
  static constexpr std::size_t mr = amx_shape::mr, nr = amx_shape::nr, kc = 512, mc = 256, nc = 2048;
  static_assert(kc % amx_shape::chunk == 0 && mc % mr == 0 && nc % nr == 0, "blocks of whole tiles and chunks");
  static constexpr bool has_fallback = true;
  static constexpr k_order float_order = k_order::sequential;
  using a_type = std::uint16_t;
  using b_type = std::uint32_t;

  // The tile registers of one thread: configured for the kernel's shapes, released at the end.
  struct context {
    Tiles tiles;
    context() { tiles.configure(amx_shape::config()); }
    ~context() { tiles.release(); }
    context(const context&) = delete;
    context& operator=(const context&) = delete;
  };

  static std::size_t chunks(std::size_t depth) noexcept { return (depth + amx_shape::chunk - 1) / amx_shape::chunk; }
  static std::size_t a_panel_size(std::size_t depth) noexcept { return chunks(depth) * mr * amx_shape::chunk; }
  static std::size_t b_panel_size(std::size_t depth) noexcept { return chunks(depth) * (amx_shape::chunk / 2) * nr; }
  static void pack_a(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                     std::uint16_t* out, int* keys, float* staging, simd_path path) {
    pack_row_panels<mr>(source, row, rows, k, depth, chunks(depth), out, keys, staging, path);
  }
  static void pack_b(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                     std::uint32_t* out, int* keys, float* staging, simd_path path) {
    pack_pair_panels<nr>(source, row, rows, k, depth, chunks(depth) * (amx_shape::chunk / 2), out, keys, staging, path);
  }
  static bool tile(context& ctx, std::size_t depth, const std::uint16_t* a, const std::uint32_t* b, const tile_io& io) {
    return amx_tile(ctx.tiles, chunks(depth), a, b, io);
  }
  static void fallback_tile(std::size_t depth, const float* a, const float* b, const tile_io& io) {
#if MIXPREC_AMX_HARDWARE
    if constexpr (std::is_same<Tiles, hardware_tiles>::value) return amx_order_tile_fma(depth, a, b, io);
#endif
    amx_order_tile(depth, a, b, io);
  }
};

}  // namespace mixprec::detail
