// rounded_real: an exact real number held as its nearest double and the sign of what is left
// over.  It lets the table oracle of reference_format.hpp (reference_format<V>) decide exactly
// where the result of a + b, a - b, a × b or a / b of two doubles lies, at the speed of double
// arithmetic, without knowing anything of the library.
//
// Why it is exact.  Let x be real, n = RN(x) its round-to-nearest double and s = sign(x - n).
// For every double t:   x < t  <=>  n < t, or n == t and s < 0.
// If n < t and x >= t, then t lies in (n, x] and is strictly closer to x than n is (or is x
// itself, and then n would be x): that contradicts n = RN(x).  The other cases are the mirror
// image, and n == t leaves only the sign of x - t = x - n.  So comparisons of x with doubles
// (every value and every midpoint of the formats under test is a double) are decided by (n, s)
// compared lexicographically.  Two rounded reals with different n compare as their n (RN is
// monotone); two with the same n and both s != 0 cannot be ordered, and comparing them throws.
//
// The leftover signs come from error-free transformations that hold in binary floating point
// under round-to-nearest (IEEE 754-2019 §5.4.1 fusedMultiplyAdd is correctly rounded, so the
// sign of its result is the sign of the exact value it rounds, and it is zero only when that
// value is zero):
//   a + b   n = RN(a + b), the error a + b - n by Knuth's TwoSum (exact for any finite inputs
//           whose sum does not overflow);
//   a × b   n = RN(a × b), s = sign(fma(a, b, -n));
//   a / b   n = RN(a / b), s = sign(fma(-n, b, a)) × sign(b), because a/b - n = (a - n b) / b.
// None of these can lose the sign to underflow for the operands the sweeps use (magnitudes from
// 2^-133 to 2^128): the residuals are multiples of 2^-400 or more, far above double's 2^-1074.
#pragma once

#include <cmath>
#include <stdexcept>

namespace mixprec_test {

class rounded_real {
 public:
  rounded_real() = default;
  // Implicit, like double itself: reference_format<V> writes V(value) and V(0).
  rounded_real(double exact) : nearest_(exact) {}  // NOLINT(google-explicit-constructor)
  rounded_real(double nearest, int rest_sign) : nearest_(nearest), rest_sign_(rest_sign) {
    if (nearest == 0.0 && rest_sign != 0) throw std::logic_error("rounded_real: a non-zero real rounds to 0");
  }

  double nearest() const { return nearest_; }
  int rest_sign() const { return rest_sign_; }  // sign of (the real) - nearest()
  bool is_double() const { return rest_sign_ == 0; }

  friend rounded_real operator-(const rounded_real& x) { return rounded_real(-x.nearest_, -x.rest_sign_); }

  friend bool operator<(const rounded_real& x, const rounded_real& y) {
    if (x.nearest_ != y.nearest_) return x.nearest_ < y.nearest_;
    check_comparable(x, y);
    return x.rest_sign_ < y.rest_sign_;
  }
  friend bool operator>(const rounded_real& x, const rounded_real& y) { return y < x; }
  friend bool operator<=(const rounded_real& x, const rounded_real& y) { return !(y < x); }
  friend bool operator>=(const rounded_real& x, const rounded_real& y) { return !(x < y); }
  friend bool operator==(const rounded_real& x, const rounded_real& y) {
    if (x.nearest_ != y.nearest_) return false;
    check_comparable(x, y);
    return x.rest_sign_ == y.rest_sign_;
  }
  friend bool operator!=(const rounded_real& x, const rounded_real& y) { return !(x == y); }

  // The sums the oracle forms: m + m (doubling is exact, and doubles the leftover), and the sum
  // of two doubles whose sum is a double (two neighbouring values of a format).  Anything else
  // would not be exact and throws.
  friend rounded_real operator+(const rounded_real& x, const rounded_real& y) {
    const double sum = x.nearest_ + y.nearest_;
    if (x.rest_sign_ != 0 || y.rest_sign_ != 0) {
      if (x.nearest_ != y.nearest_ || x.rest_sign_ != y.rest_sign_)
        throw std::logic_error("rounded_real: only doubling keeps a leftover exact");
      return rounded_real(sum, x.rest_sign_);
    }
    if (two_sum_error(x.nearest_, y.nearest_, sum) != 0.0) throw std::logic_error("rounded_real: inexact sum");
    return rounded_real(sum);
  }

  // Knuth's TwoSum: a + b - RN(a + b), exactly (as long as the compiler keeps IEEE semantics:
  // no -ffast-math, which the library's own conversions cannot live with either).
  static double two_sum_error(double a, double b, double sum) {
    const double b_virtual = sum - a;
    const double a_virtual = sum - b_virtual;
    return (a - a_virtual) + (b - b_virtual);
  }

 private:
  static void check_comparable(const rounded_real& x, const rounded_real& y) {
    if (x.rest_sign_ != 0 && x.rest_sign_ == y.rest_sign_)
      throw std::logic_error("rounded_real: two reals with the same nearest double and leftover cannot be ordered");
  }

  double nearest_ = 0.0;
  int rest_sign_ = 0;
};

inline int sign_of(double x) { return x > 0.0 ? 1 : (x < 0.0 ? -1 : 0); }

inline rounded_real exact_sum(double a, double b) {
  const double sum = a + b;
  return rounded_real(sum, sign_of(rounded_real::two_sum_error(a, b, sum)));
}
inline rounded_real exact_difference(double a, double b) { return exact_sum(a, -b); }
inline rounded_real exact_product(double a, double b) {
  const double product = a * b;
  return rounded_real(product, sign_of(std::fma(a, b, -product)));
}
inline rounded_real exact_quotient(double a, double b) {
  const double quotient = a / b;
  return rounded_real(quotient, sign_of(std::fma(-quotient, b, a)) * sign_of(b));
}

}  // namespace mixprec_test
