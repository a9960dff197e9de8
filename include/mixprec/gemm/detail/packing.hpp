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

// One line of pairs for every micro-panel of R words, from bf16 codes of k = 2j (low) and
// 2j + 1 (high; null: zeros): word r of panel p, at out[p * panel_stride + r], is
// high[p * R + r] << 16 | low[p * R + r] for p * R + r < rows, zero past them.  The words
// pair_line_plain writes from those codes' float values.
template <std::size_t R>
void pair_line_codes(const std::uint16_t* low, const std::uint16_t* high, std::size_t rows, std::uint32_t* out,
                     std::size_t panel_stride, simd_path path) {
#if MIXPREC_X86_SIMD
  if (high != nullptr && (path == simd_path::avx512 || path == simd_path::avx512_bf16)) {
    gemm_avx512::pair_codes<R>(low, high, rows, out, panel_stride);
    return;
  }
#else
  (void)path;
#endif
  for (std::size_t p = 0; p * R < rows; ++p) {
    for (std::size_t r = 0; r < R; ++r) {
      const std::size_t i = p * R + r;
      const std::uint32_t lo = i < rows ? low[i] : 0u, hi = i < rows && high != nullptr ? high[i] : 0u;
      out[p * panel_stride + r] = hi << 16 | lo;
    }
  }
}

// Pair panels (layout above) straight from a bf16 source's codes (sources.hpp, bfloat16_codes).
// Stored along k, a pair is one 32-bit word of the source, so a panel is a transpose of words;
// stored across k, a line of pairs interleaves two lines of codes, read across the whole block
// (runs of `rows` codes, as for_each_staged reads such a source).
template <std::size_t R>
void pack_pair_codes(const std::uint16_t* codes, std::size_t ld, bool depth_contiguous, std::size_t row,
                     std::size_t rows, std::size_t k, std::size_t depth, std::size_t pair_lines, std::uint32_t* out,
                     simd_path path) {
  const std::size_t panels = (rows + R - 1) / R, pairs = depth / 2;
  if (!depth_contiguous) {
    for (std::size_t j = 0; j < (depth + 1) / 2; ++j) {
      const std::uint16_t* low = codes + (k + 2 * j) * ld + row;
      pair_line_codes<R>(low, 2 * j + 1 < depth ? low + ld : nullptr, rows, out + j * R, pair_lines * R, path);
    }
    return;
  }
  for (std::size_t p = 0; p < panels; ++p) {
    const std::size_t first = row + p * R, valid = std::min(R, rows - p * R);
    std::uint32_t* const to = out + p * pair_lines * R;
    transpose_words(reinterpret_cast<const unsigned char*>(codes + first * ld + k), 2 * ld, valid, pairs,
                    reinterpret_cast<unsigned char*>(to), 4 * R, path);
    if (depth % 2 != 0) {
      for (std::size_t r = 0; r < valid; ++r) to[pairs * R + r] = codes[(first + r) * ld + k + depth - 1];
    }
    for (std::size_t j = 0; j < (depth + 1) / 2 && valid < R; ++j) std::fill(to + j * R + valid, to + (j + 1) * R, 0u);
  }
}

// Pair panels from a source's bf16 reader (sources.hpp, read_bfloat16) through `staging`, which
// then holds codes: a few k at a time across the whole block for a rows_contiguous source, else
// a chunk of rows at a time across the whole depth (each row's codes then start on a 32-bit word,
// so that pack_pair_codes moves pairs as words).  The same words as reading floats and keeping
// their high halves, without the floats.  False, with nothing written, where the source has no
// such reader.
template <std::size_t R>
bool pack_pair_decoded(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                       std::size_t pair_lines, std::uint32_t* out, std::uint16_t* staging, simd_path path) {
  if (source.rows_contiguous()) {
    constexpr std::size_t group = 2;  // one line of pairs: 2 × rows codes, in L1
    for (std::size_t d0 = 0; d0 < depth; d0 += group) {
      const std::size_t lines = std::min(group, depth - d0);
      if (!source.read_bfloat16(row, rows, k + d0, lines, staging, rows, path)) return false;
      pack_pair_codes<R>(staging, rows, false, 0, rows, 0, lines, pair_lines, out + d0 / 2 * R, path);
    }
    return true;
  }
  constexpr std::size_t chunk = staging_rows(R);
  const std::size_t ld = depth + depth % 2;
  for (std::size_t r0 = 0; r0 < rows; r0 += chunk) {
    const std::size_t n = std::min(chunk, rows - r0);
    if (!source.read_bfloat16(row + r0, n, k, depth, staging, ld, path)) return false;
    pack_pair_codes<R>(staging, ld, true, 0, n, 0, depth, pair_lines, out + r0 / R * pair_lines * R, path);
  }
  return true;
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
  std::size_t ld = 0;
  bool depth_contiguous = false;
#if MIXPREC_X86_SIMD
  const bool vectors = path == simd_path::avx512 || path == simd_path::avx512_bf16;
#endif
  if (const std::uint16_t* codes = source.bfloat16_codes(ld, depth_contiguous)) {
    pack_pair_codes<R>(codes, ld, depth_contiguous, row, rows, k, depth, pair_lines, out, path);
  } else if (!pack_pair_decoded<R>(source, row, rows, k, depth, pair_lines, out,
                                   reinterpret_cast<std::uint16_t*>(staging), path)) {
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
  }
  const std::size_t panels = (rows + R - 1) / R, used_lines = (depth + 1) / 2;
  for (std::size_t p = 0; p < panels; ++p) {
    std::fill(out + (p * pair_lines + used_lines) * R, out + (p + 1) * pair_lines * R, 0u);
  }
  panel_keys(source, reinterpret_cast<const std::uint16_t*>(out), panels, 2 * pair_lines * R, keys, path);
}

// AMX's A: chunks = ceil(depth / 32); per chunk R rows of 32 bf16, zeros past the depth and
// past the block's last row.  Only those zeros are written as such (a fill of the whole buffer
// was 2.7 % of a bf16 training step, perf); a bf16 source stored along k is copied a chunk row at
// a time with a copy of constant length (std::copy_n of a run-time length was a memmove call per
// row of 32 codes, another 2.9 %).
template <std::size_t R>
void pack_row_panels(const panel_source& source, std::size_t row, std::size_t rows, std::size_t k, std::size_t depth,
                     std::size_t chunks, std::uint16_t* out, int* keys, float* staging, simd_path path) {
  constexpr std::size_t chunk = 32;
  const std::size_t panels = (rows + R - 1) / R, tail = depth % chunk;
  for (std::size_t p = 0; p < panels; ++p) {
    const std::size_t valid = std::min(R, rows - p * R);
    std::uint16_t* const to = out + p * chunks * R * chunk;
    for (std::size_t c = 0; c < chunks; ++c) {
      std::fill(to + (c * R + valid) * chunk, to + (c + 1) * R * chunk, std::uint16_t{0});
    }
    if (tail != 0) {
      for (std::size_t r = 0; r < valid; ++r) {
        std::uint16_t* const last = to + ((chunks - 1) * R + r) * chunk;
        std::fill(last + tail, last + chunk, std::uint16_t{0});
      }
    }
  }
  std::size_t ld = 0;
  bool depth_contiguous = false;
  if (const std::uint16_t* codes = source.bfloat16_codes(ld, depth_contiguous)) {
    // bf16 codes: the codes the staged path below writes (a bf16 value read as float keeps its
    // code in the high 16 bits).  Stored along k, each row's codes of a chunk are one copy;
    // stored across k, a chunk is 16 lines of pairs (pair panels' layout), transposed as words.
    for (std::size_t p = 0; p < panels; ++p) {
      const std::size_t first = row + p * R, valid = std::min(R, rows - p * R);
      std::uint16_t* const to = out + p * chunks * R * chunk;
      for (std::size_t c = 0; c * chunk < depth; ++c) {
        const std::size_t n = std::min(chunk, depth - c * chunk);
        if (depth_contiguous) {
          for (std::size_t r = 0; r < valid; ++r) {
            const std::uint16_t* const from = codes + (first + r) * ld + k + c * chunk;
            std::uint16_t* const slot = to + (c * R + r) * chunk;
            if (n == chunk) {
              for (std::size_t kk = 0; kk < chunk; ++kk) slot[kk] = from[kk];
            } else {
              std::copy(from, from + n, slot);
            }
          }
        } else {
          alignas(64) std::uint32_t lines[chunk / 2][R];
          for (std::size_t j = 0; j < chunk / 2; ++j) {
            const std::size_t d = c * chunk + 2 * j;
            const std::uint16_t* low = codes + (k + d) * ld + first;
            if (2 * j < n) {
              pair_line_codes<R>(low, 2 * j + 1 < n ? low + ld : nullptr, valid, lines[j], R, path);
            } else {
              std::fill(lines[j], lines[j] + R, 0u);
            }
          }
          transpose_words(reinterpret_cast<const unsigned char*>(&lines[0][0]), 4 * R, chunk / 2, valid,
                          reinterpret_cast<unsigned char*>(to + c * R * chunk), 2 * chunk, path);
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
