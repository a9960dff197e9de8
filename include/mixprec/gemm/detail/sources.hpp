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

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "../../bulk/dispatch.hpp"
#include "../../bulk/simd_path.hpp"
#include "../../detail/bits.hpp"
#include "../../detail/transpose.hpp"
#include "../../format.hpp"
#include "../../types.hpp"

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
