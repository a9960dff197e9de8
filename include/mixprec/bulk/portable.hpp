// The portable path: the kernels of kernels.inl on GCC / Clang generic vectors of 4 lanes,
// which the compiler lowers to the target's vector instructions (SSE2 on baseline x86-64, NEON
// on AArch64, ...).  No intrinsics, no target attributes: this is what runs on CPUs the x86
// paths do not cover, and it gives the same bits as every other path (tests/bulk runs it as one
// of the paths).  Other compilers (MSVC), and CUDA translation units (whose front end need not
// know generic vectors), use the scalar loop instead: MIXPREC_PORTABLE_KERNELS is 0 there.
//
// Every operation is defined for every input (shifts by 32 or more give 0, as the x86
// variable shifts do), so a lane the kernel later discards never meets undefined behaviour.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../detail/bits.hpp"
#include "../detail/constexpr_math.hpp"
#include "../detail/convert_bits.hpp"
#include "../detail/philox.hpp"
#include "../minifloat.hpp"

#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define MIXPREC_PORTABLE_KERNELS 1
#else
#define MIXPREC_PORTABLE_KERNELS 0
#endif

#if MIXPREC_PORTABLE_KERNELS
namespace mixprec::detail::simd_portable {

struct ops {
  // GCC / Clang generic vectors of 16 bytes, the register of SSE2 and NEON: element-wise
  // operators that the compiler lowers to the target's instructions (wider vectors would be
  // split again on those targets, and passing them by value draws -Wpsabi warnings).
  // Comparisons give all-ones / zero lanes.
  static constexpr int width = 4;
  typedef std::uint32_t vec __attribute__((vector_size(16)));
  typedef std::int32_t signed_vec __attribute__((vector_size(16)));
  typedef float float_vec __attribute__((vector_size(16)));
  typedef std::uint64_t wide_vec __attribute__((vector_size(32)));
  typedef std::uint8_t byte_vec __attribute__((vector_size(4)));
  typedef std::uint16_t half_word_vec __attribute__((vector_size(8)));
  using mask = vec;
  static constexpr unsigned all_lanes = 0xFu;
  static constexpr std::size_t register_bytes = 16;
  static constexpr bool has_half_instructions = false;

  static MIXPREC_SIMD_INLINE vec set1(std::uint32_t x) { return vec{} + x; }
  static MIXPREC_SIMD_INLINE vec load(const void* p) {
    vec r;
    std::memcpy(&r, p, sizeof(r));
    return r;
  }
  // `stream` has no portable meaning: the dispatcher never asks the portable path for it.
  static MIXPREC_SIMD_INLINE void store(void* p, vec v, bool) { std::memcpy(p, &v, sizeof(v)); }
  template <int Bits>
  static MIXPREC_SIMD_INLINE vec load_codes(const void* p) {
    if constexpr (Bits == 8) {
      byte_vec codes;
      std::memcpy(&codes, p, sizeof(codes));
      return __builtin_convertvector(codes, vec);
    } else {
      half_word_vec codes;
      std::memcpy(&codes, p, sizeof(codes));
      return __builtin_convertvector(codes, vec);
    }
  }
  template <int Bits>
  static MIXPREC_SIMD_INLINE void store_codes(void* p, vec v, bool) {
    if constexpr (Bits == 6) {  // four codes in three bytes, e0 | e1 << 6 | e2 << 12 | e3 << 18; the codes below 64
      static_assert(width == 4, "one group of four codes per vector");
      const std::uint32_t word = v[0] | v[1] << 6 | v[2] << 12 | v[3] << 18;
      const unsigned char bytes[3] = {static_cast<unsigned char>(word), static_cast<unsigned char>(word >> 8),
                                      static_cast<unsigned char>(word >> 16)};
      std::memcpy(p, bytes, sizeof bytes);
    } else if constexpr (Bits == 4) {  // two codes per byte, lane 2k's in the low nibble; the codes below 16
      const unsigned char bytes[2] = {static_cast<unsigned char>(v[0] | v[1] << 4),
                                      static_cast<unsigned char>(v[2] | v[3] << 4)};
      std::memcpy(p, bytes, sizeof bytes);
    } else if constexpr (Bits == 8) {
      const byte_vec codes = __builtin_convertvector(v, byte_vec);
      std::memcpy(p, &codes, sizeof(codes));
    } else {
      const half_word_vec codes = __builtin_convertvector(v, half_word_vec);
      std::memcpy(p, &codes, sizeof(codes));
    }
  }
  template <int Bits, std::size_t Group>
  static MIXPREC_SIMD_INLINE void store_code_group(void* p, const vec* codes, bool stream) {
    for (std::size_t g = 0; g < Group; ++g) {
      store_codes<Bits>(static_cast<unsigned char*>(p) + g * width * Bits / 8, codes[g], stream);
    }
  }

  static MIXPREC_SIMD_INLINE vec and_(vec a, vec b) { return a & b; }
  static MIXPREC_SIMD_INLINE vec andnot(vec a, vec b) { return ~a & b; }
  static MIXPREC_SIMD_INLINE vec or_(vec a, vec b) { return a | b; }
  static MIXPREC_SIMD_INLINE vec xor_(vec a, vec b) { return a ^ b; }
  static MIXPREC_SIMD_INLINE vec or_and(vec a, vec b, vec c) { return a | (b & c); }
  static MIXPREC_SIMD_INLINE vec add(vec a, vec b) { return a + b; }
  static MIXPREC_SIMD_INLINE vec sub(vec a, vec b) { return a - b; }
  static MIXPREC_SIMD_INLINE vec select(mask m, vec if_set, vec if_clear) { return (m & if_set) | (~m & if_clear); }
  static MIXPREC_SIMD_INLINE vec min_u(vec a, vec b) { return select(a < b, a, b); }
  static MIXPREC_SIMD_INLINE vec max_u(vec a, vec b) { return select(a > b, a, b); }
  static MIXPREC_SIMD_INLINE vec min_i(vec a, vec b) { return select(less(a, b), a, b); }
  static MIXPREC_SIMD_INLINE vec max_i(vec a, vec b) { return select(less(b, a), a, b); }
  static MIXPREC_SIMD_INLINE std::uint32_t horizontal_max_u(vec a) {
    std::uint32_t m = 0;
    for (int i = 0; i < width; ++i) m = a[i] > m ? a[i] : m;
    return m;
  }
  // Lane j: the largest unsigned lane of v[j].
  static MIXPREC_SIMD_INLINE vec horizontal_max_u_each(const vec* v) {
    vec each{};
    for (int j = 0; j < width; ++j) each[j] = horizontal_max_u(v[static_cast<std::size_t>(j)]);
    return each;
  }
  template <int N>
  static MIXPREC_SIMD_INLINE vec shift_right(vec a) {
    return a >> N;
  }
  template <int N>
  static MIXPREC_SIMD_INLINE vec shift_left(vec a) {
    return a << N;
  }
  // Counts of 32 or more give 0, as the x86 variable shifts do.
  static MIXPREC_SIMD_INLINE vec shift_right_each(vec a, vec counts) {
    return (a >> (counts & 31u)) & reinterpret_cast<vec>(counts < 32u);
  }
  static MIXPREC_SIMD_INLINE vec shift_left_each(vec a, vec counts) {
    return (a << (counts & 31u)) & reinterpret_cast<vec>(counts < 32u);
  }
  static MIXPREC_SIMD_INLINE vec sign_fill(vec a) {
    return reinterpret_cast<vec>(reinterpret_cast<signed_vec>(a) >> 31);
  }
  // Signed comparisons, as on x86 (the kernels compare values below 2^31 only).
  static MIXPREC_SIMD_INLINE mask less(vec a, vec b) {
    return reinterpret_cast<mask>(reinterpret_cast<signed_vec>(a) < reinterpret_cast<signed_vec>(b));
  }
  static MIXPREC_SIMD_INLINE mask less_equal(vec a, vec b) {
    return reinterpret_cast<mask>(reinterpret_cast<signed_vec>(a) <= reinterpret_cast<signed_vec>(b));
  }
  static MIXPREC_SIMD_INLINE mask equal(vec a, vec b) { return reinterpret_cast<mask>(a == b); }
  static MIXPREC_SIMD_INLINE mask both(mask a, mask b) { return a & b; }
  static MIXPREC_SIMD_INLINE mask either(mask a, mask b) { return a | b; }
  static MIXPREC_SIMD_INLINE mask but_not(mask a, mask b) { return a & ~b; }
  static MIXPREC_SIMD_INLINE unsigned lanes(mask m) {
    unsigned bits = 0;
    for (int i = 0; i < width; ++i) bits |= (m[i] & 1u) << i;
    return bits;
  }
  // Float arithmetic on the lanes' bits: one IEEE operation each, as in the scalar code.
  static MIXPREC_SIMD_INLINE vec multiply_float(vec float_bits, float factor) {
    return reinterpret_cast<vec>(reinterpret_cast<float_vec>(float_bits) * factor);
  }
  static MIXPREC_SIMD_INLINE vec add_float(vec a, vec b) {
    return reinterpret_cast<vec>(reinterpret_cast<float_vec>(a) + reinterpret_cast<float_vec>(b));
  }
  static MIXPREC_SIMD_INLINE vec subtract_float(vec a, vec b) {
    return reinterpret_cast<vec>(reinterpret_cast<float_vec>(a) - reinterpret_cast<float_vec>(b));
  }
  // The value, hidden from the optimiser: a product passed through it is never fused with a
  // later addition (contraction into an FMA).  A memory operand: the one constraint every target
  // has for a 16-byte vector.
  static MIXPREC_SIMD_INLINE vec opaque(vec a) {
    asm("" : "+m"(a));
    return a;
  }
  static MIXPREC_SIMD_INLINE vec divide_float(vec float_bits, float divisor) {
    return reinterpret_cast<vec>(reinterpret_cast<float_vec>(float_bits) / divisor);
  }
  static MIXPREC_SIMD_INLINE vec int_to_float_bits_scaled(vec a, float scale) {
    return reinterpret_cast<vec>(__builtin_convertvector(reinterpret_cast<signed_vec>(a), float_vec) * scale);
  }
  // round(float lanes × scale) to integers, to nearest even or toward zero, whatever the
  // floating-point environment's rounding mode (the kernels call it for |values| < 2^24, where
  // the product and the difference below are exact).
  template <bool TowardZero>
  static MIXPREC_SIMD_INLINE vec round_scaled_to_int(vec float_bits, float scale) {
    const float_vec scaled = reinterpret_cast<float_vec>(float_bits) * scale;
    const signed_vec truncated = __builtin_convertvector(scaled, signed_vec);  // toward zero
    if constexpr (TowardZero) {
      return reinterpret_cast<vec>(truncated);
    } else {
      const float_vec rest = scaled - __builtin_convertvector(truncated, float_vec);
      const signed_vec odd = truncated & 1;
      const signed_vec up = (rest > 0.5f) | ((rest == 0.5f) & (odd != 0));  // -1 where rounding up
      return reinterpret_cast<vec>(truncated - up);
    }
  }
  // Philox-4x32 (kernels::philox_lanes): the 64-bit product's halves, lane numbers, and the
  // transposition from one block per lane to consecutive words (see x86/avx512.hpp).
  static MIXPREC_SIMD_INLINE vec multiply_low(vec a, std::uint32_t m) { return a * m; }
  static MIXPREC_SIMD_INLINE vec multiply_high(vec a, std::uint32_t m) {
    return __builtin_convertvector((__builtin_convertvector(a, wide_vec) * std::uint64_t{m}) >> 32, vec);
  }
  static MIXPREC_SIMD_INLINE vec lane_numbers() { return vec{0, 1, 2, 3}; }
  static MIXPREC_SIMD_INLINE void transpose_blocks(const vec* w, vec* e) {
    for (int j = 0; j < 4; ++j) {
      vec words{};  // built whole, then stored: e may be uninitialised storage
      for (int t = 0; t < width; ++t) words[t] = w[(width * j + t) % 4][(width * j + t) / 4];
      e[j] = words;
    }
  }
};

#include "kernels.inl"

}  // namespace mixprec::detail::simd_portable
#endif
