// pow(x, y), correctly rounded, with the special values of C17 Annex F.10.4.4 (which IEEE
// 754-2019 §9.2.1 pow shares).
//
// Unlike e^x, x^y is often exact, and can then lie exactly on a rounding boundary (169^1.5 =
// 2197 is a float16 midpoint).  The kernel's exact case finds every x^y that is a binary
// fraction: with x = m 2^e (m odd) and y = n 2^-k (n odd), x^y is rational only when m is a
// perfect 2^k-th power, and a binary fraction only when, after taking that root, the power is
// non-negative or m = 1; such a result is computed exactly in integers.  Every other x^y is
// irrational or a non-binary fraction, never on a boundary, and the double-double evaluation
// decides it.
#pragma once

#include <cstdint>

#include "../minifloat.hpp"
#include "basic.hpp"
#include "correct_rounding.hpp"
#include "exponential.hpp"
#include "nan.hpp"

namespace mixprec {
namespace detail {

// A positive normal double as odd × 2^exponent.
struct odd_parts {
  std::uint64_t odd;
  int exponent;
};

MIXPREC_HOST_DEVICE inline odd_parts odd_decompose(double x) noexcept {
  const std::uint64_t bits = bit_cast<std::uint64_t>(x) & 0x7FFFFFFFFFFFFFFF;
  odd_parts parts{(bits & 0x000FFFFFFFFFFFFF) | (std::uint64_t{1} << 52), static_cast<int>(bits >> 52) - 1075};
  while ((parts.odd & 1) == 0) {
    parts.odd >>= 1;
    ++parts.exponent;
  }
  return parts;
}

// floor(sqrt(m)) for m < 2^53.
MIXPREC_HOST_DEVICE inline std::uint64_t integer_sqrt(std::uint64_t m) noexcept {
  auto root = static_cast<std::uint64_t>(libm::sqrt(static_cast<double>(m)));
  while (root * root > m) --root;
  while ((root + 1) * (root + 1) <= m) ++root;
  return root;
}

struct pow_kernel {
  double x;  // finite, > 0, != 1
  double y;  // finite, != 0

  MIXPREC_HOST_DEVICE double approximate() const noexcept { return positive_or_smallest(libm::pow(x, y)); }

  MIXPREC_HOST_DEVICE bool exact(double* result) const noexcept {
    odd_parts base = odd_decompose(x);
    const odd_parts power = odd_decompose(y);  // |y| = power.odd × 2^power.exponent
    if (base.odd == 1) {
      // x = 2^e: x^y = 2^(e y), a binary fraction exactly when e y is an integer (e y is exact
      // in double: |e| < 2^11 and y has at most 25 significant bits).
      const double t = static_cast<double>(base.exponent) * y;
      if (!is_integral(t)) return false;
      *result = exact_power_of_two(t);
      return true;
    }
    // y = ±n / 2^k with k > 0: take the 2^k-th root of x, which must be exact.  An odd m > 1
    // with an exact 2^6-th root is at least 3^64 > 2^53, so k <= 5.
    std::int64_t n = 0;
    if (power.exponent < 0) {
      const int k = -power.exponent;
      if (k > 5 || base.exponent % (1 << k) != 0) return false;
      for (int i = 0; i < k; ++i) {
        const std::uint64_t root = integer_sqrt(base.odd);
        if (root * root != base.odd) return false;
        base.odd = root;
      }
      base.exponent /= 1 << k;
      n = static_cast<std::int64_t>(power.odd);
    } else {
      // y = n, an integer.  m^n < 2^64 needs n < 41 (m >= 3).
      if (power.exponent > 6 || power.odd > 64) return false;
      n = static_cast<std::int64_t>(power.odd << power.exponent);
      if (n > 64) return false;
    }
    // 1 / m^n with m > 1 odd is not a binary fraction.
    if (y < 0) return false;
    std::uint64_t value = 1;
    for (std::int64_t i = 0; i < n; ++i) {
      if (value > ~std::uint64_t{0} / base.odd) return false;  // over 64 bits: odd, so never a boundary
      value *= base.odd;
    }
    const auto exponent = static_cast<int>(base.exponent * n);
    *result = bit_cast<double>(static_cast<std::uint64_t>(
        round_pack<ieee_binary64>(false, value, exponent, round_mode::to_odd, overflow::saturate, 0)));
    return true;
  }

  MIXPREC_HOST_DEVICE refined_value refine() const noexcept {
    double t = 0.0;
    const double_double value = dd_pow(x, y, &t);
    // The error of t = y ln x, |t| 2^-101, moves e^t by as much again relatively.  Past |t| = 800
    // e^t is beyond double's range (and every format's) whatever that error: no error at all
    // can change its rounding.
    return {value, t > 800.0 ? 0.0 : (t + 1.0) * refined_relative_error};
  }
};

}  // namespace detail

// x^y.  In order (F.10.4.4): pow(x, ±0) = 1 for every x, NaN included; pow(+1, y) = 1 for every
// y, NaN included; otherwise a NaN operand gives NaN; pow(±0, y) = ±inf for y a negative odd
// integer, +inf for other y < 0, ±0 for y a positive odd integer, +0 for other y > 0;
// pow(-1, ±inf) = 1; pow(x, -inf) = +inf for |x| < 1, +0 for |x| > 1; pow(x, +inf) = +0 for
// |x| < 1, +inf for |x| > 1; pow(-inf, y) = -0 / +0 / -inf / +inf for y a negative odd integer
// / other negative / positive odd integer / other positive; pow(+inf, y) = +0 for y < 0, +inf
// for y > 0; pow(x < 0 finite, y finite non-integral) = NaN (invalid).  For x < 0 and integral
// y, pow(x, y) = ±pow(-x, y), negative for odd y.
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> pow(minifloat<Format> x, minifloat<Format> y) noexcept {
  using T = minifloat<Format>;
  const double u = static_cast<double>(x);
  const double v = static_cast<double>(y);
  if (v == 0.0 || u == 1.0) return T(1.0);
  if (isnan(x) || isnan(y)) return detail::first_nan(x, y);
  const bool integral = detail::is_integral(v);
  const bool odd = integral && detail::libm::fmod(v, 2.0) != 0.0;
  const double infinity = detail::libm::infinity();
  if (u == 0.0) {
    if (v < 0.0) return T(odd ? (signbit(x) ? -infinity : infinity) : infinity);
    return odd ? x : T(0.0);
  }
  if (isinf(y)) {
    if (u == -1.0) return T(1.0);
    const bool below_one = (u < 0.0 ? -u : u) < 1.0;
    return T(below_one == (v < 0.0) ? infinity : 0.0);
  }
  if (isinf(x)) {
    const double magnitude = v < 0.0 ? 0.0 : infinity;
    return T(u < 0.0 && odd ? -magnitude : magnitude);
  }
  if (u < 0.0 && !integral) return detail::invalid_operation<Format>();
  const double result = detail::evaluate<Format>(detail::pow_kernel{u < 0.0 ? -u : u, v}).representative;
  return T(u < 0.0 && odd ? -result : result);
}

}  // namespace mixprec
