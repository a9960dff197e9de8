// The AMX micro-kernel: a 32 x 32 tile of C as 2 x 2 accumulator tiles of 16 x 16 floats,
// computed with TDPBF16PS over chunks of 32 k, on either tile backend (amx_tiles.hpp).
//
//   tiles 0-3: C (16 rows x 64 bytes)     0 = rows 0-15 / cols 0-15, 1 = rows 0-15 / cols 16-31,
//                                         2 = rows 16-31 / cols 0-15, 3 = rows 16-31 / cols 16-31
//   tiles 4-5: A (16 rows x 32 bf16)      rows 0-15 and 16-31 of the chunk
//   tiles 6-7: B (16 pair lines x 16)     columns 0-15 and 16-31 of the chunk
//
// Packed A (packing.hpp, pack_row_panels): per chunk, 32 rows of 32 bf16 (row r, k = 32c + kk at
// element (c * 32 + r) * 32 + kk).  Packed B: per chunk, 16 lines of 32 pair words (the
// vdpbf16ps layout with NR = 32).  Depth is padded with zeros to whole chunks; a zero pair adds
// +0 to a chain that is never -0 (it starts at +0 and an exact cancellation gives +0), so the
// padding does not change a bit.
//
// Order (TDPBF16PS, amx_tiles.hpp): for each chunk of 32 k, per C element, one fma chain over
// the 16 even k and one over the 16 odd k (each from +0, in increasing k), then
// sum += (even + odd).  As with vdpbf16ps, the tile runs here only when DAZ and FTZ cannot act
// (packing keys, partial sums zero or >= 2^-103); otherwise run() returns false and the caller
// computes the same order without flushing (amx_order_tile).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "amx_tiles.hpp"
#include "tile.hpp"

namespace mixprec::detail {

struct amx_shape {
  static constexpr std::size_t mr = 32;
  static constexpr std::size_t nr = 32;
  static constexpr std::size_t chunk = 32;  // k per TDPBF16PS (16 pairs)

  static tile_config config() noexcept {
    tile_config c;
    c.palette_id = 1;
    for (int t = 0; t < 8; ++t) {
      c.rows[t] = 16;
      c.colsb[t] = 64;
    }
    return c;
  }
};

// Zero, or |x| >= 2^-103 (exponent field >= 24: a multiple of 2^-126), or inf / NaN.
inline bool continues_exactly(float x) noexcept {
  const std::uint32_t magnitude = bit_cast<std::uint32_t>(x) & 0x7FFFFFFFu;
  return magnitude == 0 || magnitude >= (24u << 23);
}

// Copies an MR x NR tile of partial sums (row stride ld) into `sums` (row stride 32); false if
// one of them is not continued exactly by the flushing instructions.
// (Both loops are branch-free per element, so that the compiler vectorises them: with a
// short-circuit test and the epilogue's branches inside, they were scalar, about a tenth of a
// bf16 training step on an AMX machine.)
inline bool load_partials(const float* partial, std::size_t ld, float (&sums)[32][32]) noexcept {
  unsigned exact = 1;
  for (std::size_t i = 0; i < 32; ++i) {
    for (std::size_t j = 0; j < 32; ++j) {
      sums[i][j] = partial[i * ld + j];
      exact &= static_cast<unsigned>(continues_exactly(sums[i][j]));
    }
  }
  return exact != 0;
}

// finish_element on every element, its cases decided once per tile.
MIXPREC_FORCE_INLINE void store_tile(const float (&sums)[32][32], const tile_io& io) noexcept {
  for (std::size_t i = 0; i < 32; ++i) {
    float* out = io.out + i * io.out_ld;
    if (!io.final) {
      for (std::size_t j = 0; j < 32; ++j) out[j] = sums[i][j];
    } else if (io.beta == 0.0f) {
      for (std::size_t j = 0; j < 32; ++j) out[j] = io.factor * sums[i][j];
    } else {
      for (std::size_t j = 0; j < 32; ++j) out[j] = finish_element(sums[i][j], out[j], io);
    }
  }
}

// The same order as amx_tile without DAZ or FTZ (every product exact, every sum rounded once
// to nearest even), on float micro-panels: A as depth lines of 32 floats, B as depth lines of 32
// floats (packing.hpp, pack_float_panels, sequential order).  For tiles the instruction must
// not see (subnormal bf16 operands, which the instruction flushes); plain C++.
MIXPREC_FORCE_INLINE void amx_order_tile(std::size_t depth, const float* a, const float* b, const tile_io& io) {
  alignas(64) float sums[32][32];
  if (io.partial != nullptr) {
    for (std::size_t i = 0; i < 32; ++i) std::memcpy(sums[i], io.partial + i * io.partial_ld, sizeof(sums[i]));
  } else {
    std::memset(sums, 0, sizeof(sums));
  }
  for (std::size_t k0 = 0; k0 < depth; k0 += amx_shape::chunk) {
    const std::size_t k1 = depth - k0 < amx_shape::chunk ? depth : k0 + amx_shape::chunk;
    for (std::size_t i = 0; i < 32; ++i) {
      float even[32] = {}, odd[32] = {};
      for (std::size_t k = k0; k < k1; ++k) {
        float* chain = (k - k0) % 2 == 0 ? even : odd;
        const float element = a[k * 32 + i];
        for (std::size_t j = 0; j < 32; ++j) chain[j] = std::fma(element, b[k * 32 + j], chain[j]);
      }
      for (std::size_t j = 0; j < 32; ++j) sums[i][j] = sums[i][j] + (even[j] + odd[j]);
    }
  }
  store_tile(sums, io);
}

#if MIXPREC_AMX_HARDWARE
// store_tile and amx_order_tile where the CPU has FMA (every CPU with AMX has), for the hardware
// tiles: std::fma becomes the instruction and the row loops vectorise.  As a libm call per
// element, the beta != 0 epilogue and the fallback tile were about 5 % of a bf16 training step.
// Same bits: fma is fma.
MIXPREC_TARGET_BEGIN("avx2,fma")
inline void store_tile_fma(const float (&sums)[32][32], const tile_io& io) noexcept { store_tile(sums, io); }
inline void amx_order_tile_fma(std::size_t depth, const float* a, const float* b, const tile_io& io) {
  amx_order_tile(depth, a, b, io);
}
MIXPREC_TARGET_END
#endif

template <class Tiles>
bool amx_tile(Tiles& tiles, std::size_t chunks, const std::uint16_t* a, const std::uint32_t* b, const tile_io& io) {
  alignas(64) float sums[32][32];
  constexpr std::size_t sum_stride = sizeof(sums[0]);
  if (io.partial != nullptr) {
    if (!load_partials(io.partial, io.partial_ld, sums)) return false;
    tiles.template load<0>(&sums[0][0], sum_stride);
    tiles.template load<1>(&sums[0][16], sum_stride);
    tiles.template load<2>(&sums[16][0], sum_stride);
    tiles.template load<3>(&sums[16][16], sum_stride);
  } else {
    tiles.template zero<0>();
    tiles.template zero<1>();
    tiles.template zero<2>();
    tiles.template zero<3>();
  }
  tiles.dot_chunks(chunks, a, b);
  tiles.template store<0>(&sums[0][0], sum_stride);
  tiles.template store<1>(&sums[0][16], sum_stride);
  tiles.template store<2>(&sums[16][0], sum_stride);
  tiles.template store<3>(&sums[16][16], sum_stride);
#if MIXPREC_AMX_HARDWARE
  if constexpr (std::is_same<Tiles, hardware_tiles>::value) {
    store_tile_fma(sums, io);
    return true;
  }
#endif
  store_tile(sums, io);
  return true;
}

}  // namespace mixprec::detail
