// fp8 block-scaled matrices (issue 16, item 2): float8_e4m3fn or float8_e5m2 codes with one float32
// decode scale per block, the blocks being 1×128 (128 consecutive elements of a row: TE's
// activations and gradients, DeepSeek-V3's per-token tiles) or 128×128 (TE's and DeepSeek-V3's
// weights).  The scale rules are in fp8_block_rules.hpp; docs/blockscale.md has the layout.
//
//   auto q = mixprec::blockscale::fp8_block_quantize<mixprec::float8_e4m3fn>(a, rows, cols, lda);
//   mixprec::blockscale::fp8_block_dequantize(q, out, ldo);    // out[r * ldo + c] = q.value(r, c)
//
// Layout: the codes row-major, element (r, c) at data()[r · cols + c]; the decode scales
// row-major over the block grid, block (i, j) at scale_invs()[i · block_cols() + j], with
// block_rows() = rows (1×128) or ceil(rows / 128) (128×128) and block_cols() = ceil(cols / 128).
// That is the reference's layout before cuBLAS's (transposed, padded to 4) scale layout.
// Edge blocks (rows or cols not a multiple of 128) hold only the elements inside the matrix: their
// amax is over those, as TE's reference finds it after zero padding and TE's kernels by skipping
// the outside elements.  A value is float(q) · scale_inv, as TE's reference dequantises
// (ref_dequantize_rowwise) and DeepSeek-V3's weight_dequant.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "../block_stochastic_rounding.hpp"
#include "../bulk/dispatch.hpp"
#include "../bulk/random_words.hpp"
#include "../bulk/simd_path.hpp"
#include "../convert.hpp"
#include "../detail/extent.hpp"
#include "../detail/prefetch.hpp"
#include "../errors.hpp"
#include "../detail/text.hpp"
#include "../mx/quantize.hpp"
#include "fp8_block_rules.hpp"

namespace mixprec::blockscale {

enum class fp8_block_kind {
  row_1x128,     // one scale per 128 consecutive elements of a row
  tile_128x128,  // one scale per 128 × 128 tile
};

constexpr const char* to_string(fp8_block_kind k) noexcept {
  return k == fp8_block_kind::row_1x128 ? "row_1x128" : "tile_128x128";
}

struct fp8_block_options {
  fp8_block_rule rule = fp8_block_rule::transformer_engine;
  fp8_block_kind kind = fp8_block_kind::row_1x128;
  // The Transformer Engine rules only (deepseek_v3 has neither): round each scale down to a power
  // of two (TE's default, !NVTE_FP8_BLOCK_SCALING_FP32_SCALES), and the floor of the amax.
  bool power_2_scales = true;
  float amax_epsilon = 0.0f;
  // Stochastic rounding of the elements (the scales always round to nearest): element (r, c)
  // takes the random word of index r · cols + c (block_stochastic_rounding.hpp).
  block_stochastic_rounding stochastic{};
};

template <class T>
class fp8_block_matrix {
  static_assert(std::is_same<T, float8_e4m3fn>::value || std::is_same<T, float8_e5m2>::value,
                "fp8 block scaling stores float8_e4m3fn or float8_e5m2");

 public:
  using element_type = T;

  fp8_block_matrix() = default;

  // +0 codes, decode scales 1.
  fp8_block_matrix(std::size_t rows, std::size_t cols, fp8_block_kind kind, fp8_block_rule rule)
      : rows_(rows), cols_(cols), kind_(kind), rule_(rule) {
    if (kind != fp8_block_kind::row_1x128 && kind != fp8_block_kind::tile_128x128) {
      throw invalid_argument("fp8_block_matrix: kind is " + std::to_string(static_cast<int>(kind)) +
                             ", not an fp8_block_kind (0 row_1x128, 1 tile_128x128)");
    }
    if (rows != 0 && cols > mixprec::detail::max_array_elements(sizeof(T)) / rows) {
      throw invalid_argument("fp8_block_matrix: " + std::to_string(rows) + " × " + std::to_string(cols) +
                             " elements do not fit in memory");
    }
    data_.resize(rows * cols);  // value-initialised: +0 codes, by a memset (T is trivial)
    scale_invs_.assign(block_rows() * block_cols(), 1.0f);
  }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  fp8_block_kind kind() const noexcept { return kind_; }
  fp8_block_rule rule() const noexcept { return rule_; }
  // ceil(n / 128) without forming n + 127.
  static constexpr std::size_t blocks_over(std::size_t n) noexcept {
    return n / fp8_block_size + (n % fp8_block_size != 0 ? 1 : 0);
  }
  std::size_t block_height() const noexcept { return kind_ == fp8_block_kind::row_1x128 ? 1 : fp8_block_size; }
  std::size_t block_rows() const noexcept { return kind_ == fp8_block_kind::row_1x128 ? rows_ : blocks_over(rows_); }
  std::size_t block_cols() const noexcept { return blocks_over(cols_); }

  T element(std::size_t r, std::size_t c) const { return data_[index(r, c)]; }
  void set_element(std::size_t r, std::size_t c, T code) { data_[index(r, c)] = code; }
  // The decode scale of block (i, j) of the block grid, and of the block holding element (r, c).
  float scale_inv(std::size_t i, std::size_t j) const { return scale_invs_[block_index(i, j)]; }
  void set_scale_inv(std::size_t i, std::size_t j, float s) { scale_invs_[block_index(i, j)] = s; }
  float scale_inv_at(std::size_t r, std::size_t c) const {
    (void)index(r, c);
    return scale_invs_[(r / block_height()) * block_cols() + c / fp8_block_size];
  }
  // float(q) · scale_inv, one float multiplication.
  float value(std::size_t r, std::size_t c) const { return static_cast<float>(element(r, c)) * scale_inv_at(r, c); }

  const T* data() const noexcept { return data_.data(); }
  T* data() noexcept { return data_.data(); }
  const float* scale_invs() const noexcept { return scale_invs_.data(); }
  float* scale_invs() noexcept { return scale_invs_.data(); }

 private:
  std::size_t index(std::size_t r, std::size_t c) const {
    if (r >= rows_ || c >= cols_) {
      throw invalid_argument("fp8_block_matrix: element (" + std::to_string(r) + ", " + std::to_string(c) +
                             ") outside the " + std::to_string(rows_) + " × " + std::to_string(cols_) + " matrix");
    }
    return r * cols_ + c;
  }
  std::size_t block_index(std::size_t i, std::size_t j) const {
    if (i >= block_rows() || j >= block_cols()) {
      throw invalid_argument("fp8_block_matrix: block (" + std::to_string(i) + ", " + std::to_string(j) +
                             ") outside the " + std::to_string(block_rows()) + " × " + std::to_string(block_cols()) +
                             " block grid");
    }
    return i * block_cols() + j;
  }

  std::size_t rows_ = 0, cols_ = 0;
  fp8_block_kind kind_ = fp8_block_kind::row_1x128;
  fp8_block_rule rule_ = fp8_block_rule::transformer_engine;
  std::vector<T> data_;
  std::vector<float> scale_invs_;
};

namespace detail {

inline void check_fp8_block_options(const char* function, const fp8_block_options& o) {
  if (o.rule != fp8_block_rule::transformer_engine && o.rule != fp8_block_rule::transformer_engine_reference &&
      o.rule != fp8_block_rule::deepseek_v3) {
    throw invalid_argument(std::string(function) + ": rule is " + std::to_string(static_cast<int>(o.rule)) +
                           ", not an fp8_block_rule (0 to 2)");
  }
  if (o.kind != fp8_block_kind::row_1x128 && o.kind != fp8_block_kind::tile_128x128) {
    throw invalid_argument(std::string(function) + ": kind is " + std::to_string(static_cast<int>(o.kind)) +
                           ", not an fp8_block_kind (0 row_1x128, 1 tile_128x128)");
  }
  if (!(o.amax_epsilon >= 0.0f) || !std::isfinite(o.amax_epsilon)) {
    throw invalid_argument(std::string(function) + ": amax_epsilon is " + mixprec::detail::number_text(o.amax_epsilon) +
                           ", it must be finite and >= 0");
  }
  o.stochastic.check(function);
}

inline void check_float_matrix(const char* function, const char* name, const void* matrix, std::size_t rows,
                               std::size_t cols, std::size_t leading, std::size_t element_size) {
  if (rows > 0 && cols > 0 && matrix == nullptr) {
    throw invalid_argument(std::string(function) + ": null " + name + " pointer for " + std::to_string(rows) + " × " +
                           std::to_string(cols) + " elements");
  }
  if (rows > 0 && leading < cols) {
    throw invalid_argument(std::string(function) + ": leading dimension " + std::to_string(leading) +
                           " is smaller than the " + std::to_string(cols) + " columns");
  }
  mixprec::detail::check_matrix_extent(function, name, matrix, rows, cols, leading, 1, element_size);
}

// The amax of the block rows [r0, r1) × columns [c0, c1) of a, by the rule's reduction.  With
// vector kernels (float input) the rows' largest magnitudes come from kernels.largest as float
// bits: without a NaN that maximum is the fold's value bit for bit (both are the largest |x|); a
// block with a NaN, whose reduction depends on the rule, is folded in scalar.
template <class In, class Kernels>
float block_amax(const In* a, std::size_t lda, std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1,
                 fp8_block_rule rule, const Kernels& kernels) {
  if constexpr (Kernels::vectorised) {
    std::uint32_t largest = 0;
    for (std::size_t r = r0; r < r1; ++r) largest = std::max(largest, kernels.largest(a + r * lda + c0, c1 - c0));
    if (largest <= 0x7F80'0000u) return mixprec::detail::bit_cast<float>(largest);
  }
  float amax = 0.0f;
  for (std::size_t r = r0; r < r1; ++r) {
    const In* row = a + r * lda;
    if (rule == fp8_block_rule::transformer_engine_reference) {
      for (std::size_t c = c0; c < c1; ++c) amax = amax_keeping_nan(amax, static_cast<float>(row[c]));
    } else {
      for (std::size_t c = c0; c < c1; ++c) amax = amax_skipping_nan(amax, static_cast<float>(row[c]));
    }
  }
  return amax;
}

// The scalar block operations: q[c] = convert<T>(x[c] · scale), saturating, nearest even.
template <class T>
struct fp8_block_scalar_kernels {
  static constexpr bool vectorised = false;
  template <class In>
  void scale_and_convert(const In* x, std::size_t n, T* q, float scale) const {
    for (std::size_t c = 0; c < n; ++c) {
      q[c] = convert<T>(static_cast<float>(x[c]) * scale, rounding::nearest_even, overflow::saturate);
    }
  }
};

// The same on a SIMD path's bulk kernels (K: the path's kernel set, bulk/dispatch.hpp), which
// give the scalar loop's bits (the fused multiply-and-convert of quantize_n); called directly, so
// that a block of 128 pays no dispatch.
template <class T, class K>
struct fp8_block_vector_kernels {
  static constexpr bool vectorised = true;
  std::uint32_t largest(const float* x, std::size_t n) const {
    return K::template multiply_in_place<false>(const_cast<float*>(x), n, 1.0f);  // reads only
  }
  void scale_and_convert(const float* x, std::size_t n, T* q, float scale) const {
    (void)K::template encode_from_float<T, true>(x, n, q, rounding::nearest_even, overflow::saturate, false, scale);
  }
  // The largest magnitude bits of each of `blocks` consecutive blocks of 128 at x (NaN bits above
  // infinity's).
  void block_largest(const float* x, std::size_t blocks, std::uint32_t* largest) const {
    K::template block_magnitude_bits<fp8_block_size>(x, blocks, largest);
  }
  // q = convert<T>(x · factors[b]) (or x / factors[b], correctly rounded, with divide), saturating,
  // nearest even, for `blocks` consecutive blocks of 128 (no factor may be NaN).
  void encode_blocks(bool divide, const float* x, std::size_t blocks, const float* factors, T* q) const {
    auto* codes = reinterpret_cast<unsigned char*>(q);  // T is one byte of code
    if (divide) {
      K::template encode_scaled_blocks<T, true, fp8_block_size, 8>(x, blocks, factors, codes, fp8_block_size);
    } else {
      K::template encode_scaled_blocks<T, false, fp8_block_size, 8>(x, blocks, factors, codes, fp8_block_size);
    }
  }
};

// q[c] = the element of x[c] · scale (or x[c] / divisor, correctly rounded, for deepseek_v3)
// rounded stochastically with the words of indices first, first + 1, ...; saturating.
// The words come a block at a time from the vector Philox (bulk/random_words.hpp).
template <class T, class In>
void convert_stochastically(const In* x, std::size_t n, T* q, float scale, bool divide,
                            const block_stochastic_rounding& sr, std::uint64_t first) {
  const simd_path path = active_simd_path();
  std::uint32_t words[fp8_block_size];
  for (std::size_t begin = 0; begin < n; begin += fp8_block_size) {
    const std::size_t count = std::min(fp8_block_size, n - begin);
    mixprec::detail::stochastic_words(path, sr, first + begin, count, words);
    for (std::size_t c = 0; c < count; ++c) {
      const float v = static_cast<float>(x[begin + c]);
      const float scaled = divide ? mixprec::detail::divide_nearest(v, scale) : v * scale;
      q[begin + c] = convert_stochastic<T>(scaled, words[c], overflow::saturate);
    }
  }
}

// The scale a block is quantised with and the decode scale kept beside it, by the options' rule;
// `factor` is what the elements are multiplied by (TE) or divided by (deepseek_v3: its decode
// scale).
template <class T, class In>
void fp8_block_scales(float amax, const fp8_block_options& options, float& factor, float& scale_inv) {
  const float largest = mixprec::fp8_max(fp8_element_of<T>());
  if (options.rule == fp8_block_rule::deepseek_v3) {
    factor = scale_inv = deepseek_block_scale(amax, largest);
    return;
  }
  factor =
      options.rule == fp8_block_rule::transformer_engine
          ? te_block_scale(amax, largest, options.power_2_scales, options.amax_epsilon, value_for_inf<In>())
          : te_reference_block_scale(amax, largest, options.power_2_scales, options.amax_epsilon, value_for_inf<In>());
  scale_inv = 1.0f / factor;
}

// Whole blocks quantised at a time along a row (1×128), and 128×128 tiles at a time, each read
// twice (its amax over 128 rows, then its codes; 64 KiB, from L2 the second time).  64 Mi
// elements, one thread: 1, 2 and 8 tiles at a time took 38.6–39.5, 40.9–41.3 and 39.9–41.4 ms.
constexpr std::size_t fp8_block_group = 8;
constexpr std::size_t fp8_tile_group = 1;

// Block (i, j) of m from a: its amax, scale and codes.
template <class T, class In, class Kernels>
void fp8_block_quantize_block(const In* a, std::size_t lda, fp8_block_matrix<T>& m, const fp8_block_options& options,
                              std::size_t i, std::size_t j, const Kernels& kernels) {
  const std::size_t cols = m.cols();
  const std::size_t r0 = i * m.block_height(), r1 = std::min(m.rows(), r0 + m.block_height());
  const std::size_t c0 = j * fp8_block_size, c1 = std::min(cols, c0 + fp8_block_size);
  float factor = 0.0f, scale_inv = 0.0f;
  fp8_block_scales<T, In>(detail::block_amax(a, lda, r0, r1, c0, c1, options.rule, kernels), options, factor,
                          scale_inv);
  const bool divide = options.rule == fp8_block_rule::deepseek_v3;
  for (std::size_t r = r0; r < r1; ++r) {
    const In* x = a + r * lda + c0;
    T* q = m.data() + r * cols + c0;
    if (options.stochastic.enabled) {
      detail::convert_stochastically(x, c1 - c0, q, factor, divide, options.stochastic, std::uint64_t{r} * cols + c0);
    } else if (divide) {
      for (std::size_t c = 0; c < c1 - c0; ++c) {
        q[c] = convert<T>(mixprec::detail::divide_nearest(static_cast<float>(x[c]), factor), rounding::nearest_even,
                          overflow::saturate);
      }
    } else {
      kernels.scale_and_convert(x, c1 - c0, q, factor);
    }
  }
  m.scale_invs()[i * m.block_cols() + j] = scale_inv;
}

// Block rows [first, last) of m from a, block by block.
template <class T, class In, class Kernels>
void fp8_block_quantize_block_rows(const In* a, std::size_t lda, fp8_block_matrix<T>& m,
                                   const fp8_block_options& options, std::size_t first, std::size_t last,
                                   const Kernels& kernels) {
  for (std::size_t i = first; i < last; ++i) {
    for (std::size_t j = 0; j < m.block_cols(); ++j) fp8_block_quantize_block(a, lda, m, options, i, j, kernels);
  }
}

// Block rows [first, last) of m from float input on a path's vector kernels, without stochastic
// rounding: the whole blocks of a row `fp8_block_group` at a time, or `fp8_tile_group` tiles
// (their amaxes from block_largest, the codes from encode_blocks); a block with a NaN (whose amax
// depends on the rule) or a NaN factor, and the partial last block, by the per-block code above.
// Every code and scale is the scalar loop's.
template <class T, class Kernels>
void fp8_block_quantize_block_rows_vectorised(const float* a, std::size_t lda, fp8_block_matrix<T>& m,
                                              const fp8_block_options& options, std::size_t first, std::size_t last,
                                              const Kernels& kernels) {
  const std::size_t group = m.block_height() > 1 ? fp8_tile_group : fp8_block_group;
  const std::size_t cols = m.cols(), whole = cols / fp8_block_size;
  const bool divide = options.rule == fp8_block_rule::deepseek_v3;
  for (std::size_t i = first; i < last; ++i) {
    const std::size_t r0 = i * m.block_height(), r1 = std::min(m.rows(), r0 + m.block_height());
    for (std::size_t j0 = 0; j0 < whole; j0 += group) {
      const std::size_t count = std::min(group, whole - j0);
      const float* source = a + r0 * lda + j0 * fp8_block_size;
      std::uint32_t largest[fp8_block_group] = {}, row_largest[fp8_block_group];
      for (std::size_t r = 0; r < r1 - r0; ++r) {
        kernels.block_largest(source + r * lda, count, row_largest);
        for (std::size_t k = 0; k < count; ++k) largest[k] = std::max(largest[k], row_largest[k]);
      }
      // A block the kernels cannot take is quantised alone; the others in runs of neighbours.
      float factors[fp8_block_group];
      bool alone[fp8_block_group];
      for (std::size_t k = 0; k < count; ++k) {
        float scale_inv = 0.0f;
        alone[k] = largest[k] > 0x7F80'0000u;  // a NaN: the rule's amax
        if (!alone[k]) {
          fp8_block_scales<T, float>(mixprec::detail::bit_cast<float>(largest[k]), options, factors[k], scale_inv);
          alone[k] = factors[k] != factors[k];
          m.scale_invs()[i * m.block_cols() + j0 + k] = scale_inv;
        }
        if (alone[k]) fp8_block_quantize_block(a, lda, m, options, i, j0 + k, kernels);
      }
      // The next group's amax pass would wait on memory while these codes are computed from
      // cache: its part of row r0 + k is asked for as row k is encoded (1×128 at 64 Mi elements,
      // one thread: 44 → 32 ms).
      const bool next_here = j0 + group < whole;
      const std::size_t next_rows =
          next_here ? r1 - r0 : (i + 1 < last ? std::min(m.rows(), r1 + m.block_height()) - r1 : 0);
      const float* next = next_here ? a + r0 * lda + (j0 + group) * fp8_block_size : (next_rows > 0 ? a + r1 * lda : a);
      const std::size_t next_floats = std::min(group, next_here ? whole - j0 - group : whole) * fp8_block_size;
      for (std::size_t r = 0; r < r1 - r0; ++r) {
        if (r < next_rows) mixprec::detail::prefetch_floats(next + r * lda, next_floats);
        for (std::size_t k = 0; k < count;) {
          if (alone[k]) {
            ++k;
            continue;
          }
          std::size_t end = k + 1;
          while (end < count && !alone[end]) ++end;
          const std::size_t c0 = (j0 + k) * fp8_block_size;
          kernels.encode_blocks(divide, source + r * lda + k * fp8_block_size, end - k, factors + k,
                                m.data() + (r0 + r) * cols + c0);
          k = end;
        }
      }
    }
    if (whole < m.block_cols()) fp8_block_quantize_block(a, lda, m, options, i, whole, kernels);
  }
}

// The block rows split over bulk_threads() as convert_n splits its elements; every block is
// quantised alone, so the result does not depend on the split.
template <class T, class In>
void fp8_block_quantize_rows(const In* a, std::size_t lda, fp8_block_matrix<T>& m, const fp8_block_options& options) {
  const auto split = [&](const auto& kernels) {
    mixprec::detail::for_each_share(m.block_rows(), m.rows() * m.cols(), [&](std::size_t first, std::size_t last) {
      if constexpr (std::decay_t<decltype(kernels)>::vectorised) {
        if (!options.stochastic.enabled) {
          fp8_block_quantize_block_rows_vectorised(a, lda, m, options, first, last, kernels);
          return;
        }
      }
      fp8_block_quantize_block_rows(a, lda, m, options, first, last, kernels);
    });
  };
  if constexpr (std::is_same<In, float>::value && mixprec::detail::has_float_kernels<T>()) {
    const bool vectorised = mixprec::detail::with_kernels(
        active_simd_path(), [&](auto target) { split(fp8_block_vector_kernels<T, decltype(target)>{}); });
    if (vectorised) return;
  }
  split(fp8_block_scalar_kernels<T>{});
}

}  // namespace detail

// Quantises the rows × cols matrix a (row-major, leading dimension lda; float or bfloat16) into
// fp8 blocks by the options' rule and block kind.
template <class T, class In>
fp8_block_matrix<T> fp8_block_quantize(const In* a, std::size_t rows, std::size_t cols, std::size_t lda,
                                       const fp8_block_options& options = {}) {
  static_assert(std::is_same<In, float>::value || std::is_same<In, bfloat16>::value,
                "fp8_block_quantize reads float or bfloat16");
  detail::check_fp8_block_options("fp8_block_quantize", options);
  detail::check_float_matrix("fp8_block_quantize", "input", a, rows, cols, lda, sizeof(In));
  fp8_block_matrix<T> m(rows, cols, options.kind, options.rule);
  detail::fp8_block_quantize_rows(a, lda, m, options);
  return m;
}

// The same into an existing matrix of the input's shape, whose kind and rule the options must
// have: every code and scale is written (buffers reused from step to step).
template <class T, class In>
void fp8_block_quantize(const In* a, std::size_t lda, fp8_block_matrix<T>& m, const fp8_block_options& options = {}) {
  static_assert(std::is_same<In, float>::value || std::is_same<In, bfloat16>::value,
                "fp8_block_quantize reads float or bfloat16");
  detail::check_fp8_block_options("fp8_block_quantize", options);
  if (options.kind != m.kind() || options.rule != m.rule()) {
    throw invalid_argument(std::string("fp8_block_quantize: the options ask for ") + to_string(options.kind) +
                           " blocks by rule " + std::to_string(static_cast<int>(options.rule)) + ", the matrix has " +
                           to_string(m.kind()) + " blocks by rule " + std::to_string(static_cast<int>(m.rule())));
  }
  detail::check_float_matrix("fp8_block_quantize", "input", a, m.rows(), m.cols(), lda, sizeof(In));
  detail::fp8_block_quantize_rows(a, lda, m, options);
}

// out[r · ldo + c] = float(q) · scale_inv for every element (one float multiplication each).
template <class T>
void fp8_block_dequantize(const fp8_block_matrix<T>& m, float* out, std::size_t ldo) {
  detail::check_float_matrix("fp8_block_dequantize", "output", out, m.rows(), m.cols(), ldo, sizeof(float));
  const std::size_t height = m.block_height();
  for (std::size_t r = 0; r < m.rows(); ++r) {
    for (std::size_t j = 0; j < m.block_cols(); ++j) {
      const std::size_t c0 = j * fp8_block_size, c1 = std::min(m.cols(), c0 + fp8_block_size);
      const float s = m.scale_invs()[(r / height) * m.block_cols() + j];
      for (std::size_t c = c0; c < c1; ++c) out[r * ldo + c] = static_cast<float>(m.data()[r * m.cols() + c]) * s;
    }
  }
}

}  // namespace mixprec::blockscale
