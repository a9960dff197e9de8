// Oracles for the narrow integers that share no code with the library: ml_dtypes' rules written
// out from intn.h / intn_numpy.h on plain ints, and rounding to an integer from floor() and the
// exact fraction |x - trunc(x)|.
#pragma once

#include <mixprec/rounding.hpp>

#include <cmath>
#include <cstdint>

namespace intn_oracle {

// v modulo 2^bits, as the value of a bits-wide two's complement (signed) or unsigned integer.
inline int wrap(long long v, int bits, bool is_signed) {
  const long long m = 1LL << bits;
  long long r = ((v % m) + m) % m;
  if (is_signed && r >= m / 2) r -= m;
  return static_cast<int>(r);
}

inline int min_of(int bits, bool is_signed) { return is_signed ? -(1 << (bits - 1)) : 0; }
inline int max_of(int bits, bool is_signed) { return is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1; }

// ml_dtypes' float -> intN cast (intn_numpy.h: CastToInt, then intN(int)).
inline int ml_dtypes_cast(double x, int bits, bool is_signed) {
  if (std::isnan(x) || std::isinf(x) || x < -2147483648.0 || x > 2147483647.0) return 0;
  return wrap(static_cast<long long>(std::trunc(x)), bits, is_signed);
}

// The integer x rounds to under r (x finite), before any clamp: |x| = m + frac with m = |trunc(x)|
// and frac = |x - trunc(x)| (exact), then m or m + 1 by the mode.
inline long long rounded(double x, mixprec::rounding r) {
  using mixprec::rounding;
  if (std::fabs(x) >= 0x1p52) return static_cast<long long>(std::fmax(std::fmin(x, 0x1p60), -0x1p60));
  const double t = std::trunc(x);
  const double frac = std::fabs(x - t);
  const long long m = std::llabs(static_cast<long long>(t));
  const bool negative = x < 0;
  bool away = false;
  if (frac != 0) {
    switch (r) {
      case rounding::nearest_even:
        away = frac > 0.5 || (frac == 0.5 && m % 2 == 1);
        break;
      case rounding::nearest_away:
        away = frac >= 0.5;
        break;
      case rounding::nearest_zero:
        away = frac > 0.5;
        break;
      case rounding::toward_zero:
        away = false;
        break;
      case rounding::upward:
        away = !negative;
        break;
      case rounding::downward:
        away = negative;
        break;
      case rounding::to_odd:
        away = m % 2 == 0;
        break;
    }
  }
  const long long magnitude = m + (away ? 1 : 0);
  return negative ? -magnitude : magnitude;
}

// mixprec's rounded conversion: rounded, then clamped; NaN gives 0, ±inf the ends.
inline int converted(double x, mixprec::rounding r, int bits, bool is_signed) {
  if (std::isnan(x)) return 0;
  const long long lo = min_of(bits, is_signed), hi = max_of(bits, is_signed);
  if (std::isinf(x)) return static_cast<int>(x < 0 ? lo : hi);
  const long long v = rounded(x, r);
  return static_cast<int>(v < lo ? lo : (v > hi ? hi : v));
}

}  // namespace intn_oracle
