// The little real arithmetic limits.hpp needs at compile time (C++17 has no constexpr
// <cmath>): exact powers of two and a base-2 logarithm good to double precision.
#pragma once

namespace mixprec::detail {

// 2^k for |k| <= 1074, exact (repeated multiplication by 2 or 1/2 is exact in double).
constexpr double power_of_two(int k) noexcept {
  double result = 1.0;
  for (; k > 0; --k) result *= 2.0;
  for (; k < 0; ++k) result *= 0.5;
  return result;
}

// log2(x) for x > 0: the integer part by halving or doubling into [1, 2), then the fraction
// bit by bit (squaring; each square >= 2 contributes the next binary digit).
constexpr double log2(double x) noexcept {
  double result = 0.0;
  while (x >= 2.0) {
    x *= 0.5;
    result += 1.0;
  }
  while (x < 1.0) {
    x *= 2.0;
    result -= 1.0;
  }
  double digit = 0.5;
  for (int i = 0; i < 60; ++i, digit *= 0.5) {
    x *= x;
    if (x >= 2.0) {
      x *= 0.5;
      result += digit;
    }
  }
  return result;
}

constexpr double log10_of_2 = 0.30102999566398119521;

constexpr int floor_to_int(double x) noexcept {
  const int truncated = static_cast<int>(x);
  return static_cast<double>(truncated) > x ? truncated - 1 : truncated;
}
constexpr int ceil_to_int(double x) noexcept {
  const int truncated = static_cast<int>(x);
  return static_cast<double>(truncated) < x ? truncated + 1 : truncated;
}

}  // namespace mixprec::detail
