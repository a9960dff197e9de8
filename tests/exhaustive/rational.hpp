// exact_fraction: an exact rational number num / den (den > 0) over Boost.Multiprecision's
// fixed-width checked integers, for the oracles.  Deliberately plain: comparisons cross-multiply
// and sums are never reduced, so every operation is one or two integer products whose
// correctness is Boost's, and an overflow of the 1024-bit integers throws instead of wrapping.
// (cpp_rational would do, but it reduces by a gcd after every step and is ten times slower.)
//
// The oracle reference_format<exact_fraction> needs construction from double, +, and the
// comparisons; the arithmetic sweep adds -, × and ÷.
#pragma once

#include "boost_cpp_int.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace mixprec_test {

class exact_fraction {
 public:
  using integer = boost::multiprecision::number<boost::multiprecision::cpp_int_backend<
      1024, 1024, boost::multiprecision::signed_magnitude, boost::multiprecision::checked, void>>;

  exact_fraction() = default;
  exact_fraction(integer num, integer den) : num_(std::move(num)), den_(std::move(den)) {
    if (den_ <= 0) throw std::logic_error("exact_fraction: the denominator must be positive");
  }
  // The exact value of a finite double: significand × 2^exponent with a 53-bit integer
  // significand (frexp and ldexp by powers of two are exact).  Implicit, like double: the
  // oracle writes V(value) and V(0).
  exact_fraction(double x) {  // NOLINT(google-explicit-constructor)
    if (!std::isfinite(x)) throw std::logic_error("exact_fraction: not a finite double");
    int exponent = 0;
    const double fraction = std::frexp(x, &exponent);  // x = fraction × 2^exponent, |fraction| in [0.5, 1)
    auto significand = static_cast<std::uint64_t>(std::ldexp(std::fabs(fraction), 53));
    exponent -= 53;
    while (significand != 0 && (significand & 1) == 0) {  // keeps the integers short
      significand >>= 1;
      ++exponent;
    }
    num_ = significand;
    if (exponent >= 0) {
      num_ <<= exponent;  // Boost shifts only non-negative integers
    } else {
      den_ <<= -exponent;
    }
    if (x < 0) num_ = -num_;
  }
  static exact_fraction from_integer(std::uint64_t magnitude, bool negative) {
    integer n = magnitude;
    return exact_fraction(negative ? integer(-n) : n, integer(1));
  }

  friend exact_fraction operator-(const exact_fraction& x) { return exact_fraction(-x.num_, x.den_); }
  friend exact_fraction operator+(const exact_fraction& x, const exact_fraction& y) {
    if (x.den_ == y.den_) return exact_fraction(x.num_ + y.num_, x.den_);
    return exact_fraction(x.num_ * y.den_ + y.num_ * x.den_, x.den_ * y.den_);
  }
  friend exact_fraction operator-(const exact_fraction& x, const exact_fraction& y) { return x + -y; }
  friend exact_fraction operator*(const exact_fraction& x, const exact_fraction& y) {
    return exact_fraction(x.num_ * y.num_, x.den_ * y.den_);
  }
  friend exact_fraction operator/(const exact_fraction& x, const exact_fraction& y) {
    if (y.num_ == 0) throw std::logic_error("exact_fraction: division by zero");
    const integer num = x.num_ * y.den_, den = x.den_ * y.num_;
    return den < 0 ? exact_fraction(-num, -den) : exact_fraction(num, den);
  }

  friend int compare(const exact_fraction& x, const exact_fraction& y) {
    const integer left = x.num_ * y.den_, right = y.num_ * x.den_;
    return left < right ? -1 : (left == right ? 0 : 1);
  }
  friend bool operator<(const exact_fraction& x, const exact_fraction& y) { return compare(x, y) < 0; }
  friend bool operator>(const exact_fraction& x, const exact_fraction& y) { return compare(x, y) > 0; }
  friend bool operator<=(const exact_fraction& x, const exact_fraction& y) { return compare(x, y) <= 0; }
  friend bool operator>=(const exact_fraction& x, const exact_fraction& y) { return compare(x, y) >= 0; }
  friend bool operator==(const exact_fraction& x, const exact_fraction& y) { return compare(x, y) == 0; }
  friend bool operator!=(const exact_fraction& x, const exact_fraction& y) { return compare(x, y) != 0; }

  bool negative() const { return num_ < 0; }

 private:
  integer num_ = 0;
  integer den_ = 1;
};

}  // namespace mixprec_test
