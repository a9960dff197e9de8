// sqrt and fma: correctly rounded without any approximation.
//
// sqrt evaluates in the format's arithmetic type (float for the 8-bit and smaller formats,
// double for float16, bfloat16 and e8m0; detail::arithmetic_type_of), whose square root is
// correctly rounded (IEEE 754-2019 §5.4.1), and rounds once more into the format.  That double
// rounding is innocuous because the arithmetic type has q >= 2p + 2 bits (Figueroa, "When is
// double rounding innocuous?", SIGNUM Newsletter 30(3), 1995).
//
// fma evaluates x × y exactly in double (at most 2 × 25 significand bits, within double's
// normal range: detail::arithmetic_type_of checks both), adds z with an error-free TwoSum and
// folds the error into the last bit by round-to-odd; rounding that to nearest into the format
// is the correctly rounded x × y + z (Boldo & Melquiond, IEEE Trans. Computers 57(4), 2008).
#pragma once

#include <type_traits>

#include "../minifloat.hpp"
#include "basic.hpp"
#include "correct_rounding.hpp"
#include "nan.hpp"

namespace mixprec {

// √x.  sqrt(±0) = ±0, sqrt(+inf) = +inf, sqrt(x < 0) = NaN (invalid) (F.10.4.5).
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> sqrt(minifloat<Format> x) noexcept {
  using wide = typename detail::arithmetic_type_of<Format>::type;
  if (isnan(x)) return detail::quieted(x);
  const wide w = static_cast<wide>(x);
  if (w < 0) return detail::invalid_operation<Format>();
  return minifloat<Format>(detail::libm::sqrt(w));
}

// x × y + z rounded once.  A NaN operand gives the first NaN operand, quieted; otherwise
// inf × 0 and inf - inf are invalid (NaN), as IEEE 754-2019 §7.2 (c) and (d).  An exact zero
// sum is +0 unless both addends are -0 (§6.3).
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> fma(minifloat<Format> x, minifloat<Format> y, minifloat<Format> z) noexcept {
  using T = minifloat<Format>;
  // arithmetic_type_of rejects formats whose products double cannot hold exactly.
  static_assert(std::is_floating_point<typename detail::arithmetic_type_of<Format>::type>::value,
                "fma computes the product in double");
  if (isnan(x) || isnan(y)) return detail::first_nan(x, y);
  if (isnan(z)) return detail::quieted(z);
  const double product = static_cast<double>(x) * static_cast<double>(y);  // exact
  const double addend = static_cast<double>(z);
  if (!detail::libm::is_finite(product) || !detail::libm::is_finite(addend)) {
    const double sum = product + addend;  // the IEEE result for infinite operands
    return sum == sum ? T(sum) : detail::invalid_operation<Format>();
  }
  const detail::double_double sum = detail::two_sum(product, addend);
  return T(detail::round_to_odd(sum.hi, sum.lo));
}

}  // namespace mixprec
