// Where the packing reads an operand from: a *panel source*.
//
// The packing routines (packing.hpp) never look at the caller's arrays; they ask a source for a
// block of the logical operand in float.  Both operands are seen the same way, as a matrix of
// `rows x depth` with depth running along K:
//
//   A: op(A) itself, rows = M;   B: op(B) transposed, rows = N.
//
// A source implements panel_source (below): whether its values are all bfloat16 values, a
// lower bound of their bf16 keys, which direction is cheap to read, and read() itself.  The
// driver and the packing see only this interface, so they are compiled once per kernel family,
// not once per pair of element types (one virtual call per block read costs nothing).
//
// strided_source below is the one gemm uses for the caller's arrays.  A block-scaled operand
// (OCP MX: 32 elements along K sharing an e8m0 scale, issue 7) is another source whose read()
// decodes each element and multiplies it by its block's scale; nothing past the source changes.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../bulk/dispatch.hpp"
#include "../../bulk/simd_path.hpp"
#include "../../detail/bits.hpp"
#include "../../detail/transpose.hpp"
#include "../../format.hpp"
#include "../../types.hpp"
#include "kernels_x86.hpp"

namespace mixprec::detail {

// The deepest block a source is asked for (the largest kc of the kernel families).
constexpr std::size_t max_read_depth = 512;

// Types gemm takes: float and every minifloat whose values float holds (all of the library's).
template <class T>
constexpr bool is_gemm_operand() {
  if constexpr (std::is_same<T, float>::value) {
    return true;
  } else if constexpr (is_minifloat<T>::value) {
    using traits = format_traits<typename T::format>;
    return traits::precision <= 24 && traits::max_exponent <= 127 && traits::min_quantum_exponent >= -149;
  } else {
    return false;
  }
}

// Every finite value of T is a bfloat16 value: at most 8 significant bits, no value above
// bfloat16's binades, none below its smallest subnormal 2^-133 (a value m * 2^q with m < 2^8
// and q >= -133 is then m * 2^q in bfloat16 too).  Derived from the format, never listed:
// bfloat16, e4m3fn, e5m2, the fnuz formats, fp6, fp4 and e8m0 qualify; float16 (11 bits) and
// float do not.
template <class T>
constexpr bool exact_in_bfloat16() {
  if constexpr (is_minifloat<T>::value) {
    using traits = format_traits<typename T::format>;
    return traits::precision <= 8 && traits::max_exponent <= 127 && traits::min_quantum_exponent >= -133;
  } else {
    return false;
  }
}

// The key of a value for the flushing bf16 instructions (vdpbf16ps, TDPBF16PS):
//
//   zero, inf, NaN        bf16_key_ignored (255): they cannot make DAZ or FTZ act
//   normal bf16 value     its exponent field (1 ... 254)
//   a subnormal           bf16_key_unsafe (DAZ would flush it)
//
// A normal bf16 value with field f is a multiple of 2^(f - 134); a tile may go to a flushing
// instruction only when the smallest keys of its two micro-panels add up to at least 142: every
// product is then a multiple of 2^-126, and no sum of them is subnormal (kernels_x86.hpp).
constexpr int bf16_key_ignored = 255;
constexpr int bf16_key_unsafe = -1000;
constexpr int bf16_key_safe_sum = 142;

inline bool keys_allow_flushing_kernel(int a_key, int b_key) noexcept { return a_key + b_key >= bf16_key_safe_sum; }

inline int bf16_key(float x) noexcept {
  const std::uint32_t bits = bit_cast<std::uint32_t>(x);
  const std::uint32_t magnitude = bits & 0x7FFFFFFFu;
  const int field = static_cast<int>(magnitude >> 23);
  if (magnitude == 0 || field == 255) return bf16_key_ignored;
  if (field == 0) return bf16_key_unsafe;
  return field;
}

// The smallest key a value of T can have: its smallest non-zero magnitude is 2^q, q its format's
// min_quantum_exponent, of field q + 127 when that is a normal bf16 (e4m3fn: 118, e5m2: 111);
// bf16_key_unsafe where T has values below bf16's normal range (bf16 itself, e8m0).
template <class T>
constexpr int smallest_bfloat16_key() {
  if constexpr (exact_in_bfloat16<T>()) {
    constexpr int q = format_traits<typename T::format>::min_quantum_exponent;
    return q >= -126 ? q + 127 : bf16_key_unsafe;
  } else {
    return bf16_key_unsafe;
  }
}

// out[c * out_stride + r] = in[r * in_stride + c] for r < rows, c < cols (detail/transpose.hpp).
inline void transpose(const float* in, std::size_t in_stride, std::size_t rows, std::size_t cols, float* out,
                      std::size_t out_stride, simd_path path) {
  transpose_words(reinterpret_cast<const unsigned char*>(in), 4 * in_stride, rows, cols,
                  reinterpret_cast<unsigned char*>(out), 4 * out_stride, path);
}

// n values of T to float, exactly, on the bulk conversion kernels of `path`.
template <class T>
void decode_to_float(const T* in, std::size_t n, float* out, simd_path path) {
  if constexpr (std::is_same<T, float>::value) {
    if (n != 0) std::memcpy(out, in, n * sizeof(float));
  } else {
    convert_n_serial(path, in, n, out, rounding::nearest_even, overflow::non_finite, false);
  }
}

// One-byte types whose values are all bfloat16 values: their codes become bf16 codes through a
// table (bfloat16_table_of), with no float in between.
template <class T>
constexpr bool has_bfloat16_table() {
  return exact_in_bfloat16<T>() && sizeof(T) == 1;
}

// The bf16 code of each byte code of a type, and the smallest and largest exponent field among
// its non-zero finite values (a field of 0 there: some value is a bf16 subnormal).
struct bfloat16_table {
  std::array<std::uint16_t, 256> codes{};
  int lowest_field = 255, highest_field = 0;
};

// T's table: each code's entry is the high half of the float the scalar conversion gives, which
// is the value itself (exact_in_bfloat16), and for a NaN code the high half of the NaN that every
// float decode of it returns (bulk kernels send NaN lanes through the scalar conversion).  Bits
// above T's code (fp6, fp4) are never set; their entries repeat the masked codes'.
template <class T>
const bfloat16_table& bfloat16_table_of() {
  static_assert(has_bfloat16_table<T>(), "a one-byte type exact in bfloat16");
  static const bfloat16_table table = [] {
    using traits = format_traits<format_of_t<T>>;
    bfloat16_table t;
    for (unsigned c = 0; c < 256; ++c) {
      const auto code = static_cast<typename traits::storage_type>(c & traits::code_mask);
      const auto word =
          static_cast<std::uint16_t>(bit_cast<std::uint32_t>(static_cast<float>(code_access::make<T>(code))) >> 16);
      t.codes[c] = word;
      const int field = (word & 0x7FFF) >> 7;
      if ((word & 0x7FFF) != 0 && field != 255) {
        t.lowest_field = std::min(t.lowest_field, field);
        t.highest_field = std::max(t.highest_field, field);
      }
    }
    return t;
  }();
  return table;
}

// Rows ahead that a row-by-row reader asks the caches for, and the asking: every cache line of
// the n bytes at p.
constexpr std::size_t prefetch_distance = 4;
inline void prefetch_run(const unsigned char* p, std::size_t n) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  for (std::size_t i = 0; i < n; i += 64) __builtin_prefetch(p + i);
#else
  (void)p, (void)n;
#endif
}

// out[i] = table[in[i]] for i < n, on the vector kernels of `path` where it has them.
inline void lookup_words(const unsigned char* in, std::size_t n, const std::uint16_t* table, std::uint16_t* out,
                         simd_path path) {
#if MIXPREC_X86_SIMD
  if (path == simd_path::avx512 || path == simd_path::avx512_bf16) return gemm_avx512::lookup_words(in, n, table, out);
#else
  (void)path;
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = table[in[i]];
}

// For each of `blocks` blocks of 32 byte codes: out = table.codes[code] (bf16 codes) with
// deltas[b] added to the exponent field of each non-zero word, which multiplies it by
// 2^deltas[b] exactly while every field stays in [1, 254]: failed[b], and its words are not the
// product's (the caller computes the block otherwise), where the table's fields moved by
// deltas[b] may leave that range, or a word of the block is inf or NaN.  The range is the
// table's, not the block's: a block is refused only for a scale at the ends of e8m0's range.
inline void lookup_scaled_blocks(const unsigned char* in, std::size_t blocks, const int* deltas,
                                 const bfloat16_table& table, std::uint16_t* out, bool* failed, simd_path path) {
  for (std::size_t b = 0; b < blocks; ++b) {
    failed[b] = table.lowest_field + deltas[b] < 1 || table.highest_field + deltas[b] > 254;
  }
#if MIXPREC_X86_SIMD
  if (path == simd_path::avx512 || path == simd_path::avx512_bf16) {
    return gemm_avx512::lookup_scaled_blocks(in, blocks, deltas, table.codes.data(), out, failed);
  }
#else
  (void)path;
#endif
  for (std::size_t b = 0; b < blocks; ++b) {
    for (std::size_t i = 32 * b; i < 32 * (b + 1); ++i) {
      const std::uint16_t word = table.codes[in[i]];
      failed[b] = failed[b] || (word & 0x7F80) == 0x7F80;
      const bool zero = (word & 0x7FFF) == 0;
      out[i] = zero ? word : static_cast<std::uint16_t>(word + (static_cast<unsigned>(deltas[b]) << 7));
    }
  }
}

class panel_source {
 public:
  virtual ~panel_source() = default;
  // Every value read is a bfloat16 value (zero, normal, subnormal, inf or NaN): the bf16
  // kernels may take the operand.  A promise: their packing keeps each float's high 16 bits.
  virtual bool exact_in_bfloat16() const noexcept = 0;
  // A lower bound of bf16_key over every value read, or bf16_key_unsafe: the packing then
  // computes the key of every panel.
  virtual int smallest_key() const noexcept = 0;
  // Reading many rows for a few k is the cheap direction (X(r, k), X(r + 1, k) adjacent in
  // memory): the packing then asks for a few k at a time (packing.hpp).
  virtual bool rows_contiguous() const noexcept = 0;
  // out[d * rows + r] = X(row + r, k + d), exactly, for r < rows and d < depth <= max_read_depth
  // (one line of `rows` values per k), decoding on the kernels of `path`.
  virtual void read(std::size_t row, std::size_t rows, std::size_t k, std::size_t depth, float* out,
                    simd_path path) const = 0;
  // The bfloat16 codes of a bf16 source, X(r, k) = codes[r * ld + k] when depth_contiguous, else
  // codes[k * ld + r]; nullptr for any other dtype: packing then moves codes instead of reading
  // floats and keeping their high halves (the same bits, without the decode and the staging).
  virtual const std::uint16_t* bfloat16_codes(std::size_t& ld, bool& depth_contiguous) const noexcept {
    ld = 0;
    depth_contiguous = false;
    return nullptr;
  }
  // For a source that is exact_in_bfloat16: the bf16 codes of a block, the high halves of what
  // read() gives, in the source's cheap order: out[d * ld + r] = code of X(row + r, k + d) when
  // rows_contiguous(), else out[r * ld + d].  False, with nothing written, where the source has
  // no such reader: the packing then reads floats (packing.hpp, pack_pair_panels).
  virtual bool read_bfloat16(std::size_t row, std::size_t rows, std::size_t k, std::size_t depth, std::uint16_t* out,
                             std::size_t ld, simd_path path) const {
    (void)row, (void)rows, (void)k, (void)depth, (void)out, (void)ld, (void)path;
    return false;
  }

 protected:
  panel_source() = default;
  panel_source(const panel_source&) = default;
  panel_source& operator=(const panel_source&) = default;
};

// A row-major array of T seen as a rows x depth matrix: element (r, d) is
// data[r * ld + d] when depth_contiguous, else data[d * ld + r].
template <class T>
class strided_source final : public panel_source {
 public:
  strided_source(const T* data, std::size_t ld, bool depth_contiguous) noexcept
      : data_(data), ld_(ld), depth_contiguous_(depth_contiguous) {}

  bool exact_in_bfloat16() const noexcept override { return detail::exact_in_bfloat16<T>(); }
  int smallest_key() const noexcept override { return smallest_bfloat16_key<T>(); }
  bool rows_contiguous() const noexcept override { return !depth_contiguous_; }
  const std::uint16_t* bfloat16_codes(std::size_t& ld, bool& depth_contiguous) const noexcept override {
    ld = ld_;
    depth_contiguous = depth_contiguous_;
    if constexpr (std::is_same<T, bfloat16>::value) return reinterpret_cast<const std::uint16_t*>(data_);
    return nullptr;
  }

  bool read_bfloat16(std::size_t row, std::size_t rows, std::size_t k, std::size_t depth, std::uint16_t* out,
                     std::size_t ld, simd_path path) const override {
    if constexpr (has_bfloat16_table<T>()) {
      const auto* codes = reinterpret_cast<const unsigned char*>(data_);
      const std::uint16_t* table = bfloat16_table_of<T>().codes.data();
      if (!depth_contiguous_) {
        for (std::size_t d = 0; d < depth; ++d)
          lookup_words(codes + (k + d) * ld_ + row, rows, table, out + d * ld, path);
      } else {
        for (std::size_t r = 0; r < rows; ++r) {
          // The next rows' runs are far apart (ld_ bytes): fetched while this one is looked up.
          if (r + prefetch_distance < rows) prefetch_run(codes + (row + r + prefetch_distance) * ld_ + k, depth);
          lookup_words(codes + (row + r) * ld_ + k, depth, table, out + r * ld, path);
        }
      }
      return true;
    } else {
      return panel_source::read_bfloat16(row, rows, k, depth, out, ld, path);
    }
  }

  void read(std::size_t row, std::size_t rows, std::size_t k, std::size_t depth, float* out,
            simd_path path) const override {
    if (!depth_contiguous_) {  // each k is one run of `rows` values
      for (std::size_t d = 0; d < depth; ++d) decode_to_float(data_ + (k + d) * ld_ + row, rows, out + d * rows, path);
      return;
    }
    // Each row is one run of `depth` values: decode 16 rows, then transpose them out by k.
    constexpr std::size_t rows_at_once = 16;
    alignas(64) float lines[rows_at_once][max_read_depth];
    for (std::size_t r0 = 0; r0 < rows; r0 += rows_at_once) {
      const std::size_t count = rows - r0 < rows_at_once ? rows - r0 : rows_at_once;
      for (std::size_t r = 0; r < count; ++r) {
        decode_to_float(data_ + (row + r0 + r) * ld_ + k, depth, lines[r], path);
      }
      transpose(&lines[0][0], max_read_depth, count, depth, out + r0, rows, path);
    }
  }

 private:
  const T* data_;
  std::size_t ld_;
  bool depth_contiguous_;
};

}  // namespace mixprec::detail
