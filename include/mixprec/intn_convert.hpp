// Rounded conversions into the narrow integers (intn.hpp), and out of them into the float formats:
//
//   convert<int4>(x, rounding, overflow)                    x: float, double, a minifloat, an
//                                                           integer or another intn
//   convert_stochastic<int4>(x, random_bits, overflow, stochastic_rule)
//   convert<float8_e4m3fn>(int4 x, rounding, overflow)      an intn into any minifloat / float / double
//
// An integer format is a format whose last place is 1: the exact value of x is cut at 2^0 and
// rounded by the library's one rounding decision (detail::round_up, as every float conversion),
// so every mode, ties and stochastic rounding included, means here what it means for the floats.
// The result is then clamped to [min, max]: both overflow modes saturate, because an integer has
// no infinity or NaN to give (rounding.hpp's non_finite rule "else ±max", as fp6/fp4).  NaN
// gives 0 (as PTX's cvt.sat to an integer and ml_dtypes' cast); an unsigned type clamps negative
// results to 0.  intn's constructors keep ml_dtypes' truncating, wrapping cast instead.
#pragma once

#include <cstdint>
#include <type_traits>

#include "convert.hpp"
#include "detail/round_pack.hpp"
#include "intn.hpp"

namespace mixprec {
namespace detail {

// The code of the integer that (-1)^negative × significand × 2^exponent rounds to, clamped.
template <class T>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE constexpr std::uint8_t round_to_intn(bool negative, std::uint64_t significand,
                                                                              int exponent, round_mode mode,
                                                                              std::uint32_t random) noexcept {
  constexpr int max_magnitude = T::max_value > -T::min_value ? T::max_value : -T::min_value;
  std::int64_t magnitude = 0;
  if (significand == 0) {
    magnitude = 0;
  } else if (exponent + highest_bit(significand) >= 8) {
    magnitude = max_magnitude + 1;  // at least 2^8: beyond every intn, in every mode
  } else if (exponent >= 0) {
    magnitude = static_cast<std::int64_t>(significand << exponent);
  } else {
    // Cut at the last place, 2^0: as round_pack's step 4 with the shift to it.
    const int shift = -exponent;
    std::uint64_t kept = 0, lost = significand;
    if (shift < 64) {
      kept = significand >> shift;
      lost = significand & ((std::uint64_t{1} << shift) - 1);
    }
    if (lost != 0 && round_up((kept & 1) != 0, lost, shift, negative, mode, random)) ++kept;
    magnitude = static_cast<std::int64_t>(kept);
  }
  std::int64_t value = negative ? -magnitude : magnitude;
  value = value < T::min_value ? T::min_value : (value > T::max_value ? T::max_value : value);
  return static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) & T::code_mask);
}

// A code of any float format (float, double and minifloats as ieee_binary32/64 and their
// descriptors), read as convert_bits reads it.
template <class T, class Format>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE constexpr std::uint8_t intn_code_from(
    typename format_traits<Format>::storage_type from_code, round_mode mode, std::uint32_t random) noexcept {
  using from = format_traits<Format>;
  const std::uint64_t code = static_cast<std::uint64_t>(from_code) & from::code_mask;
  const bool negative = from::is_negative(code);
  if (from::is_nan(code)) return 0;
  if (from::is_infinity(code)) return round_to_intn<T>(negative, 1, 8, mode, random);  // 2^8: beyond every intn
  const std::uint64_t magnitude = code & from::magnitude_mask;
  const int field = static_cast<int>(magnitude >> from::mantissa_bits);
  const std::uint64_t mantissa = magnitude & from::mantissa_mask;
  if (field >= from::min_normal_field) {
    return round_to_intn<T>(negative, mantissa | (std::uint64_t{1} << from::mantissa_bits),
                            field - from::bias - from::mantissa_bits, mode, random);
  }
  return round_to_intn<T>(negative, mantissa, from::min_quantum_exponent, mode, random);
}

template <class T, class From>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE constexpr T intn_from(From x, round_mode mode, std::uint32_t random) noexcept {
  // The integer constructor keeps the low Bits bits, which for a code are the code itself: from_bits
  // would check for bits above the width that the rounding never sets, and may throw.
  return T(intn_code_from<T, format_of_t<From>>(code_access::code(x), mode, random));
}

// An integer: exact, so only the clamp acts.
template <class T, class Integer>
MIXPREC_HOST_DEVICE constexpr T intn_from_integer(Integer i) noexcept {
  if constexpr (std::is_signed<Integer>::value) {
    if (i < static_cast<Integer>(T::min_value)) return T(T::min_value);
  }
  if (i > static_cast<Integer>(T::max_value)) return T(T::max_value);
  return T(i);
}

}  // namespace detail

// overflow is accepted for symmetry with the float targets: both modes clamp (see above).
template <class To, std::enable_if_t<detail::is_intn_v<To>, int> = 0>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(float x, rounding r = rounding::nearest_even,
                                                          overflow = overflow::non_finite) noexcept {
  return detail::intn_from<To>(x, detail::to_round_mode(r), 0);
}

template <class To, std::enable_if_t<detail::is_intn_v<To>, int> = 0>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(double x, rounding r = rounding::nearest_even,
                                                          overflow = overflow::non_finite) noexcept {
  return detail::intn_from<To>(x, detail::to_round_mode(r), 0);
}

template <class To, class Format, std::enable_if_t<detail::is_intn_v<To>, int> = 0>
MIXPREC_HOST_DEVICE constexpr To convert(minifloat<Format> x, rounding r = rounding::nearest_even,
                                         overflow = overflow::non_finite) noexcept {
  return detail::intn_from<To>(x, detail::to_round_mode(r), 0);
}

template <
    class To, class Integer,
    std::enable_if_t<detail::is_intn_v<To> && std::is_integral<Integer>::value && !std::is_same<Integer, bool>::value,
                     int> = 0>
MIXPREC_HOST_DEVICE constexpr To convert(Integer i, rounding = rounding::nearest_even,
                                         overflow = overflow::non_finite) noexcept {
  return detail::intn_from_integer<To>(i);
}

// From an intn: its value, as the integer it is (clamped into another intn; rounded into a
// float format that lacks it, e.g. 7 in float4_e2m1fn).
template <class To, int Bits, bool Signed>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(intn<Bits, Signed> x, rounding r = rounding::nearest_even,
                                                          overflow o = overflow::non_finite) noexcept {
  return convert<To>(x.value(), r, o);
}

// One of the two integers around x: stochastic_rule::proportional moves away from zero with
// probability frac(|x|) read to 32 bits, against random_bits (the floats' rule, round_pack.hpp);
// equal_probability with probability 1/2 when x is not an integer.  Then the clamp.
template <class To, std::enable_if_t<detail::is_intn_v<To>, int> = 0>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To
convert_stochastic(float x, std::uint32_t random_bits, overflow = overflow::non_finite,
                   stochastic_rule rule = stochastic_rule::proportional) noexcept {
  return detail::intn_from<To>(x, detail::stochastic_mode(rule), random_bits);
}

template <class To, std::enable_if_t<detail::is_intn_v<To>, int> = 0>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To
convert_stochastic(double x, std::uint32_t random_bits, overflow = overflow::non_finite,
                   stochastic_rule rule = stochastic_rule::proportional) noexcept {
  return detail::intn_from<To>(x, detail::stochastic_mode(rule), random_bits);
}

}  // namespace mixprec
