// Scalar conversion under every rounding and overflow mode (DESIGN.md, "Conversion").
//
//   convert<To>(x, rounding, overflow)     x: float, double, an integer or any minifloat;
//                                          To: any minifloat, float or double
//   convert_stochastic<To>(x, random_bits, overflow)
//
// Each is correctly rounded from the exact value of x: a double is never rounded through float
// first, and a conversion between two minifloats rounds once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "minifloat.hpp"
#include "rounding.hpp"

namespace mixprec {

template <class To>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(float x, rounding r = rounding::nearest_even,
                                                          overflow o = overflow::non_finite) noexcept {
  return detail::convert_value<To>(x, detail::to_round_mode(r), o, 0);
}

template <class To>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(double x, rounding r = rounding::nearest_even,
                                                          overflow o = overflow::non_finite) noexcept {
  return detail::convert_value<To>(x, detail::to_round_mode(r), o, 0);
}

template <class To, class Format>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(minifloat<Format> x, rounding r = rounding::nearest_even,
                                                          overflow o = overflow::non_finite) noexcept {
  return detail::convert_value<To>(x, detail::to_round_mode(r), o, 0);
}

template <class To, class Integer,
          std::enable_if_t<std::is_integral<Integer>::value && !std::is_same<Integer, bool>::value, int> = 0>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(Integer i, rounding r = rounding::nearest_even,
                                                          overflow o = overflow::non_finite) noexcept {
  return detail::code_access::make<To>(
      detail::convert_integer<detail::format_of_t<To>>(i, detail::to_round_mode(r), o, 0));
}

// Stochastic rounding: one of the two neighbours of x, the one farther from zero with
// probability |x - toward_zero(x)| / gap.  That fraction is read to 32 bits (truncated) and
// compared with random_bits, so for uniformly random bits the probability is exact to 2^-32.
// Values the format holds exactly never move.
template <class To>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert_stochastic(float x, std::uint32_t random_bits,
                                                                     overflow o = overflow::non_finite) noexcept {
  return detail::convert_value<To>(x, detail::round_mode::stochastic, o, random_bits);
}

template <class To>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert_stochastic(double x, std::uint32_t random_bits,
                                                                     overflow o = overflow::non_finite) noexcept {
  return detail::convert_value<To>(x, detail::round_mode::stochastic, o, random_bits);
}

}  // namespace mixprec
