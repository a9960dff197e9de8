// The portable path: the kernels of kernels.inl over plain arrays of 16 lanes, each operation a
// fixed-length loop that any optimising compiler turns into the target's vector instructions
// (SSE2 on baseline x86-64, NEON on AArch64, ...).  No intrinsics, no target attributes: this is
// what runs on CPUs and compilers the x86 paths do not cover, and it gives the same bits as
// every other path (tests/bulk runs it as one of the paths).
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

namespace mixprec::detail::simd_portable {

struct ops {
  static constexpr int width = 16;
  struct vec {
    std::uint32_t lane[width];
  };
  using mask = vec;  // all ones or all zeros per lane
  static constexpr unsigned all_lanes = 0xFFFFu;
  static constexpr std::size_t register_bytes = 64;
  static constexpr bool has_half_instructions = false;

  template <class F>
  static MIXPREC_SIMD_INLINE vec map(F f) {
    vec r;
    for (int i = 0; i < width; ++i) r.lane[i] = f(i);
    return r;
  }
  static MIXPREC_SIMD_INLINE std::uint32_t all_or_none(bool b) { return b ? 0xFFFFFFFFu : 0u; }
  static MIXPREC_SIMD_INLINE std::int32_t as_signed(std::uint32_t x) { return static_cast<std::int32_t>(x); }
  static MIXPREC_SIMD_INLINE float as_float(std::uint32_t x) { return bit_cast<float>(x); }

  static MIXPREC_SIMD_INLINE vec set1(std::uint32_t x) {
    return map([x](int) { return x; });
  }
  static MIXPREC_SIMD_INLINE vec load(const void* p) {
    vec r;
    std::memcpy(r.lane, p, sizeof(r.lane));
    return r;
  }
  // `stream` has no portable meaning: the dispatcher never asks the portable path for it.
  static MIXPREC_SIMD_INLINE void store(void* p, vec v, bool) { std::memcpy(p, v.lane, sizeof(v.lane)); }
  template <int Bits>
  static MIXPREC_SIMD_INLINE vec load_codes(const void* p) {
    const auto* bytes = static_cast<const unsigned char*>(p);
    if constexpr (Bits == 8) {
      return map([bytes](int i) { return std::uint32_t{bytes[i]}; });
    } else {
      return map([bytes](int i) {
        std::uint16_t code;
        std::memcpy(&code, bytes + 2 * i, 2);
        return std::uint32_t{code};
      });
    }
  }
  template <int Bits>
  static MIXPREC_SIMD_INLINE void store_codes(void* p, vec v, bool) {
    auto* bytes = static_cast<unsigned char*>(p);
    for (int i = 0; i < width; ++i) {
      if constexpr (Bits == 8) {
        bytes[i] = static_cast<unsigned char>(v.lane[i]);
      } else {
        const auto code = static_cast<std::uint16_t>(v.lane[i]);
        std::memcpy(bytes + 2 * i, &code, 2);
      }
    }
  }
  template <int Bits, std::size_t Group>
  static MIXPREC_SIMD_INLINE void store_code_group(void* p, const vec* codes, bool stream) {
    for (std::size_t g = 0; g < Group; ++g) {
      store_codes<Bits>(static_cast<unsigned char*>(p) + g * width * Bits / 8, codes[g], stream);
    }
  }

  static MIXPREC_SIMD_INLINE vec and_(vec a, vec b) {
    return map([&](int i) { return a.lane[i] & b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE vec andnot(vec a, vec b) {  // ~a & b
    return map([&](int i) { return ~a.lane[i] & b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE vec or_(vec a, vec b) {
    return map([&](int i) { return a.lane[i] | b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE vec xor_(vec a, vec b) {
    return map([&](int i) { return a.lane[i] ^ b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE vec or_and(vec a, vec b, vec c) {  // a | (b & c)
    return map([&](int i) { return a.lane[i] | (b.lane[i] & c.lane[i]); });
  }
  static MIXPREC_SIMD_INLINE vec add(vec a, vec b) {
    return map([&](int i) { return a.lane[i] + b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE vec sub(vec a, vec b) {
    return map([&](int i) { return a.lane[i] - b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE vec min_u(vec a, vec b) {
    return map([&](int i) { return a.lane[i] < b.lane[i] ? a.lane[i] : b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE vec max_u(vec a, vec b) {
    return map([&](int i) { return a.lane[i] > b.lane[i] ? a.lane[i] : b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE vec min_i(vec a, vec b) {
    return map([&](int i) { return as_signed(a.lane[i]) < as_signed(b.lane[i]) ? a.lane[i] : b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE vec max_i(vec a, vec b) {
    return map([&](int i) { return as_signed(a.lane[i]) > as_signed(b.lane[i]) ? a.lane[i] : b.lane[i]; });
  }
  static MIXPREC_SIMD_INLINE std::uint32_t horizontal_max_u(vec a) {
    std::uint32_t m = 0;
    for (int i = 0; i < width; ++i) m = a.lane[i] > m ? a.lane[i] : m;
    return m;
  }
  template <int N>
  static MIXPREC_SIMD_INLINE vec shift_right(vec a) {
    return map([&](int i) { return a.lane[i] >> N; });
  }
  template <int N>
  static MIXPREC_SIMD_INLINE vec shift_left(vec a) {
    return map([&](int i) { return a.lane[i] << N; });
  }
  static MIXPREC_SIMD_INLINE vec shift_right_each(vec a, vec counts) {
    return map([&](int i) { return counts.lane[i] < 32 ? a.lane[i] >> counts.lane[i] : 0u; });
  }
  static MIXPREC_SIMD_INLINE vec shift_left_each(vec a, vec counts) {
    return map([&](int i) { return counts.lane[i] < 32 ? a.lane[i] << counts.lane[i] : 0u; });
  }
  static MIXPREC_SIMD_INLINE vec sign_fill(vec a) {
    return map([&](int i) { return all_or_none((a.lane[i] >> 31) != 0); });
  }
  // Signed comparisons, as on x86 (the kernels compare values below 2^31 only).
  static MIXPREC_SIMD_INLINE mask less(vec a, vec b) {
    return map([&](int i) { return all_or_none(as_signed(a.lane[i]) < as_signed(b.lane[i])); });
  }
  static MIXPREC_SIMD_INLINE mask less_equal(vec a, vec b) {
    return map([&](int i) { return all_or_none(as_signed(a.lane[i]) <= as_signed(b.lane[i])); });
  }
  static MIXPREC_SIMD_INLINE mask equal(vec a, vec b) {
    return map([&](int i) { return all_or_none(a.lane[i] == b.lane[i]); });
  }
  static MIXPREC_SIMD_INLINE mask both(mask a, mask b) { return and_(a, b); }
  static MIXPREC_SIMD_INLINE mask either(mask a, mask b) { return or_(a, b); }
  static MIXPREC_SIMD_INLINE mask but_not(mask a, mask b) { return andnot(b, a); }
  static MIXPREC_SIMD_INLINE vec select(mask m, vec if_set, vec if_clear) {
    return map([&](int i) { return (m.lane[i] & if_set.lane[i]) | (~m.lane[i] & if_clear.lane[i]); });
  }
  static MIXPREC_SIMD_INLINE unsigned lanes(mask m) {
    unsigned bits = 0;
    for (int i = 0; i < width; ++i) bits |= (m.lane[i] & 1u) << i;
    return bits;
  }
  // Float arithmetic on the lanes' bits: one IEEE operation each, as in the scalar code.
  static MIXPREC_SIMD_INLINE vec multiply_float(vec float_bits, float factor) {
    return map([&](int i) { return bit_cast<std::uint32_t>(as_float(float_bits.lane[i]) * factor); });
  }
  static MIXPREC_SIMD_INLINE vec int_to_float_bits_scaled(vec a, float scale) {
    return map([&](int i) { return bit_cast<std::uint32_t>(static_cast<float>(as_signed(a.lane[i])) * scale); });
  }
  // round(float lanes × scale) to integers, to nearest even or toward zero, whatever the
  // floating-point environment's rounding mode (the kernels call it for |values| < 2^24, where
  // the product and the difference below are exact).
  template <bool TowardZero>
  static MIXPREC_SIMD_INLINE vec round_scaled_to_int(vec float_bits, float scale) {
    return map([&](int i) {
      const float scaled = as_float(float_bits.lane[i]) * scale;
      auto truncated = static_cast<std::int32_t>(scaled);
      if (!TowardZero) {
        const float rest = scaled - static_cast<float>(truncated);
        truncated += rest > 0.5f || (rest == 0.5f && (truncated & 1) != 0) ? 1 : 0;
      }
      return static_cast<std::uint32_t>(truncated);
    });
  }
  // Philox-4x32 (kernels::philox_lanes): the 64-bit product's halves, lane numbers, and the
  // transposition from one block per lane to consecutive words (see x86/avx512.hpp).
  static MIXPREC_SIMD_INLINE vec multiply_low(vec a, std::uint32_t m) {
    return map([&](int i) { return a.lane[i] * m; });
  }
  static MIXPREC_SIMD_INLINE vec multiply_high(vec a, std::uint32_t m) {
    return map([&](int i) { return static_cast<std::uint32_t>((std::uint64_t{a.lane[i]} * m) >> 32); });
  }
  static MIXPREC_SIMD_INLINE vec lane_numbers() {
    return map([](int i) { return static_cast<std::uint32_t>(i); });
  }
  static MIXPREC_SIMD_INLINE void transpose_blocks(const vec* w, vec* e) {
    for (int j = 0; j < 4; ++j) {
      e[j] = map([&](int t) { return w[(width * j + t) % 4].lane[(width * j + t) / 4]; });
    }
  }
};

#include "kernels.inl"

}  // namespace mixprec::detail::simd_portable
