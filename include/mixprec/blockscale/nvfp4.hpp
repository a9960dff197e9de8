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
#include <vector>

#include "../block_stochastic_rounding.hpp"
#include "../detail/philox.hpp"
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

// The amax bits of the random Hadamard transform of a's columns (rows a multiple of 16), and the
// 16×16 tiles' amax bits of that transform into tile_amax when it is not empty (sized as the
// tiles).  The transform is recomputed when the lines are quantised, bit for bit the same.
inline std::uint32_t nvfp4_rht_amax_bits(const float* a, std::size_t lda, std::size_t rows, std::size_t cols,
                                         std::uint32_t negative, std::vector<std::uint32_t>& tile_amax) noexcept {
  const std::size_t across = (cols + nvfp4_block_size - 1) / nvfp4_block_size;
  std::uint32_t largest = 0;
  for (std::size_t r0 = 0; r0 < rows; r0 += nvfp4_block_size) {
    rht_chunk_columns(a, lda, r0, cols, negative, false, [&](std::size_t c, const auto& v) {
      constexpr std::size_t width = sizeof v[0] / sizeof(float);
      std::uint32_t chunk[width] = {};  // each column's chunk amax bits, in vector lanes
      for (std::size_t i = 0; i < hadamard_size; ++i) {
        for (std::size_t k = 0; k < width; ++k) chunk[k] = std::max(chunk[k], nvfp4_magnitude_bits(v[i][k]));
      }
      for (std::size_t k = 0; k < width; ++k) {
        largest = std::max(largest, chunk[k]);
        if (!tile_amax.empty()) {
          std::uint32_t& tile = tile_amax[(r0 / nvfp4_block_size) * across + (c + k) / nvfp4_block_size];
          tile = std::max(tile, chunk[k]);
        }
      }
    });
  }
  return largest;
}

// A line's scratch: the padded line, its codes, and per block the amax (as float), the value the
// scale is rounded from, the stored scale and the elements' factor.
struct nvfp4_line_buffers {
  std::vector<float> y, amax, unrounded, factor;
  std::vector<float4_e2m1fn> codes;
};

// One line of copy m (its elements contiguous in x, the line's length of them), in passes over
// the line that the compiler vectorises or the bulk kernels run: the padded copy (and the
// transform of each block), each block's amax (of its 16×16 tile from tile_amax when that is not
// empty), the unrounded scales, their ue4m3 rounding (convert_n, nearest even, saturating), the
// elements' factors, y = x · factor (TE) or x / divisor (torchao) in float, then convert_n's e2m1
// conversion of y (nearest even, saturating), which equals nvfp4_element_code's clamp to ±6 and
// conversion bit for bit (saturation is that clamp); NaN-scale blocks are zeroed first so their
// codes come out 0, the padding's codes are zeroed after.  Each step is the scalar rule's
// operation on the same operands (nvfp4_rules.hpp), so the bits are the scalar reference's on
// every path.  Stochastic rounding goes element by element (each its Philox word).
inline void nvfp4_quantize_line(const float* x, std::size_t line, nvfp4_matrix& m,
                                const std::vector<std::uint32_t>& tile_amax, const nvfp4_options& o,
                                std::uint32_t negative, nvfp4_line_buffers& b, bool transformed_already = false) {
  const bool by_columns = m.columnwise(), te = m.rule() == nvfp4_rule::transformer_engine;
  const std::size_t length = m.line_length(), blocks = m.blocks_per_line(), padded = blocks * nvfp4_block_size;
  const std::size_t tiles_across = (m.cols() + nvfp4_block_size - 1) / nvfp4_block_size;
  const simd_path path = active_simd_path();
  b.y.assign(padded, 0.0f);  // the line, zero-padded to whole blocks
  b.codes.resize(padded);
  b.amax.resize(blocks);
  b.unrounded.resize(blocks);
  b.factor.resize(blocks);
  std::copy(x, x + length, b.y.begin());
  if (m.hadamard_transformed() && !transformed_already) {  // a column-wise copy whose length is a multiple of 16
    for (std::size_t j = 0; j < blocks; ++j) {
      rht16(*reinterpret_cast<float(*)[nvfp4_block_size]>(b.y.data() + j * nvfp4_block_size), negative);
    }
  }
  for (std::size_t j = 0; j < blocks; ++j) {
    std::uint32_t amax_bits = 0;
    for (std::size_t p = 0; p < nvfp4_block_size; ++p) {
      amax_bits = std::max(amax_bits, nvfp4_magnitude_bits(b.y[j * nvfp4_block_size + p]));
    }
    if (!tile_amax.empty()) {
      amax_bits = tile_amax[(by_columns ? j : line / nvfp4_block_size) * tiles_across +
                            (by_columns ? line / nvfp4_block_size : j)];
    }
    b.amax[j] = mixprec::detail::bit_cast<float>(amax_bits);
  }
  // The scales: te_nvfp4_block_scale / torchao_nvfp4_block_scale, their conversion vectorised.
  if (te) {
    const float multiplier = te_nvfp4_block_multiplier(m.tensor_scale());
    for (std::size_t j = 0; j < blocks; ++j) b.unrounded[j] = te_nvfp4_unrounded_scale(b.amax[j], multiplier);
  } else {
    for (std::size_t j = 0; j < blocks; ++j)
      b.unrounded[j] = torchao_nvfp4_unrounded_scale(b.amax[j], m.tensor_scale());
  }
  float8_ue4m3* scales = &m.scale(line, 0);
  mixprec::detail::convert_n_serial(path, b.unrounded.data(), blocks, scales, rounding::nearest_even,
                                    overflow::saturate, false);
  for (std::size_t j = 0; j < blocks; ++j) {
    b.factor[j] = te ? te_nvfp4_element_multiplier(scales[j], m.decode_scale())
                     : torchao_nvfp4_block_divisor(scales[j], m.tensor_scale());
    if (scales[j].bits() == detail::ue4m3_nan_code) {  // codes 0: the block's values zeroed for the conversion
      std::fill(b.y.begin() + static_cast<std::ptrdiff_t>(j * nvfp4_block_size),
                b.y.begin() + static_cast<std::ptrdiff_t>((j + 1) * nvfp4_block_size), 0.0f);
      b.factor[j] = 1.0f;
    }
  }
  const nvfp4_stochastic_rounding& sr = o.stochastic;
  if (sr.enabled) {
    const std::uint64_t base = (by_columns ? std::uint64_t{m.rows()} * m.cols() : 0) + std::uint64_t{line} * length;
    for (std::size_t p = 0; p < padded; ++p) {
      const float f = b.factor[p / nvfp4_block_size];
      const float scaled = te ? b.y[p] * f : b.y[p] / f;
      const bool nan_scale = scales[p / nvfp4_block_size].bits() == detail::ue4m3_nan_code;
      const std::uint8_t code = p < length && !nan_scale ? nvfp4_element_code(scaled, true, sr.word(base + p)) : 0;
      b.codes[p] = float4_e2m1fn::from_bits(code);
    }
  } else {
    for (std::size_t j = 0; j < blocks; ++j) {  // 16 at a time with one factor: vectorised
      float* block = b.y.data() + j * nvfp4_block_size;
      const float f = b.factor[j];
      if (te) {
        for (std::size_t p = 0; p < nvfp4_block_size; ++p) block[p] *= f;
      } else {
        for (std::size_t p = 0; p < nvfp4_block_size; ++p) block[p] /= f;
      }
    }
    mixprec::detail::convert_n_serial(path, b.y.data(), padded, b.codes.data(), rounding::nearest_even,
                                      overflow::saturate, false);
    std::fill(b.codes.begin() + static_cast<std::ptrdiff_t>(length), b.codes.end(), float4_e2m1fn::from_bits(0));
  }
  // The codes' object representation is their one-byte code (minifloat holds only it).
  mixprec::detail::pack_codes<4>(reinterpret_cast<const unsigned char*>(b.codes.data()), padded, m.block_data(line, 0));
}

// Lines [first, last) of copy m from a (row-major, lda).  tile_amax: the 16×16 tiles' amax bits
// (row-major over tiles of the matrix; of the transform for a Hadamard-transformed copy) or empty
// for 1×16 blocks.  A column-wise copy's lines (columns of a) are transposed 64 at a time into a
// buffer first (transpose_words), so that each line is read contiguously.
inline void nvfp4_quantize_lines(const float* a, std::size_t lda, nvfp4_matrix& m,
                                 const std::vector<std::uint32_t>& tile_amax, const nvfp4_options& o, std::size_t first,
                                 std::size_t last) {
  const std::uint32_t negative =
      m.hadamard_transformed() ? rht_negative_mask("nvfp4_quantize", o.columnwise_rht.signs) : 0;
  nvfp4_line_buffers buffers;
  if (!m.columnwise()) {
    for (std::size_t line = first; line < last; ++line) {
      nvfp4_quantize_line(a + line * lda, line, m, tile_amax, o, negative, buffers);
    }
    return;
  }
  constexpr std::size_t group = 64;
  const std::size_t rows = m.rows();
  const bool transform = m.hadamard_transformed();
  std::vector<float> lines(group * rows);
  std::vector<float> transformed(transform ? rows * group : 0);
  for (std::size_t c0 = first; c0 < last; c0 += group) {
    const std::size_t count = std::min(group, last - c0);
    // The transformed copy: the group's columns transformed 16 rows and 16 columns at a time
    // (rht_chunk_columns, the scalar transform's bits) before the transpose.
    const float* source = a + c0;
    std::size_t source_ld = lda;
    if (transform) {
      for (std::size_t r0 = 0; r0 < rows; r0 += hadamard_size) {
        rht_chunk_columns(a + c0, lda, r0, count, negative, false, [&](std::size_t c, const auto& v) {
          constexpr std::size_t width = sizeof v[0] / sizeof(float);
          for (std::size_t i = 0; i < hadamard_size; ++i) {
            for (std::size_t k = 0; k < width; ++k) transformed[(r0 + i) * group + c + k] = v[i][k];
          }
        });
      }
      source = transformed.data();
      source_ld = group;
    }
    mixprec::detail::transpose_words(reinterpret_cast<const unsigned char*>(source), source_ld * sizeof(float), rows,
                                     count, reinterpret_cast<unsigned char*>(lines.data()), rows * sizeof(float),
                                     active_simd_path());
    for (std::size_t k = 0; k < count; ++k) {
      nvfp4_quantize_line(lines.data() + k * rows, c0 + k, m, tile_amax, o, negative, buffers, transform);
    }
  }
}

}  // namespace detail

// Quantises the rows × cols float matrix a (row-major, leading dimension lda) into the copies the
// options ask for.  Lines are split over bulk_threads(); the result does not depend on how.
inline nvfp4_tensor nvfp4_quantize(const float* a, std::size_t rows, std::size_t cols, std::size_t lda,
                                   const nvfp4_options& options = {}) {
  mixprec::detail::check_mx_arguments("nvfp4_quantize", a, rows, cols, lda);
  detail::check_nvfp4_options(options);
  const bool rht = options.columnwise && options.columnwise_rht.enabled;
  if (rht && rows % hadamard_size != 0) {
    throw invalid_argument("nvfp4_quantize: columnwise_rht transforms each column in chunks of 16 rows; rows = " +
                           std::to_string(rows) + " is not a multiple of 16");
  }
  nvfp4_tensor t;
  t.rows = rows;
  t.cols = cols;
  std::uint32_t global_bits = 0;  // the largest magnitude's bits (a NaN's above inf's), row by row on the kernels
  for (std::size_t r = 0; r < rows && cols > 0; ++r) {
    global_bits = std::max(global_bits, mixprec::detail::largest_magnitude_bits(active_simd_path(), a + r * lda, cols));
  }
  const float global_amax = mixprec::detail::bit_cast<float>(global_bits);
  std::vector<std::uint32_t> tile_amax;
  if (options.tile == nvfp4_tile::square_16) {
    const std::size_t down = (rows + nvfp4_block_size - 1) / nvfp4_block_size;
    const std::size_t across = (cols + nvfp4_block_size - 1) / nvfp4_block_size;
    tile_amax.resize(down * across);
    for (std::size_t ti = 0; ti < down; ++ti) {
      for (std::size_t tj = 0; tj < across; ++tj) {
        tile_amax[ti * across + tj] =
            detail::nvfp4_amax_bits(a, lda, ti * nvfp4_block_size, std::min(rows, (ti + 1) * nvfp4_block_size),
                                    tj * nvfp4_block_size, std::min(cols, (tj + 1) * nvfp4_block_size));
      }
    }
  }
  // The transformed column-wise copy has its own amax and tile amaxes, taken after the transform.
  float rht_amax = 0.0f;
  std::vector<std::uint32_t> rht_tile_amax(tile_amax.size(), 0u);
  if (rht) {
    const std::uint32_t negative = detail::rht_negative_mask("nvfp4_quantize", options.columnwise_rht.signs);
    rht_amax =
        mixprec::detail::bit_cast<float>(detail::nvfp4_rht_amax_bits(a, lda, rows, cols, negative, rht_tile_amax));
  }
  const auto make = [&](bool columnwise) {
    const bool transformed = columnwise && rht;
    const float amax = transformed ? rht_amax : global_amax;
    const std::vector<std::uint32_t>& tiles = transformed ? rht_tile_amax : tile_amax;
    nvfp4_matrix m(rows, cols, columnwise, options.rule, transformed);
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
    return m;
  };
  if (options.rowwise) t.rowwise = make(false);
  if (options.columnwise) t.columnwise = make(true);
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
