// Scalar conversion under every rounding and overflow mode (DESIGN.md, "Conversion").
//
//   convert<To>(x, rounding, overflow, subnormals)
//                                          x: float, double, an integer or any minifloat;
//                                          To: any minifloat, float or double
//   convert_stochastic<To>(x, random_bits, overflow, stochastic_rule, subnormals)
//
// Each is correctly rounded from the exact value of x: a double is never rounded through float
// first, and a conversion between two minifloats rounds once.  subnormals::flush rounds results
// below To's normal range to ±0 or ±min normal instead (detail/subnormal_flush.hpp).
#pragma once

#include <cstdint>
#include <type_traits>

#include "detail/subnormal_flush.hpp"
#include "minifloat.hpp"
#include "rounding.hpp"

namespace mixprec {
namespace detail {
// convert_value under a subnormal policy.
template <class To, class From>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE constexpr To convert_value(From x, round_mode mode, overflow o, subnormals s,
                                                                    std::uint32_t random) noexcept {
  if (s == subnormals::flush) {
    return code_access::make<To>(
        convert_bits_flushing<format_of_t<From>, format_of_t<To>>(code_access::code(x), mode, o, random));
  }
  return convert_value<To>(x, mode, o, random);
}
}  // namespace detail

// To is float, double or a minifloat (format_of_t<To> exists); the narrow integers' overloads are
// in intn_convert.hpp.
template <class To, class = detail::format_of_t<To>>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(float x, rounding r = rounding::nearest_even,
                                                          overflow o = overflow::non_finite,
                                                          subnormals s = subnormals::keep) noexcept {
  return detail::convert_value<To>(x, detail::to_round_mode(r), o, s, 0);
}

template <class To, class = detail::format_of_t<To>>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(double x, rounding r = rounding::nearest_even,
                                                          overflow o = overflow::non_finite,
                                                          subnormals s = subnormals::keep) noexcept {
  return detail::convert_value<To>(x, detail::to_round_mode(r), o, s, 0);
}

template <class To, class Format, class = detail::format_of_t<To>>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(minifloat<Format> x, rounding r = rounding::nearest_even,
                                                          overflow o = overflow::non_finite,
                                                          subnormals s = subnormals::keep) noexcept {
  return detail::convert_value<To>(x, detail::to_round_mode(r), o, s, 0);
}

template <class To, class Integer, class = detail::format_of_t<To>,
          std::enable_if_t<std::is_integral<Integer>::value && !std::is_same<Integer, bool>::value, int> = 0>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To convert(Integer i, rounding r = rounding::nearest_even,
                                                          overflow o = overflow::non_finite) noexcept {
  return detail::code_access::make<To>(
      detail::convert_integer<detail::format_of_t<To>>(i, detail::to_round_mode(r), o, 0));
}

// Stochastic rounding: one of the two neighbours of x.  stochastic_rule::proportional takes the
// one farther from zero with probability |x - toward_zero(x)| / gap: that fraction is read to
// 32 bits (truncated) and compared with random_bits, so for uniformly random bits the
// probability is exact to 2^-32.  stochastic_rule::equal_probability takes it when the top bit
// of random_bits is set: probability 1/2 exactly.  Values the format holds exactly never move.
template <class To, class = detail::format_of_t<To>>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To
convert_stochastic(float x, std::uint32_t random_bits, overflow o = overflow::non_finite,
                   stochastic_rule rule = stochastic_rule::proportional, subnormals s = subnormals::keep) noexcept {
  return detail::convert_value<To>(x, detail::stochastic_mode(rule), o, s, random_bits);
}

template <class To, class = detail::format_of_t<To>>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To
convert_stochastic(double x, std::uint32_t random_bits, overflow o = overflow::non_finite,
                   stochastic_rule rule = stochastic_rule::proportional, subnormals s = subnormals::keep) noexcept {
  return detail::convert_value<To>(x, detail::stochastic_mode(rule), o, s, random_bits);
}

}  // namespace mixprec
