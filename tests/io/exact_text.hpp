// Exact arithmetic for the text I/O tests, written with Boost.Multiprecision's unbounded
// cpp_int and sharing nothing with include/mixprec/detail/decimal.hpp: the exact value of a
// decimal or hexadecimal text, the exact decimal expansion of a double, and a fraction type
// that reference_format<V> can search with (it needs V(double), + and the comparisons).
#pragma once

#include "boost_cpp_int.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace io_test {

using integer = boost::multiprecision::cpp_int;

// reference_format::locate's hint for "search the whole table" (-1 would mean "start below
// the smallest value and walk up").
constexpr long no_hint = -2;

inline integer power(unsigned base, long long exponent) {
  return boost::multiprecision::pow(integer(base), static_cast<unsigned>(exponent));
}

// num / den with den > 0, never reduced: comparisons cross-multiply.
class fraction {
 public:
  fraction() = default;
  fraction(integer num, integer den) : num_(std::move(num)), den_(std::move(den)) {}
  // The exact value of a finite double (implicit, as reference_format writes V(value)).
  fraction(double x) {  // NOLINT(google-explicit-constructor)
    if (!std::isfinite(x)) throw std::logic_error("fraction: not a finite double");
    int exponent = 0;
    const double f = std::frexp(std::fabs(x), &exponent);
    num_ = static_cast<std::uint64_t>(std::ldexp(f, 53));
    exponent -= 53;
    if (exponent >= 0) {
      num_ <<= exponent;
    } else {
      den_ <<= -exponent;
    }
    if (x < 0) num_ = -num_;
  }
  // m × 10^k.
  static fraction decimal(const integer& m, long long k) {
    return k >= 0 ? fraction(m * power(10, k), 1) : fraction(m, power(10, -k));
  }
  friend fraction operator+(const fraction& a, const fraction& b) {
    return fraction(a.num_ * b.den_ + b.num_ * a.den_, a.den_ * b.den_);
  }
  friend fraction operator-(const fraction& a, const fraction& b) {
    return fraction(a.num_ * b.den_ - b.num_ * a.den_, a.den_ * b.den_);
  }
  friend bool operator<(const fraction& a, const fraction& b) { return a.num_ * b.den_ < b.num_ * a.den_; }
  friend bool operator>(const fraction& a, const fraction& b) { return b < a; }
  friend bool operator==(const fraction& a, const fraction& b) { return a.num_ * b.den_ == b.num_ * a.den_; }
  friend bool operator<=(const fraction& a, const fraction& b) { return !(b < a); }
  bool is_zero() const { return num_ == 0; }

 private:
  integer num_ = 0;
  integer den_ = 1;
};

// A signed exact value read from text.
struct exact_value {
  bool negative = false;
  fraction magnitude;
};

// The exact value of "[sign]digits[.digits][(e|E)[sign]digits]" or
// "[sign]0x hexdigits[.hexdigits][(p|P)[sign]digits]"; only well-formed text is given.
inline exact_value exact_value_of(std::string_view text) {
  exact_value v;
  std::size_t i = 0;
  if (text[i] == '+' || text[i] == '-') v.negative = text[i++] == '-';
  const bool hex = text.size() > i + 1 && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X');
  if (hex) i += 2;
  const unsigned base = hex ? 16 : 10;
  integer mantissa = 0;
  long long scale = 0;  // value = mantissa × base^-fraction_digits × (10 or 2)^exponent
  bool after_point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      after_point = true;
      continue;
    }
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (hex && c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (hex && c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) break;
    mantissa = mantissa * base + digit;
    if (after_point) ++scale;
  }
  long long exponent = 0;
  if (i < text.size()) {
    exponent = std::stoll(std::string(text.substr(i + 1)));
  }
  if (hex) {
    const long long twos = exponent - 4 * scale;
    v.magnitude = twos >= 0 ? fraction(mantissa << static_cast<unsigned>(twos), 1)
                            : fraction(mantissa, integer(1) << static_cast<unsigned>(-twos));
  } else {
    v.magnitude = fraction::decimal(mantissa, exponent - scale);
  }
  return v;
}

// The exact decimal expansion of a finite double d > 0: d = 0.digits × 10^point, digits
// without leading or trailing zeros.
struct decimal_digits {
  std::string digits;
  long long point = 0;
};
inline decimal_digits exact_digits(double d) {
  int exponent = 0;
  const double f = std::frexp(d, &exponent);
  integer n = static_cast<std::uint64_t>(std::ldexp(f, 53));
  exponent -= 53;
  long long scale = 0;
  if (exponent >= 0) {
    n <<= exponent;
  } else {
    n *= power(5, -exponent);
    scale = exponent;
  }
  decimal_digits r{n.str(), 0};
  r.point = static_cast<long long>(r.digits.size()) + scale;
  while (r.digits.back() == '0') r.digits.pop_back();
  return r;
}

// "0.<digits>e<point>".
inline std::string text_of(const decimal_digits& d) { return "0." + d.digits + "e" + std::to_string(d.point); }

}  // namespace io_test
