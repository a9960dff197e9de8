// NVFP4 tensors (issue 16): e2m1 elements packed two per byte, one ue4m3 scale per 16 elements
// and one float per tensor, quantised from a float matrix by Transformer Engine's or torchao's
// rule (nvfp4_rules.hpp), in 1×16 or 16×16 blocks, as a row-wise copy (blocks along rows), a
// column-wise copy (blocks along columns, stored transposed, as TE's columnwise data) or both,
// each quantised from the float input.  docs/blockscale.md ("NVFP4") has the layout and rules.
//
//   mixprec::blockscale::nvfp4_options o;
//   o.columnwise = true;
//   auto t = mixprec::blockscale::nvfp4_quantize(a, rows, cols, lda, o);
//   mixprec::blockscale::nvfp4_dequantize(*t.rowwise, out, ldo);   // out[r * ldo + c]
//
// Stochastic rounding of the elements (scales always round to nearest): element (r, c) of the
// row-wise copy takes the random word of index i = r·cols + c, of the column-wise copy index
// rows·cols + c·rows + r, from Philox-4x32-10 keyed by seed at the counter (i / 4, tensor id,
// step) (detail/philox.hpp), and uses its low k bits; so the codes depend only on the input and
// (seed, tensor id, step), never on the threads (set_bulk_threads) that split the lines.
//
// With columnwise_rht.enabled the column-wise copy is quantised from the random Hadamard transform
// of the input's columns (hadamard.hpp; rows a multiple of 16), its own amax taken after the
// transform, as TE's NVFP4 recipe does for the wgrad operands (reference_nvfp4.py _quantize); the
// copy's values, and what nvfp4_dequantize returns for it, are the transformed matrix's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../block_stochastic_rounding.hpp"
#include "../bulk/random_words.hpp"
#include "../detail/philox.hpp"
#include "../detail/prefetch.hpp"
#include "../errors.hpp"
#include "../mx/packing.hpp"
#include "../mx/quantize.hpp"
#include "hadamard.hpp"
#include "nvfp4_rules.hpp"

namespace mixprec::blockscale {

enum class nvfp4_tile {
  row_16,    // 1×16: each block is 16 consecutive elements of a line (TE's activations, gradients)
  square_16  // 16×16: the block amax is the tile's, shared by its 16 lines (TE's weights)
};

// The stochastic rounding of the elements: the stream every block quantiser shares.
using nvfp4_stochastic_rounding = block_stochastic_rounding;

// TE's random Hadamard transform of the column-wise copy (with_rht): ignored without that copy.
struct nvfp4_rht {
  bool enabled = false;
  rht_sign_vector signs = te_rht_sign_vector;
};

struct nvfp4_options {
  nvfp4_rule rule = nvfp4_rule::transformer_engine;
  nvfp4_tile tile = nvfp4_tile::row_16;
  bool rowwise = true;
  bool columnwise = false;
  nvfp4_stochastic_rounding stochastic{};
  nvfp4_rht columnwise_rht{};
};

// One quantised copy of a rows × cols matrix.  Its lines are the rows (row-wise copy) or the
// columns (column-wise copy); each line is cut into blocks of 16, the last one padded with zero
// codes.  Block j of line l: 8 bytes of packed codes (mx/packing.hpp: element 2k in the low
// nibble of byte k) and one ue4m3 scale, stored line by line.  hadamard_transformed: the lines hold
// the random Hadamard transform of the matrix's lines (hadamard.hpp, 16 elements at a time along
// the line), not the matrix: nvfp4_quantize's column-wise copy with columnwise_rht.
class nvfp4_matrix {
 public:
  nvfp4_matrix(std::size_t rows, std::size_t cols, bool columnwise, nvfp4_rule rule, bool hadamard_transformed = false)
      : rows_(rows),
        cols_(cols),
        columnwise_(columnwise),
        hadamard_transformed_(hadamard_transformed),
        rule_(rule),
        blocks_per_line_((line_length() + nvfp4_block_size - 1) / nvfp4_block_size),
        data_(lines() * blocks_per_line_ * (nvfp4_block_size / 2)),
        scales_(lines() * blocks_per_line_) {}

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  bool columnwise() const noexcept { return columnwise_; }
  bool hadamard_transformed() const noexcept { return hadamard_transformed_; }
  nvfp4_rule rule() const noexcept { return rule_; }
  std::size_t lines() const noexcept { return columnwise_ ? cols_ : rows_; }
  std::size_t line_length() const noexcept { return columnwise_ ? rows_ : cols_; }
  std::size_t blocks_per_line() const noexcept { return blocks_per_line_; }

  // The amax the per-tensor scale came from, and that scale as the rule keeps it: TE's S_enc,
  // torchao's per_tensor_scale p.
  float amax() const noexcept { return amax_; }
  float tensor_scale() const noexcept { return tensor_scale_; }
  // What the block scales are multiplied by to decode: TE's S_dec = fl(1 / S_enc), torchao's p.
  float decode_scale() const noexcept { return decode_scale_; }

  unsigned char* block_data(std::size_t line, std::size_t j) noexcept {
    return data_.data() + (line * blocks_per_line_ + j) * (nvfp4_block_size / 2);
  }
  const unsigned char* block_data(std::size_t line, std::size_t j) const noexcept {
    return data_.data() + (line * blocks_per_line_ + j) * (nvfp4_block_size / 2);
  }
  float8_ue4m3& scale(std::size_t line, std::size_t j) noexcept { return scales_[line * blocks_per_line_ + j]; }
  float8_ue4m3 scale(std::size_t line, std::size_t j) const noexcept { return scales_[line * blocks_per_line_ + j]; }

  // The e2m1 code and the decoded value of element (r, c) of the matrix (not of the line).
  unsigned code(std::size_t r, std::size_t c) const noexcept {
    const std::size_t line = columnwise_ ? c : r, position = columnwise_ ? r : c;
    return mixprec::detail::read_packed_code<4>(block_data(line, position / nvfp4_block_size),
                                                position % nvfp4_block_size);
  }
  float value(std::size_t r, std::size_t c) const noexcept {
    const std::size_t line = columnwise_ ? c : r, position = columnwise_ ? r : c;
    return decode(code(r, c), scale(line, position / nvfp4_block_size));
  }
  // TE: fl(fl(q · s) · S_dec) (q · s is exact); torchao: fl(q · fl(p · s)).
  float decode(unsigned code, float8_ue4m3 s) const noexcept {
    const float q = static_cast<float>(float4_e2m1fn::from_bits(static_cast<std::uint8_t>(code)));
    if (rule_ == nvfp4_rule::torchao) return q * torchao_nvfp4_block_divisor(s, decode_scale_);
    return q * static_cast<float>(s) * decode_scale_;
  }

  // The other copy of the transpose, with the same bytes: the column-wise copy of X is the row-wise
  // copy of Xᵀ and back (the same lines, blocked the same way).  For the wgrad GEMM dW = dYᵀ · X
  // on two column-wise (Hadamard-transformed) copies: nvfp4_gemm(1, dY.columnwise->transposed(),
  // *X.columnwise, ...).
  nvfp4_matrix transposed() const {
    nvfp4_matrix t(cols_, rows_, !columnwise_, rule_, hadamard_transformed_);
    t.data_ = data_;
    t.scales_ = scales_;
    t.set_tensor_scale(amax_, tensor_scale_, decode_scale_);
    return t;
  }

  void set_tensor_scale(float amax, float tensor_scale, float decode_scale) noexcept {
    amax_ = amax;
    tensor_scale_ = tensor_scale;
    decode_scale_ = decode_scale;
  }

 private:
  std::size_t rows_, cols_;
  bool columnwise_, hadamard_transformed_;
  nvfp4_rule rule_;
  std::size_t blocks_per_line_;
  std::vector<unsigned char> data_;
  std::vector<float8_ue4m3> scales_;
  float amax_ = 0.0f, tensor_scale_ = 1.0f, decode_scale_ = 1.0f;
};

struct nvfp4_tensor {
  std::size_t rows = 0, cols = 0;
  std::optional<nvfp4_matrix> rowwise, columnwise;
};

namespace detail {

inline void check_nvfp4_options(const nvfp4_options& o) {
  if (o.rule != nvfp4_rule::transformer_engine && o.rule != nvfp4_rule::torchao) {
    throw invalid_argument("nvfp4_quantize: rule is " + std::to_string(static_cast<int>(o.rule)) +
                           ", not an nvfp4_rule (transformer_engine or torchao)");
  }
  if (o.tile != nvfp4_tile::row_16 && o.tile != nvfp4_tile::square_16) {
    throw invalid_argument("nvfp4_quantize: tile is " + std::to_string(static_cast<int>(o.tile)) +
                           ", not an nvfp4_tile (row_16 or square_16)");
  }
  if (!o.rowwise && !o.columnwise) {
    throw invalid_argument("nvfp4_quantize: the options ask for neither the rowwise nor the columnwise copy");
  }
  o.stochastic.check("nvfp4_quantize");
  if (o.columnwise_rht.enabled) rht_negative_mask("nvfp4_quantize", o.columnwise_rht.signs);
}

// Largest magnitude bits of the rows × cols matrix a, or of its 16×16 tile (ti, tj).
inline std::uint32_t nvfp4_amax_bits(const float* a, std::size_t lda, std::size_t r0, std::size_t r1, std::size_t c0,
                                     std::size_t c1) noexcept {
  std::uint32_t largest = 0;
  for (std::size_t r = r0; r < r1; ++r) {
    for (std::size_t c = c0; c < c1; ++c) largest = std::max(largest, nvfp4_magnitude_bits(a[r * lda + c]));
  }
  return largest;
}

// The largest magnitude bits of each of `blocks` blocks of 16 at x into largest: the kernels'
// block_magnitude_bits, or the same maximum in a scalar loop.
inline void nvfp4_block_amax_bits(simd_path path, const float* x, std::size_t blocks, std::uint32_t* largest) {
  const bool vectorised = mixprec::detail::with_kernels(path, [&](auto target) {
    decltype(target)::template block_magnitude_bits<nvfp4_block_size>(x, blocks, largest);
  });
  if (vectorised) return;
  for (std::size_t b = 0; b < blocks; ++b) {
    largest[b] = nvfp4_amax_bits(x + b * nvfp4_block_size, 0, 0, 1, 0, nvfp4_block_size);
  }
}

// The amax bits of every 16×16 tile of the rows × cols matrix a, row-major over the tiles: each
// row's block amaxes (nvfp4_block_amax_bits), folded into its tile row.
inline std::vector<std::uint32_t> nvfp4_tile_amax_bits(const float* a, std::size_t lda, std::size_t rows,
                                                       std::size_t cols) {
  const std::size_t down = (rows + nvfp4_block_size - 1) / nvfp4_block_size;
  const std::size_t across = (cols + nvfp4_block_size - 1) / nvfp4_block_size, whole = cols / nvfp4_block_size;
  const simd_path path = active_simd_path();
  std::vector<std::uint32_t> tiles(down * across, 0u), row(across);
  for (std::size_t r = 0; r < rows; ++r) {
    nvfp4_block_amax_bits(path, a + r * lda, whole, row.data());
    if (whole < across) row[whole] = nvfp4_amax_bits(a, lda, r, r + 1, whole * nvfp4_block_size, cols);
    std::uint32_t* tile_row = tiles.data() + r / nvfp4_block_size * across;
    for (std::size_t j = 0; j < across; ++j) tile_row[j] = std::max(tile_row[j], row[j]);
  }
  return tiles;
}

// Blocks quantised at a time: their amaxes, scales, factors and codes stay in L1.
constexpr std::size_t nvfp4_batch_blocks = 64;
// Columns the column-wise copy reads at a time: 1 KiB of each row.
constexpr std::size_t nvfp4_column_group = 256;

// The random Hadamard transform of rows [r0, r0 + 16) of columns [0, cols) of a into out
// (row-major, ldo): the kernels' rht16_columns on the columns that fill whole vectors, the rest
// by rht_chunk_columns; both are the scalar rht16's bits.
inline void nvfp4_rht_tile(simd_path path, const float* a, std::size_t lda, std::size_t r0, std::size_t cols,
                           std::uint32_t negative, float* out, std::size_t ldo) {
  std::size_t done = 0;
  mixprec::detail::with_kernels(path, [&](auto target) {
    using kernels = decltype(target);
    done = cols / kernels::operations::width * kernels::operations::width;
    kernels::rht16_columns(a + r0 * lda, lda, done, negative, out, ldo);
  });
  rht_chunk_columns(a + done, lda, r0, cols - done, negative, false, [&](std::size_t c, const auto& v) {
    constexpr std::size_t width = sizeof v[0] / sizeof(float);
    for (std::size_t i = 0; i < hadamard_size; ++i) {
      for (std::size_t k = 0; k < width; ++k) out[i * ldo + done + c + k] = v[i][k];
    }
  });
}

// The amax bits of the random Hadamard transform of a's columns (rows a multiple of 16), and the
// 16×16 tiles' amax bits of that transform into tile_amax when it is not empty (sized as the
// tiles).  The transform is recomputed when the lines are quantised, bit for bit the same.
inline std::uint32_t nvfp4_rht_amax_bits(const float* a, std::size_t lda, std::size_t rows, std::size_t cols,
                                         std::uint32_t negative, std::vector<std::uint32_t>& tile_amax) {
  const std::size_t across = (cols + nvfp4_block_size - 1) / nvfp4_block_size;
  const simd_path path = active_simd_path();
  std::vector<float> tile(hadamard_size * std::min(cols, nvfp4_column_group));
  std::uint32_t largest = 0;
  for (std::size_t r0 = 0; r0 < rows; r0 += hadamard_size) {
    for (std::size_t c0 = 0; c0 < cols; c0 += nvfp4_column_group) {
      const std::size_t count = std::min(nvfp4_column_group, cols - c0);
      nvfp4_rht_tile(path, a + c0, lda, r0, count, negative, tile.data(), count);
      largest = std::max(largest, mixprec::detail::largest_magnitude_bits(path, tile.data(), hadamard_size * count));
      if (tile_amax.empty()) continue;
      std::uint32_t* tiles = tile_amax.data() + r0 / nvfp4_block_size * across;
      for (std::size_t i = 0; i < hadamard_size; ++i) {
        for (std::size_t c = 0; c < count; ++c) {
          std::uint32_t& t = tiles[(c0 + c) / nvfp4_block_size];
          t = std::max(t, nvfp4_magnitude_bits(tile[i * count + c]));
        }
      }
    }
  }
  return largest;
}

// The e2m1 codes of `blocks` blocks of 16 at x, packed two per byte into the 8 bytes at
// packed + stride·b for block b: each block's elements times its factor (TE) or divided by it
// (divide: torchao), in float, then converted nearest-even with saturation, which is
// nvfp4_element_code's clamp to ±6 and conversion bit for bit; a NaN factor (a NaN scale) gives
// zero codes.  With `words` (non-null), element p of block b rounds stochastically with
// words[16 b + p] (stochastic rounding saturates to ±6 from any value beyond it, as the clamp
// does).  The kernels' encode_scaled_blocks, or the scalar rule.
inline void nvfp4_encode_blocks(simd_path path, bool divide, const float* x, std::size_t blocks, const float* factors,
                                unsigned char* packed, std::size_t stride, const std::uint32_t* words = nullptr) {
  const bool vectorised = mixprec::detail::with_kernels(path, [&](auto target) {
    using kernels = decltype(target);
    const auto encode = [&](auto divide_tag, auto stochastic_tag) {
      kernels::template encode_scaled_blocks<float4_e2m1fn, decltype(divide_tag)::value, nvfp4_block_size, 4,
                                             decltype(stochastic_tag)::value>(x, blocks, factors, packed, stride,
                                                                              words);
    };
    if (words != nullptr) {
      divide ? encode(std::true_type{}, std::true_type{}) : encode(std::false_type{}, std::true_type{});
    } else {
      divide ? encode(std::true_type{}, std::false_type{}) : encode(std::false_type{}, std::false_type{});
    }
  });
  if (vectorised) return;
  for (std::size_t b = 0; b < blocks; ++b) {
    unsigned char codes[nvfp4_block_size];
    const float f = factors[b];
    for (std::size_t p = 0; p < nvfp4_block_size; ++p) {
      const float element = x[b * nvfp4_block_size + p];
      const std::uint32_t word = words != nullptr ? words[b * nvfp4_block_size + p] : 0;
      codes[p] = detail::is_nan(f) ? 0 : nvfp4_element_code(divide ? element / f : element * f, words != nullptr, word);
    }
    mixprec::detail::pack_codes<4>(codes, nvfp4_block_size, packed + b * stride);
  }
}

// Where a run of blocks goes in a copy: block k of the run is block j + k·j_step of line
// line + k·line_step (along a line: line_step 0, j_step 1; across the lines of a 16-row strip of
// the column-wise copy: line_step 1, j_step 0).
struct nvfp4_block_run {
  std::size_t line, j, line_step, j_step;
};

// Quantises `count` (at most nvfp4_batch_blocks) blocks of 16 floats at x, contiguous, each
// holding its block's `valid` elements and zeros after them, into the blocks of copy m that run
// names, in passes that the kernels or the compiler vectorise: each block's amax (the kernels'
// block_magnitude_bits; of its 16×16 tile from tile_amax when that is not empty), the unrounded
// scales, their ue4m3 rounding (convert_n, nearest even, saturating) and decoding, the elements'
// factors, then the scaled elements' e2m1 codes (nvfp4_encode_blocks), packed two per byte; the
// padding's codes are zeroed.  Each step is the scalar rule's operation on the same operands
// (nvfp4_rules.hpp), so the bits are the scalar reference's on every path.  Stochastic rounding
// takes the same kernel with each element's Philox word (the run's words made together in vector
// lanes: bulk/random_words.hpp).
inline void nvfp4_quantize_blocks(simd_path path, const float* x, std::size_t count, std::size_t valid,
                                  nvfp4_block_run run, nvfp4_matrix& m, const std::vector<std::uint32_t>& tile_amax,
                                  const nvfp4_options& o) {
  constexpr std::size_t block = nvfp4_block_size;
  const bool by_columns = m.columnwise(), te = m.rule() == nvfp4_rule::transformer_engine;
  const std::size_t tiles_across = (m.cols() + block - 1) / block;
  const std::size_t stride = run.line_step * m.blocks_per_line() + run.j_step;  // between the run's blocks
  std::uint32_t amax_bits[nvfp4_batch_blocks];
  float scale_values[nvfp4_batch_blocks], factor[nvfp4_batch_blocks];
  // The inputs of the two bulk conversions below are zeroed only because GCC 12 cannot always see
  // that their first `count` entries are written before they are read (-Wmaybe-uninitialized in
  // some callers, a false report); 320 bytes per batch of 64 blocks.
  float unrounded[nvfp4_batch_blocks] = {};
  float8_ue4m3 scales[nvfp4_batch_blocks] = {};
  if (tile_amax.empty()) {
    nvfp4_block_amax_bits(path, x, count, amax_bits);
  } else {
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t line = run.line + k * run.line_step, j = run.j + k * run.j_step;
      amax_bits[k] = tile_amax[(by_columns ? j : line / block) * tiles_across + (by_columns ? line / block : j)];
    }
  }
  // The scales: te_nvfp4_block_scale / torchao_nvfp4_block_scale, their conversion and its
  // decoding vectorised; then the factors (NaN for a NaN scale under either rule).
  if (te) {
    const float multiplier = te_nvfp4_block_multiplier(m.tensor_scale());
    for (std::size_t k = 0; k < count; ++k) {
      unrounded[k] = te_nvfp4_unrounded_scale(mixprec::detail::bit_cast<float>(amax_bits[k]), multiplier);
    }
  } else {
    for (std::size_t k = 0; k < count; ++k) {
      unrounded[k] = torchao_nvfp4_unrounded_scale(mixprec::detail::bit_cast<float>(amax_bits[k]), m.tensor_scale());
    }
  }
  mixprec::detail::convert_n_serial(path, unrounded, count, scales, rounding::nearest_even, overflow::saturate, false);
  mixprec::detail::convert_n_serial(path, scales, count, scale_values, rounding::nearest_even, overflow::saturate,
                                    false);
  if (te) {
    for (std::size_t k = 0; k < count; ++k) factor[k] = te_nvfp4_element_multiplier(scale_values[k], m.decode_scale());
  } else {
    for (std::size_t k = 0; k < count; ++k) factor[k] = torchao_nvfp4_block_divisor(scale_values[k], m.tensor_scale());
  }
  float8_ue4m3* first_scale = &m.scale(run.line, run.j);
  for (std::size_t k = 0; k < count; ++k) first_scale[k * stride] = scales[k];
  unsigned char* packed = m.block_data(run.line, run.j);
  const std::size_t packed_stride = stride * (block / 2);
  const nvfp4_stochastic_rounding& sr = o.stochastic;
  if (sr.enabled) {
    std::uint32_t words[nvfp4_batch_blocks * block];  // block k's at 16 k
    // Block k's first element index; the run's blocks are often consecutive in it (a row-wise
    // run along its line), and then their words are made in one call (bulk/random_words.hpp).
    const std::uint64_t copy_base = by_columns ? std::uint64_t{m.rows()} * m.cols() : 0;
    const auto base = [&](std::size_t k) {
      return copy_base + std::uint64_t{run.line + k * run.line_step} * m.line_length() +
             (run.j + k * run.j_step) * block;
    };
    if (count > 1 && base(1) - base(0) == block) {
      mixprec::detail::stochastic_words(path, sr, base(0), count * block, words);
    } else {
      for (std::size_t k = 0; k < count; ++k)
        mixprec::detail::stochastic_words(path, sr, base(k), block, words + k * block);
    }
    nvfp4_encode_blocks(path, !te, x, count, factor, packed, packed_stride, words);
  } else {
    nvfp4_encode_blocks(path, !te, x, count, factor, packed, packed_stride);
  }
  if (valid < block) {
    for (std::size_t k = 0; k < count; ++k) {
      for (std::size_t p = valid; p < block; ++p)
        mixprec::detail::write_packed_code<4>(packed + k * packed_stride, p, 0);
    }
  }
}

// Row-wise lines [first, last) of copy m, each read in place, nvfp4_batch_blocks blocks at a time;
// a line that is not whole blocks has its last block read from a zero-padded copy.
inline void nvfp4_quantize_rows(const float* a, std::size_t lda, nvfp4_matrix& m,
                                const std::vector<std::uint32_t>& tile_amax, const nvfp4_options& o, std::size_t first,
                                std::size_t last, simd_path path) {
  const std::size_t length = m.line_length(), whole = length / nvfp4_block_size;
  for (std::size_t line = first; line < last; ++line) {
    const float* x = a + line * lda;
    for (std::size_t j0 = 0; j0 < whole; j0 += nvfp4_batch_blocks) {
      const std::size_t count = std::min(nvfp4_batch_blocks, whole - j0);
      // The next batch's lines are asked for while this one is computed from cache, where its
      // first pass (the block amaxes) would wait on memory (1×16 at 64 Mi: 69 → 64 ms; with
      // 16×16 tiles, whose amaxes are read beforehand, it cost 3–8 ms).
      const bool more_here = j0 + nvfp4_batch_blocks < whole;
      if (tile_amax.empty() && (more_here || line + 1 < last)) {
        const std::size_t next_blocks = more_here ? whole - j0 - nvfp4_batch_blocks : whole;
        mixprec::detail::prefetch_floats(more_here ? x + (j0 + nvfp4_batch_blocks) * nvfp4_block_size : x + lda,
                                         std::min(nvfp4_batch_blocks, next_blocks) * nvfp4_block_size);
      }
      nvfp4_quantize_blocks(path, x + j0 * nvfp4_block_size, count, nvfp4_block_size, {line, j0, 0, 1}, m, tile_amax,
                            o);
    }
    if (whole * nvfp4_block_size < length) {
      float tail[nvfp4_block_size] = {};
      std::copy(x + whole * nvfp4_block_size, x + length, tail);
      nvfp4_quantize_blocks(path, tail, 1, length - whole * nvfp4_block_size, {line, whole, 0, 1}, m, tile_amax, o);
    }
  }
}

// Column-wise lines [first, last) of copy m, nvfp4_column_group columns at a time, going down
// them 16 rows at a time (one block of each column): the 16 × 256 tile is transposed
// (transpose_words) into 256 contiguous blocks, zero-padded below the matrix's last row, and
// quantised 64 blocks at a time.  For a Hadamard-transformed copy the tile is transformed first
// (nvfp4_rht_tile, the scalar transform's bits; rows a multiple of 16).
inline void nvfp4_quantize_columns(const float* a, std::size_t lda, nvfp4_matrix& m,
                                   const std::vector<std::uint32_t>& tile_amax, const nvfp4_options& o,
                                   std::size_t first, std::size_t last, simd_path path) {
  constexpr std::size_t block = nvfp4_block_size, group = nvfp4_column_group;
  const std::size_t rows = m.rows();
  const bool transform = m.hadamard_transformed();
  const std::uint32_t negative = transform ? rht_negative_mask("nvfp4_quantize", o.columnwise_rht.signs) : 0;
  std::vector<float> transformed(transform ? block * group : 0);  // a transformed tile, row-major
  std::vector<float> blocks(group * block);                       // the tile's blocks, column after column
  for (std::size_t c0 = first; c0 < last; c0 += group) {
    const std::size_t count = std::min(group, last - c0);
    for (std::size_t j = 0; j < m.blocks_per_line(); ++j) {
      const std::size_t r0 = j * block, height = std::min(block, rows - r0);
      const float* source = a + r0 * lda + c0;
      std::size_t source_ld = lda;
      if (transform) {
        nvfp4_rht_tile(path, a + c0, lda, r0, count, negative, transformed.data(), group);
        source = transformed.data();
        source_ld = group;
      }
      if (height < block) std::fill(blocks.begin(), blocks.end(), 0.0f);
      mixprec::detail::transpose_words(reinterpret_cast<const unsigned char*>(source), source_ld * sizeof(float),
                                       height, count, reinterpret_cast<unsigned char*>(blocks.data()),
                                       block * sizeof(float), path);
      for (std::size_t k0 = 0; k0 < count; k0 += nvfp4_batch_blocks) {
        nvfp4_quantize_blocks(path, blocks.data() + k0 * block, std::min(nvfp4_batch_blocks, count - k0), height,
                              {c0 + k0, j, 1, 0}, m, tile_amax, o);
      }
    }
  }
}

// Lines [first, last) of copy m from a (row-major, lda).  tile_amax: the 16×16 tiles' amax bits
// (row-major over tiles of the matrix; of the transform for a Hadamard-transformed copy) or empty
// for 1×16 blocks.
inline void nvfp4_quantize_lines(const float* a, std::size_t lda, nvfp4_matrix& m,
                                 const std::vector<std::uint32_t>& tile_amax, const nvfp4_options& o, std::size_t first,
                                 std::size_t last) {
  const simd_path path = active_simd_path();
  if (m.columnwise()) {
    nvfp4_quantize_columns(a, lda, m, tile_amax, o, first, last, path);
  } else {
    nvfp4_quantize_rows(a, lda, m, tile_amax, o, first, last, path);
  }
}

}  // namespace detail

// Quantises the rows × cols float matrix a (row-major, leading dimension lda) into the copies the
// options ask for, in t: a copy already there with the same shape, direction, rule and transform
// is overwritten in place (a training loop's tensors keep their storage; a fresh 64 Mi-element
// copy costs about as much in page faults as its quantisation), any other is replaced, and a copy
// the options do not ask for is reset.  Lines are split over bulk_threads(); the result does not
// depend on how.  Bad arguments throw before t is touched.
inline void nvfp4_quantize(const float* a, std::size_t rows, std::size_t cols, std::size_t lda, nvfp4_tensor& t,
                           const nvfp4_options& options = {}) {
  mixprec::detail::check_mx_arguments("nvfp4_quantize", a, rows, cols, lda);
  detail::check_nvfp4_options(options);
  const bool rht = options.columnwise && options.columnwise_rht.enabled;
  if (rht && rows % hadamard_size != 0) {
    throw invalid_argument("nvfp4_quantize: columnwise_rht transforms each column in chunks of 16 rows; rows = " +
                           std::to_string(rows) + " is not a multiple of 16");
  }
  // The amax (and 16×16 tile amaxes) of a itself, read only when a copy is quantised from a, not
  // from its transform: the largest magnitude's bits (a NaN's above inf's), from the tiles when
  // there are any, else row by row on the kernels.
  const bool square = options.tile == nvfp4_tile::square_16;
  std::uint32_t global_bits = 0;
  std::vector<std::uint32_t> tile_amax;
  if (options.rowwise || !rht) {
    if (square) {
      tile_amax = detail::nvfp4_tile_amax_bits(a, lda, rows, cols);
      for (const std::uint32_t tile : tile_amax) global_bits = std::max(global_bits, tile);
    } else {
      for (std::size_t r = 0; r < rows && cols > 0; ++r) {
        global_bits =
            std::max(global_bits, mixprec::detail::largest_magnitude_bits(active_simd_path(), a + r * lda, cols));
      }
    }
  }
  const float global_amax = mixprec::detail::bit_cast<float>(global_bits);
  // The transformed column-wise copy has its own amax and tile amaxes, taken after the transform.
  const std::size_t tile_count =
      ((rows + nvfp4_block_size - 1) / nvfp4_block_size) * ((cols + nvfp4_block_size - 1) / nvfp4_block_size);
  float rht_amax = 0.0f;
  std::vector<std::uint32_t> rht_tile_amax(square && rht ? tile_count : 0, 0u);
  if (rht) {
    const std::uint32_t negative = detail::rht_negative_mask("nvfp4_quantize", options.columnwise_rht.signs);
    rht_amax =
        mixprec::detail::bit_cast<float>(detail::nvfp4_rht_amax_bits(a, lda, rows, cols, negative, rht_tile_amax));
  }
  const auto make = [&](bool columnwise, std::optional<nvfp4_matrix>& slot) {
    const bool transformed = columnwise && rht;
    const float amax = transformed ? rht_amax : global_amax;
    const std::vector<std::uint32_t>& tiles = transformed ? rht_tile_amax : tile_amax;
    if (!slot || slot->rows() != rows || slot->cols() != cols || slot->columnwise() != columnwise ||
        slot->rule() != options.rule || slot->hadamard_transformed() != transformed) {
      slot.emplace(rows, cols, columnwise, options.rule, transformed);
    }
    nvfp4_matrix& m = *slot;
    if (options.rule == nvfp4_rule::transformer_engine) {
      const float encode = te_nvfp4_encode_scale(amax);
      m.set_tensor_scale(amax, encode, 1.0f / encode);
    } else {
      const float p = torchao_nvfp4_tensor_scale(amax);
      m.set_tensor_scale(amax, p, p);
    }
    mixprec::detail::for_each_share(m.lines(), rows * cols, [&](std::size_t first, std::size_t last) {
      detail::nvfp4_quantize_lines(a, lda, m, tiles, options, first, last);
    });
  };
  t.rows = rows;
  t.cols = cols;
  if (options.rowwise) {
    make(false, t.rowwise);
  } else {
    t.rowwise.reset();
  }
  if (options.columnwise) {
    make(true, t.columnwise);
  } else {
    t.columnwise.reset();
  }
}

// The same into a new tensor.
inline nvfp4_tensor nvfp4_quantize(const float* a, std::size_t rows, std::size_t cols, std::size_t lda,
                                   const nvfp4_options& options = {}) {
  nvfp4_tensor t;
  nvfp4_quantize(a, rows, cols, lda, t, options);
  return t;
}

// out[r * ldo + c] = m.value(r, c) for every element of the matrix, whichever copy m is.  For a
// hadamard_transformed() copy these are the transformed matrix's values (a column-wise copy's:
// hadamard16_columns_inverse maps them back; a transposed() one's: hadamard16_inverse on each row).
inline void nvfp4_dequantize(const nvfp4_matrix& m, float* out, std::size_t ldo) {
  mixprec::detail::check_mx_arguments("nvfp4_dequantize", out, m.rows(), m.cols(), ldo);
  for (std::size_t r = 0; r < m.rows(); ++r) {
    for (std::size_t c = 0; c < m.cols(); ++c) out[r * ldo + c] = m.value(r, c);
  }
}

}  // namespace mixprec::blockscale
