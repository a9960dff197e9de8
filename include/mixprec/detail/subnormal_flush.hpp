// subnormals::flush: a conversion whose result would lie below the target's smallest normal
// magnitude rounds instead to a multiple of that magnitude, so it gives ±0 or ±min normal.  This
// is CPFloat's CPFLOAT_SUBN_RND (src/cpfloat_template.h: the `ftzthreshold` branches), which
// fixes two choices that the grid {0, min normal} leaves open, and which mixprec follows:
//   - nearest_even sends the tie (half the smallest normal) up to min normal (CPFloat case 1);
//   - to_odd gives min normal for every non-zero input (case 7): zero would claim exactness.
// Every other mode is the ordinary rule on that grid: nearest_away and nearest_zero tie away
// from and toward zero, the directed modes go their way, stochastic rounding goes up with
// probability |x| / min normal (proportional) or 1/2 (equal).  Everything at or above the
// smallest normal, and NaN, infinity and zero, convert exactly as under subnormals::keep.
#pragma once

#include <cstdint>

#include "convert_bits.hpp"
#include "finite_parts.hpp"

namespace mixprec::detail {

// Whether subnormals::flush changes the conversion of this code of From into To: a non-zero
// finite value below To's smallest normal magnitude (that To can hold the sign of).
template <class From, class To>
MIXPREC_HOST_DEVICE constexpr bool flush_applies(std::uint64_t code) noexcept {
  using from = format_traits<From>;
  using to = format_traits<To>;
  if constexpr (!to::has_subnormals) {
    return false;  // e8m0: nothing below its range
  } else {
    code &= from::code_mask;
    if (from::is_nan(code) || from::is_infinity(code) || (from::is_negative(code) && !to::is_signed)) return false;
    const finite_parts p = decompose<From>(code);
    return p.significand != 0 && p.exponent + highest_bit(p.significand) < to::min_exponent;
  }
}

template <class From, class To>
MIXPREC_HOST_DEVICE constexpr typename format_traits<To>::storage_type convert_bits_flushing(
    typename format_traits<From>::storage_type from_code, round_mode mode, overflow o, std::uint32_t random) noexcept {
  using from = format_traits<From>;
  using to = format_traits<To>;
  using codes = special_codes<To>;
  const std::uint64_t code = static_cast<std::uint64_t>(from_code) & from::code_mask;
  if (!flush_applies<From, To>(code)) return convert_bits<From, To>(from_code, mode, o, random);
  // 0 < |x| < 2^min_exponent: the lost part is all of |x|, against a last place of
  // 2^min_exponent, which is 2^shift units of 2^exponent (shift > the significand's top bit).
  const finite_parts p = decompose<From>(code);
  const int shift = to::min_exponent - p.exponent;
  const bool up =
      mode == round_mode::to_odd || round_up(/*last_bit_odd=*/true, p.significand, shift, p.negative, mode, random);
  if (!up) return codes::zero(p.negative, o);
  return codes::with_sign(p.negative, std::uint64_t{1} << to::mantissa_bits);
}

}  // namespace mixprec::detail
