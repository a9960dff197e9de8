// Packing: a block of an operand, read through its panel source (sources.hpp) in float, laid
// out as the micro-kernels read it.  A block of `rows` rows becomes ceil(rows / R) micro-panels
// of R rows (rows past the end are zeros), each covering the block's depth:
//
//   float panels  depth lines of R floats                 the float kernels (both operands);
//                                                         line order sequential or pairs_swapped
//   pair panels   pair_lines lines of R 32-bit words      vdpbf16ps (both operands), AMX's B:
//                 (bf16 of k = 2j low, k = 2j + 1 high)
//   row panels    per chunk of 32 k: R rows of 32 bf16    AMX's A
//
// The bf16 layouts are written from the float values by keeping their high 16 bits, exact for a
// source whose values are bfloat16 values (what exact_in_bfloat16 promises).  Each bf16
// micro-panel also gets a key (sources.hpp): the source's smallest_key where that bounds every
// value, else the smallest key of the panel's codes, scanned after packing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../bulk/simd_path.hpp"
#include "../../detail/bits.hpp"
#include "kernels_x86.hpp"
#include "sources.hpp"

namespace mixprec::detail {

enum class k_order {
  sequential,     // k = 0, 1, 2, ...
  pairs_swapped,  // k = 1, 0, 3, 2, ... (vdpbf16ps's order within a pair; an odd last k stays last)
};

// How a block is read.  A source whose rows are adjacent in memory (rows_contiguous(): B
// stored K x N, A stored transposed) is read a few k at a time across the whole block, in long
// runs; one stored along K is read a chunk of rows at a time across the whole depth, runs along k
// transposed by the source.  Either way the writers get staged lines: line i is depth d0 + i, the
// value of block row first + r at staged[i * width + r].
constexpr std::size_t staging_rows(std::size_t r) noexcept { return r * ((64 + r - 1) / r); }
constexpr std::size_t lines_at_once = 32;  // k per read of a rows_contiguous source (AMX chunks need 32)

// Floats of staging for blocks of at most `rows` rows in panels of R, depth at most `depth`.
constexpr std::size_t staging_floats(std::size_t r, std::size_t rows, std::size_t depth) noexcept {
  return staging_rows(r) * depth > lines_at_once * rows ? staging_rows(r) * depth : lines_at_once * rows;
}

// Calls write(panel, first, valid, staged, width, d0, lines) until every panel of rows
// [row, row + rows) has had every line of [0, depth); `group` lines at a time (a multiple of 2,
// at most lines_at_once) for rows_contiguous sources.
template <std::size_t R, class Write>
void for_each_staged(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                     std::size_t group, float* staging, simd_path path, Write write) {
  if (source.rows_contiguous()) {
    for (std::size_t d0 = 0; d0 < depth; d0 += group) {
      const std::size_t lines = std::min(group, depth - d0);
      source.read(row, rows, k + d0, lines, staging, path);
      for (std::size_t p = 0; p < rows; p += R) write(p / R, p, std::min(R, rows - p), staging, rows, d0, lines);
    }
    return;
  }
  constexpr std::size_t chunk = staging_rows(R);
  for (std::size_t r0 = 0; r0 < rows; r0 += chunk) {
    const std::size_t n = std::min(chunk, rows - r0);
    source.read(row + r0, n, k, depth, staging, path);
    for (std::size_t p = 0; p < n; p += R) write((r0 + p) / R, p, std::min(R, n - p), staging, n, 0, depth);
  }
}

template <std::size_t R>
void pack_float_panels(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                       k_order order, float* out, float* staging, simd_path path) {
  for_each_staged<R>(source, row, rows, k, depth, 2, staging, path,
                     [&](std::size_t panel, std::size_t first, std::size_t valid, const float* staged,
                         std::size_t width, std::size_t d0, std::size_t lines) {
                       float* const to = out + panel * depth * R;
                       for (std::size_t i = 0; i < lines; ++i) {
                         const std::size_t d = d0 + i, partner = d ^ 1;
                         const std::size_t position = order == k_order::pairs_swapped && partner < depth ? partner : d;
                         const float* line = staged + i * width + first;
                         float* slot = to + position * R;
                         // A full line is a copy of constant length, which the compiler inlines as
                         // vector moves; std::copy of a run-time length was a call to memmove
                         // per line of 12 or 32 floats (15 % of an fp32 training step, perf).
                         if (valid == R) {
                           for (std::size_t r = 0; r < R; ++r) slot[r] = line[r];
                         } else {
                           std::copy(line, line + valid, slot);
                           std::fill(slot + valid, slot + R, 0.0f);
                         }
                       }
                     });
}

// One line of pairs of a micro-panel from staged lines `low` and `high` (high null: zeros).
inline void pair_line_plain(const float* low, const float* high, std::size_t valid, std::size_t r_count,
                            std::uint32_t* to) {
  for (std::size_t r = 0; r < r_count; ++r) {
    const float lo = r < valid ? low[r] : 0.0f;
    const float hi = r < valid && high != nullptr ? high[r] : 0.0f;
    to[r] = (bit_cast<std::uint32_t>(hi) & 0xFFFF0000u) | (bit_cast<std::uint32_t>(lo) >> 16);
  }
}

// The keys of `panels` packed bf16 micro-panels of `codes` codes each: the source's bound, or the
// smallest key of each panel's codes (zeros of the padding count as ignored).
inline void panel_keys(const panel_source& source, const std::uint16_t* packed, std::size_t panels, std::size_t codes,
                       int* keys, simd_path path) {
  const int bound = source.smallest_key();
  for (std::size_t p = 0; p < panels; ++p) {
    if (bound != bf16_key_unsafe) {
      keys[p] = bound;
      continue;
    }
    const std::uint16_t* panel = packed + p * codes;
#if MIXPREC_X86_SIMD
    if (path == simd_path::avx512 || path == simd_path::avx512_bf16) {
      keys[p] = gemm_avx512::smallest_bf16_key(panel, codes, bf16_key_ignored, bf16_key_unsafe);
      continue;
    }
#endif
    int key = bf16_key_ignored;
    for (std::size_t i = 0; i < codes; ++i) {
      key = std::min(key, bf16_key(bit_cast<float>(static_cast<std::uint32_t>(panel[i]) << 16)));
    }
    keys[p] = key;
  }
#if !MIXPREC_X86_SIMD
  (void)path;
#endif
}

// pair_lines >= ceil(depth / 2); lines past the depth are zeros.
template <std::size_t R>
void pack_pair_panels(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                      std::size_t pair_lines, std::uint32_t* out, int* keys, float* staging, simd_path path) {
#if MIXPREC_X86_SIMD
  const bool vectors = path == simd_path::avx512 || path == simd_path::avx512_bf16;
#endif
  for_each_staged<R>(source, row, rows, k, depth, 2, staging, path,
                     [&](std::size_t panel, std::size_t first, std::size_t valid, const float* staged,
                         std::size_t width, std::size_t d0, std::size_t lines) {
                       for (std::size_t i = 0; i < lines; i += 2) {  // d0 is even: lines i, i + 1 are k = 2j, 2j + 1
                         const float* low = staged + i * width + first;
                         const float* high = i + 1 < lines ? low + width : nullptr;
                         std::uint32_t* to = out + panel * pair_lines * R + (d0 + i) / 2 * R;
#if MIXPREC_X86_SIMD
                         if (vectors && high != nullptr) {
                           for (std::size_t r0 = 0; r0 < R; r0 += 16) {
                             const std::size_t lanes = std::min<std::size_t>(16, R - r0);
                             const std::size_t loaded = valid > r0 ? std::min(lanes, valid - r0) : 0;
                             gemm_avx512::pair_line(low + r0, high + r0, to + r0, lanes, loaded);
                           }
                           continue;
                         }
#endif
                         pair_line_plain(low, high, valid, R, to);
                       }
                     });
  const std::size_t panels = (rows + R - 1) / R, used_lines = (depth + 1) / 2;
  for (std::size_t p = 0; p < panels; ++p) {
    std::fill(out + (p * pair_lines + used_lines) * R, out + (p + 1) * pair_lines * R, 0u);
  }
  panel_keys(source, reinterpret_cast<const std::uint16_t*>(out), panels, 2 * pair_lines * R, keys, path);
}

// AMX's A: chunks = ceil(depth / 32); per chunk R rows of 32 bf16, zeros past the depth.
template <std::size_t R>
void pack_row_panels(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                     std::size_t chunks, std::uint16_t* out, int* keys, float* staging, simd_path path) {
  constexpr std::size_t chunk = 32;
  const std::size_t panels = (rows + R - 1) / R;
  std::fill(out, out + panels * chunks * R * chunk, std::uint16_t{0});
  std::size_t ld = 0;
  if (const std::uint16_t* codes = source.bfloat16_rows(ld)) {
    // bf16 rows along k: each row's codes of a chunk are one copy, the codes the staged path
    // below writes (a bf16 value read as float keeps its code in the high 16 bits).
    for (std::size_t p = 0; p < panels; ++p) {
      const std::size_t valid = std::min(R, rows - p * R);
      std::uint16_t* const to = out + p * chunks * R * chunk;
      for (std::size_t c = 0; c * chunk < depth; ++c) {
        const std::size_t n = std::min(chunk, depth - c * chunk);
        for (std::size_t r = 0; r < valid; ++r) {
          std::copy_n(codes + (row + p * R + r) * ld + k + c * chunk, n, to + (c * R + r) * chunk);
        }
      }
    }
    panel_keys(source, out, panels, chunks * R * chunk, keys, path);
    return;
  }
  for_each_staged<R>(source, row, rows, k, depth, lines_at_once, staging, path,
                     [&](std::size_t panel, std::size_t first, std::size_t valid, const float* staged,
                         std::size_t width, std::size_t d0, std::size_t lines) {
                       std::uint16_t* const to = out + panel * chunks * R * chunk;
                       for (std::size_t i = 0; i < lines; ++i) {
                         const std::size_t d = d0 + i;
                         const float* line = staged + i * width + first;
                         std::uint16_t* slot = to + d / chunk * R * chunk + d % chunk;
                         for (std::size_t r = 0; r < valid; ++r) {
                           slot[r * chunk] = static_cast<std::uint16_t>(bit_cast<std::uint32_t>(line[r]) >> 16);
                         }
                       }
                     });
  panel_keys(source, out, panels, chunks * R * chunk, keys, path);
}

}  // namespace mixprec::detail
