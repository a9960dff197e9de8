// Quantisation of a float matrix into an MX format and back (OCP MX v1.0 §6.3).
//
//   auto m = mixprec::mx_quantize<mixprec::float8_e4m3fn>(a, rows, cols, lda, mixprec::mx_axis::rows);
//   mixprec::mx_dequantize(m, out, ldo);          // out[r * ldo + c] = m.value(r, c)
//
// a is row-major (element (r, c) at a[r * lda + c]).  For each block of 32 elements along the
// matrix's axis, the scale code comes from the block's amax by the rule chosen (mx/element.hpp:
// ocp, the default, round_up, ceil or even), and each element is
//
//   P_i = convert<T>(V_i × 2^(127 - code), rounding::nearest_even, overflow::saturate)
//
// or, for MXINT8, mxint8_element::nearest(V_i × 2^(127 - code)) (halves away from zero, ±127).
// With mx_scale_sharing::tile the code comes from the amax of the block's 32 × 32 tile instead
// (Transformer Engine's MXFP8 2D quantisation of weights), stored in every block of the tile.
//
// The multiplier 1/X is an exact power of two, so the product is V_i / X exactly, except where
// it falls below float's normal range: there float rounds once before the element does, but
// every such value is below half the smallest subnormal of every MX element type (at least
// 2^-17 against 2^-126), so nearest-even gives the same code (±0) as from the exact quotient.
// Blocks with an inf or a NaN take the NaN scale and +0 codes.
//
// Stochastic rounding (block_stochastic_rounding, the stream every block quantiser shares):
// each element rounds stochastically by the k-bit rule instead (convert_stochastic, saturating;
// mxint8_element::stochastic), element (r, c) of a row-wise matrix taking the word of index
// r·cols + c, of a column-wise one rows·cols + c·rows + r (as NVFP4's copies); the scales are
// those of round to nearest.  It runs on the scalar loop, split over the bulk threads by lines.
//
// Speed: the blocks are read from memory once, on the bulk kernels of the active SIMD path
// (bulk/kernels.inl, encode_blocks: a vector's width of blocks at a time, their amaxes reduced
// together, their scales, then their codes from L1: multiply, convert, pack);
// large matrices are split over bulk_threads() as convert_n is (bulk/dispatch.hpp).  Every path
// gives the same bits (tests/mx/quantize_test.cpp).  MXINT8 runs on the scalar block functions
// (mx_scalar_kernels) on every path.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../block_stochastic_rounding.hpp"
#include "../bulk/dispatch.hpp"
#include "../bulk/random_words.hpp"
#include "../bulk/simd_path.hpp"
#include "../convert.hpp"
#include "../detail/extent.hpp"
#include "../detail/transpose.hpp"
#include "../errors.hpp"
#include "element.hpp"
#include "matrix.hpp"
#include "packing.hpp"
#include "scale_sharing.hpp"

namespace mixprec {

namespace detail {

// A block's multiplier 1/X and, through `code`, its e8m0 scale; 0 for the NaN scale.  The scale
// comes from the block's own amax, or, where `shared` is given, from shared[b], the amax of
// block b's tile.
template <class T, mx_scale_rule Rule>
struct mx_block_factor {
  const std::uint32_t* shared = nullptr;
  float operator()(std::size_t b, std::uint32_t amax_bits, std::uint8_t& code) const noexcept {
    code = mx_scale_code<T>(shared != nullptr ? shared[b] : amax_bits, Rule);
    return code == mx_nan_scale_code ? 0.0f : mx_scale_reciprocal(code);
  }
};

// Calls f(factor) with the block factor of the rule (a compile-time choice inside the kernels).
template <class T, class F>
void with_block_factor(mx_scale_rule rule, const std::uint32_t* shared, F f) {
  switch (rule) {
    case mx_scale_rule::ocp:
      f(mx_block_factor<T, mx_scale_rule::ocp>{shared});
      break;
    case mx_scale_rule::round_up:
      f(mx_block_factor<T, mx_scale_rule::round_up>{shared});
      break;
    case mx_scale_rule::ceil:
      f(mx_block_factor<T, mx_scale_rule::ceil>{shared});
      break;
    case mx_scale_rule::even:
      f(mx_block_factor<T, mx_scale_rule::even>{shared});
      break;
  }
}

// One element's code from its value already divided by the block's scale: the saturating
// nearest-even conversion of the float elements, MXINT8's nearest (halves away from zero).
template <class T>
unsigned char mx_element_code(float x) noexcept {
  if constexpr (std::is_same<T, mxint8_element>::value) {
    return mxint8_element::nearest(x).bits();
  } else {
    return static_cast<unsigned char>(convert<T>(x, rounding::nearest_even, overflow::saturate).bits());
  }
}

// The kernels' block functions one element at a time, for builds without vector kernels and for
// element types the vector kernels do not take (mx_element<T>::vector_kernels: MXINT8).
struct mx_scalar_kernels {
  template <class To, class FactorOf, int CodeBits = 8>
  static void encode_blocks(const float* in, std::size_t blocks, unsigned char* out, std::size_t out_stride,
                            unsigned char* scale_codes, std::size_t scale_stride, FactorOf factor_of) {
    for (std::size_t b = 0; b < blocks; ++b) {
      const float* x = in + b * mx_block_size;
      std::uint32_t largest = 0;
      for (std::size_t i = 0; i < mx_block_size; ++i) {
        largest = std::max(largest, bit_cast<std::uint32_t>(x[i]) & 0x7FFF'FFFFu);
      }
      std::uint8_t code = 0;
      const float factor = factor_of(b, largest, code);
      scale_codes[b * scale_stride] = code;
      unsigned char codes[mx_block_size];
      for (std::size_t i = 0; i < mx_block_size; ++i)
        codes[i] = factor == 0.0f ? 0 : mx_element_code<To>(x[i] * factor);
      pack_codes<CodeBits>(codes, mx_block_size, out + b * out_stride);  // 8 bits: a copy
    }
  }
  template <class From, bool Scaled>
  static void decode_to_float(const From* in, std::size_t n, float* out, bool, float scale) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]) * scale;
  }
};

// Runs body(kernels) with the vector kernels of the active path, or the scalar ones (no vector
// kernels in the build, or an element type they do not take).
template <class T, class Body>
void with_mx_kernels(Body body) {
  if constexpr (mx_element<T>::vector_kernels) {
    if (!with_kernels(active_simd_path(), body)) body(mx_scalar_kernels{});
  } else {
    body(mx_scalar_kernels{});
  }
}

// Splits `units` of work over the bulk threads as convert_n splits `elements` (for_each_chunk):
// run(first, last) on consecutive unit ranges, the thread count following the amount of data.
template <class Run>
void for_each_share(std::size_t units, std::size_t elements, Run run) {
  const auto unit_at = [&](std::size_t x) -> std::size_t {
    if (x >= elements) return units;
    return static_cast<std::size_t>(static_cast<long double>(x) * static_cast<long double>(units) /
                                    static_cast<long double>(elements));
  };
  for_each_chunk(elements, [&](std::size_t, std::size_t begin, std::size_t end) {
    const std::size_t first = unit_at(begin), last = unit_at(end);
    if (first < last) run(first, last);
  });
}

// The amax of every 32 × 32 tile of a rows × cols matrix (as float bits with the sign clear, NaN
// bits above infinity's, as the kernels take a block's), tile (i, j) at at(i, j); the tile rows
// split over the bulk threads.
class mx_tile_amaxes {
 public:
  mx_tile_amaxes(const float* a, std::size_t lda, std::size_t rows, std::size_t cols)
      : per_row_(cols / mx_block_size + (cols % mx_block_size != 0 ? 1 : 0)) {
    const std::size_t tile_rows = rows / mx_block_size + (rows % mx_block_size != 0 ? 1 : 0);
    amax_.assign(tile_rows * per_row_, 0);
    for_each_share(tile_rows, rows * cols, [&](std::size_t first, std::size_t last) {
      for (std::size_t r = first * mx_block_size; r < std::min(rows, last * mx_block_size); ++r) {
        std::uint32_t* tiles = amax_.data() + r / mx_block_size * per_row_;
        const float* row = a + r * lda;
        for (std::size_t j = 0; j < per_row_; ++j) {
          std::uint32_t largest = tiles[j];
          for (std::size_t c = j * mx_block_size; c < std::min(cols, (j + 1) * mx_block_size); ++c) {
            largest = std::max(largest, bit_cast<std::uint32_t>(row[c]) & 0x7FFF'FFFFu);
          }
          tiles[j] = largest;
        }
      }
    });
  }
  // Tile row i's amaxes, tile (i, j) at j.
  const std::uint32_t* row(std::size_t i) const noexcept { return amax_.data() + i * per_row_; }
  std::uint32_t at(std::size_t i, std::size_t j) const noexcept { return amax_[i * per_row_ + j]; }

 private:
  std::size_t per_row_;
  std::vector<std::uint32_t> amax_;
};

constexpr std::size_t mx_batch_blocks = 64;

// Quantises `count` (<= mx_batch_blocks) blocks of 32 contiguous floats into the blocks
// first, first + stride, ... of m (storage order); the kernel writes the codes packed.
// `shared`: null, or the amax of each block's tile (mx_block_factor).
template <class Kernels, class T>
void mx_encode_batch(const float* in, std::size_t count, mx_matrix<T>& m, std::size_t first, std::size_t stride,
                     mx_scale_rule rule, const std::uint32_t* shared) {
  constexpr int bits = mx_element<T>::bits;
  auto* scales = reinterpret_cast<unsigned char*>(m.scales() + first);
  with_block_factor<T>(rule, shared, [&](auto factor_of) {
    Kernels::template encode_blocks<T, decltype(factor_of), bits>(
        in, count, m.block_data(first), stride * mx_matrix<T>::block_bytes, scales, stride, factor_of);
  });
}

// `tiles`: null, or the tile amaxes whose scales the blocks share.
template <class Kernels, class T>
void mx_quantize_row_blocks(const float* a, std::size_t lda, mx_matrix<T>& m, std::size_t first, std::size_t last,
                            mx_scale_rule rule, const mx_tile_amaxes* tiles) {
  const std::size_t per_line = m.blocks_per_line(), full = m.cols() / mx_block_size;
  for (std::size_t b = first; b < last;) {
    const std::size_t line = b / per_line, j = b % per_line;
    const std::size_t line_end = std::min(last, (line + 1) * per_line);
    const float* row = a + line * lda;
    // Block j of row r crosses tile (r / 32, j): the batch's tiles are consecutive.
    const std::uint32_t* shared = tiles != nullptr ? tiles->row(line / mx_block_size) : nullptr;
    const std::size_t whole = std::min(line_end - b, full > j ? full - j : 0);
    for (std::size_t done = 0; done < whole; done += mx_batch_blocks) {
      const std::size_t count = std::min(mx_batch_blocks, whole - done);
      mx_encode_batch<Kernels>(row + (j + done) * mx_block_size, count, m, b + done, 1, rule,
                               shared != nullptr ? shared + j + done : nullptr);
    }
    b += whole;
    if (b < line_end) {  // the line's last block, shorter than 32: padded with zeros
      float padded[mx_block_size] = {};
      std::memcpy(padded, row + full * mx_block_size, (m.cols() - full * mx_block_size) * sizeof(float));
      mx_encode_batch<Kernels>(padded, 1, m, b, 1, rule, shared != nullptr ? shared + full : nullptr);
      ++b;
    }
  }
}

// Column-wise blocks, by stripes of 64 rows (two blocks down each column, so that each column's
// pair of packed blocks fills whole cache lines): the stripe is read row by row in tiles of
// 512 columns (2 KiB of each row: whole lines, and runs long enough for the hardware prefetcher;
// narrower tiles of rows a power-of-two apart miss on every line: 256 columns took 7 % longer on
// a 2048 × 2048 matrix and 10 % on 8192 × 8192, 128 columns longer still), each tile transposed into
// blocks of contiguous floats, block row by block row, for the kernel.
constexpr std::size_t mx_column_group = 512, mx_stripe_blocks = 2;

template <class Kernels, class T>
void mx_quantize_column_stripes(const float* a, std::size_t lda, mx_matrix<T>& m, std::size_t first_stripe,
                                std::size_t last_stripe, mx_scale_rule rule, const mx_tile_amaxes* tiles) {
  const simd_path path = active_simd_path();
  const std::size_t per_line = m.blocks_per_line();
  // [block row][column × 32 + row], as wide as the matrix up to a group; every value the kernel
  // reads is written first (a transposed value or a padding zero), so no fill: a memset of the
  // tile per call was 1 % of an MXFP8 step.
  const std::size_t group = std::min(mx_column_group, m.cols());
  const std::unique_ptr<float[]> tile(new float[mx_stripe_blocks * group * mx_block_size]);
  for (std::size_t stripe = first_stripe; stripe < last_stripe; ++stripe) {
    const std::size_t j0 = stripe * mx_stripe_blocks, blocks = std::min(mx_stripe_blocks, per_line - j0);
    const std::size_t r0 = j0 * mx_block_size, rows = std::min(blocks * mx_block_size, m.rows() - r0);
    for (std::size_t c0 = 0; c0 < m.cols(); c0 += group) {
      const std::size_t columns = std::min(group, m.cols() - c0);
      for (std::size_t j = 0; j < blocks; ++j) {  // block row j: tile[j][c * 32 + r] = a(r0 + 32 j + r, c0 + c)
        float* const block_row = tile.get() + j * group * mx_block_size;
        const std::size_t first = j * mx_block_size, valid = std::min(mx_block_size, rows - std::min(rows, first));
        transpose_words(reinterpret_cast<const unsigned char*>(a + (r0 + first) * lda + c0), lda * sizeof(float), valid,
                        columns, reinterpret_cast<unsigned char*>(block_row), mx_block_size * sizeof(float), path);
        for (std::size_t c = 0; c < columns && valid < mx_block_size; ++c) {  // the columns' last block: zero padding
          std::fill(block_row + c * mx_block_size + valid, block_row + (c + 1) * mx_block_size, 0.0f);
        }
      }
      for (std::size_t j = 0; j < blocks; ++j) {
        for (std::size_t c = 0; c < columns; c += mx_batch_blocks) {
          const std::size_t count = std::min(mx_batch_blocks, columns - c);
          // Block j0 + j of column c0 + c + k crosses tile (j0 + j, (c0 + c + k) / 32).
          std::uint32_t shared[mx_batch_blocks];
          for (std::size_t k = 0; tiles != nullptr && k < count; ++k) {
            shared[k] = tiles->at(j0 + j, (c0 + c + k) / mx_block_size);
          }
          mx_encode_batch<Kernels>(tile.get() + (j * group + c) * mx_block_size, count, m,
                                   m.block_index_unchecked(c0 + c, j0 + j), per_line, rule,
                                   tiles != nullptr ? shared : nullptr);
        }
      }
    }
  }
}

// Lines [first, last) of m with stochastic rounding of the elements (one element at a time).
template <class T>
void mx_quantize_lines_stochastic(const float* a, std::size_t lda, mx_matrix<T>& m, mx_scale_rule rule,
                                  const mx_tile_amaxes* tiles, const block_stochastic_rounding& sr, std::size_t first,
                                  std::size_t last) {
  constexpr int bits = mx_element<T>::bits;
  const simd_path path = active_simd_path();
  const bool by_rows = m.axis() == mx_axis::rows;
  const std::size_t length = m.line_length();
  const std::uint64_t base = by_rows ? 0 : std::uint64_t{m.rows()} * m.cols();
  for (std::size_t line = first; line < last; ++line) {
    for (std::size_t j = 0; j < m.blocks_per_line(); ++j) {
      const std::size_t p0 = j * mx_block_size, p1 = std::min(length, p0 + mx_block_size);
      float x[mx_block_size] = {};
      std::uint32_t largest = 0;
      for (std::size_t p = p0; p < p1; ++p) {
        x[p - p0] = by_rows ? a[line * lda + p] : a[p * lda + line];
        largest = std::max(largest, bit_cast<std::uint32_t>(x[p - p0]) & 0x7FFF'FFFFu);
      }
      if (tiles != nullptr) largest = by_rows ? tiles->at(line / mx_block_size, j) : tiles->at(j, line / mx_block_size);
      const std::size_t index = m.block_index_unchecked(line, j);
      std::uint8_t code = 0;
      float factor = 0.0f;
      with_block_factor<T>(rule, nullptr, [&](auto factor_of) { factor = factor_of(0, largest, code); });
      reinterpret_cast<unsigned char*>(m.scales())[index] = code;
      unsigned char codes[mx_block_size] = {};
      std::uint32_t words[mx_block_size];  // element p's at p - p0, from the vector Philox (bulk/random_words.hpp)
      if (factor != 0.0f) stochastic_words(path, sr, base + std::uint64_t{line} * length + p0, p1 - p0, words);
      for (std::size_t p = p0; p < p1 && factor != 0.0f; ++p) {  // element i = base + line × length + p, both axes
        const float scaled = x[p - p0] * factor;
        if constexpr (std::is_same<T, mxint8_element>::value) {
          codes[p - p0] = mxint8_element::stochastic(scaled, words[p - p0]).bits();
        } else {
          codes[p - p0] =
              static_cast<unsigned char>(convert_stochastic<T>(scaled, words[p - p0], overflow::saturate).bits());
        }
      }
      if constexpr (bits == 8) {
        std::memcpy(m.block_data(index), codes, mx_block_size);
      } else {
        pack_codes<bits>(codes, mx_block_size, m.block_data(index));
      }
    }
  }
}

inline void check_mx_arguments(const char* function, const void* matrix, std::size_t rows, std::size_t cols,
                               std::size_t leading) {
  if (rows > 0 && cols > 0 && matrix == nullptr) {
    throw invalid_argument(std::string(function) + ": null matrix pointer for " + std::to_string(rows) + " × " +
                           std::to_string(cols) + " elements");
  }
  if (rows > 0 && leading < cols) {
    throw invalid_argument(std::string(function) + ": leading dimension " + std::to_string(leading) +
                           " is smaller than the " + std::to_string(cols) + " columns");
  }
  check_matrix_extent(function, "float", matrix, rows, cols, leading, 1, sizeof(float));
}

}  // namespace detail

// Quantises the rows × cols float matrix a (row-major, leading dimension lda) into m, which must
// have the same shape; its axis says along which the blocks run; `sharing` whether each block
// has its own scale or each 32 × 32 tile's blocks share the tile's (one more read of a, for the
// tiles' amaxes).
template <class T>
void mx_quantize(const float* a, std::size_t lda, mx_matrix<T>& m, mx_scale_rule rule = mx_scale_rule::ocp,
                 mx_scale_sharing sharing = mx_scale_sharing::block, const block_stochastic_rounding& stochastic = {}) {
  detail::check_mx_arguments("mx_quantize", a, m.rows(), m.cols(), lda);
  if (!is_mx_scale_rule(rule)) {
    throw invalid_argument("mx_quantize: rule is " + std::to_string(static_cast<int>(rule)) +
                           ", not an mx_scale_rule (0 to 3: ocp, round_up, ceil, even)");
  }
  if (sharing != mx_scale_sharing::block && sharing != mx_scale_sharing::tile) {
    throw invalid_argument("mx_quantize: sharing is " + std::to_string(static_cast<int>(sharing)) +
                           ", not an mx_scale_sharing (0: block, 1: tile)");
  }
  stochastic.check("mx_quantize");
  const std::size_t elements = m.rows() * m.cols();
  if (elements == 0) return;
  std::optional<detail::mx_tile_amaxes> tile_amaxes;
  if (sharing == mx_scale_sharing::tile) tile_amaxes.emplace(a, lda, m.rows(), m.cols());
  const detail::mx_tile_amaxes* tiles = tile_amaxes ? &*tile_amaxes : nullptr;
  if (stochastic.enabled) {
    detail::for_each_share(m.lines(), elements, [&](std::size_t first, std::size_t last) {
      detail::mx_quantize_lines_stochastic(a, lda, m, rule, tiles, stochastic, first, last);
    });
    return;
  }
  detail::with_mx_kernels<T>([&](auto kernels) {
    using Kernels = decltype(kernels);
    if (m.axis() == mx_axis::rows) {
      detail::for_each_share(m.blocks(), elements, [&](std::size_t first, std::size_t last) {
        detail::mx_quantize_row_blocks<Kernels>(a, lda, m, first, last, rule, tiles);
      });
    } else {
      const std::size_t stripes = (m.blocks_per_line() + detail::mx_stripe_blocks - 1) / detail::mx_stripe_blocks;
      detail::for_each_share(stripes, elements, [&](std::size_t first, std::size_t last) {
        detail::mx_quantize_column_stripes<Kernels>(a, lda, m, first, last, rule, tiles);
      });
    }
  });
}

template <class T>
mx_matrix<T> mx_quantize(const float* a, std::size_t rows, std::size_t cols, std::size_t lda, mx_axis axis,
                         mx_scale_rule rule = mx_scale_rule::ocp, mx_scale_sharing sharing = mx_scale_sharing::block,
                         const block_stochastic_rounding& stochastic = {}) {
  mx_matrix<T> m(rows, cols, axis, detail::mx_unset_t{});  // every block is written below
  mx_quantize(a, lda, m, rule, sharing, stochastic);
  return m;
}

namespace detail {

// The blocks of lines [line0, line0 + lines) that cover positions [position0, position0 +
// positions) along them, decoded into out (row-major, ldo; out[0] is the region's first element).
// Whole blocks of a row-wise matrix decode straight into out, the others through a buffer.
template <class Kernels, class T>
void mx_dequantize_lines(const mx_matrix<T>& m, std::size_t line0, std::size_t lines, std::size_t position0,
                         std::size_t positions, float* out, std::size_t ldo) {
  const bool by_rows = m.axis() == mx_axis::rows;
  T codes[mx_block_size];
  float values[mx_block_size];
  if (!by_rows) {  // column-wise blocks: 16 lines' blocks decoded side by side, then transposed
    constexpr std::size_t side = 16;
    alignas(64) float tile[side][mx_block_size];
    const simd_path path = active_simd_path();
    for (std::size_t l0 = line0; l0 < line0 + lines; l0 += side) {
      const std::size_t count = std::min(side, line0 + lines - l0);
      for (std::size_t j = position0 / mx_block_size; j * mx_block_size < position0 + positions; ++j) {
        const std::size_t first = std::max(position0, j * mx_block_size);
        const std::size_t last = std::min(position0 + positions, (j + 1) * mx_block_size);
        for (std::size_t l = 0; l < count; ++l) {
          const std::size_t index = m.block_index_unchecked(l0 + l, j);
          unpack_codes<mx_element<T>::bits>(m.block_data(index), mx_block_size,
                                            reinterpret_cast<unsigned char*>(codes));
          Kernels::template decode_to_float<T, true>(codes, last - j * mx_block_size, tile[l], false,
                                                     mx_scale_value(m.scales()[index].bits()));
        }
        // tile[l][p] is m's element (position j * 32 + p, line l0 + l): out row p, column l.
        transpose_words(reinterpret_cast<const unsigned char*>(&tile[0][first - j * mx_block_size]),
                        mx_block_size * sizeof(float), count, last - first,
                        reinterpret_cast<unsigned char*>(out + (first - position0) * ldo + (l0 - line0)),
                        ldo * sizeof(float), path);
      }
    }
    return;
  }
  for (std::size_t line = line0; line < line0 + lines; ++line) {
    for (std::size_t j = position0 / mx_block_size; j * mx_block_size < position0 + positions; ++j) {
      const std::size_t index = m.block_index_unchecked(line, j);
      unpack_codes<mx_element<T>::bits>(m.block_data(index), mx_block_size, reinterpret_cast<unsigned char*>(codes));
      const float scale = mx_scale_value(m.scales()[index].bits());
      const std::size_t first = std::max(position0, j * mx_block_size);
      const std::size_t last = std::min(position0 + positions, (j + 1) * mx_block_size);
      // Decoded up to the last position needed: a count the compiler cannot take for the
      // constant 32 (which trips a false -Waggressive-loop-optimizations in GCC 12).
      const std::size_t count = last - j * mx_block_size;
      if (by_rows && first == j * mx_block_size) {
        Kernels::template decode_to_float<T, true>(codes, count, out + (line - line0) * ldo + (first - position0),
                                                   false, scale);
        continue;
      }
      Kernels::template decode_to_float<T, true>(codes, count, values, false, scale);
      for (std::size_t p = first; p < last; ++p) {
        const std::size_t r = by_rows ? line - line0 : p - position0, c = by_rows ? p - position0 : line - line0;
        out[r * ldo + c] = values[p - j * mx_block_size];
      }
    }
  }
}

}  // namespace detail

// out[r * ldo + c] = m.value(r, c) for every element: X × P_i in float, exact (MX values need at
// most 7 significant bits, multiples of 2^-143), ±inf where X × P_i exceeds float's range (possible only
// under the round_up and ceil rules, for blocks with amax near FLT_MAX), NaN in blocks with the
// NaN scale.
// Large matrices are split over bulk_threads() by lines.
template <class T>
void mx_dequantize(const mx_matrix<T>& m, float* out, std::size_t ldo) {
  detail::check_mx_arguments("mx_dequantize", out, m.rows(), m.cols(), ldo);
  const std::size_t elements = m.rows() * m.cols();
  if (elements == 0) return;
  const bool by_rows = m.axis() == mx_axis::rows;
  detail::with_mx_kernels<T>([&](auto kernels) {
    detail::for_each_share(m.lines(), elements, [&](std::size_t first, std::size_t last) {
      detail::mx_dequantize_lines<decltype(kernels)>(m, first, last - first, 0, m.line_length(),
                                                     out + (by_rows ? first * ldo : first), ldo);
    });
  });
}

// Dequantises rows [row0, row0 + rows) × columns [col0, col0 + cols) of m into out (row-major,
// leading dimension ldo), each value m.value(r, c).
template <class T>
void mx_dequantize_region(const mx_matrix<T>& m, std::size_t row0, std::size_t rows, std::size_t col0, std::size_t cols,
                          float* out, std::size_t ldo) {
  if (row0 > m.rows() || rows > m.rows() - row0 || col0 > m.cols() || cols > m.cols() - col0) {
    throw invalid_argument("mx_dequantize_region: rows [" + std::to_string(row0) + ", " + std::to_string(row0 + rows) +
                           ") × columns [" + std::to_string(col0) + ", " + std::to_string(col0 + cols) +
                           ") outside the " + std::to_string(m.rows()) + " × " + std::to_string(m.cols()) + " matrix");
  }
  detail::check_mx_arguments("mx_dequantize_region", out, rows, cols, ldo);
  if (rows == 0 || cols == 0) return;
  const bool by_rows = m.axis() == mx_axis::rows;
  detail::with_mx_kernels<T>([&](auto kernels) {
    detail::mx_dequantize_lines<decltype(kernels)>(m, by_rows ? row0 : col0, by_rows ? rows : cols,
                                                   by_rows ? col0 : row0, by_rows ? cols : rows, out, ldo);
  });
}

}  // namespace mixprec
