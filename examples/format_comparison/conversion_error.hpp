// How much a value changes when it is stored in a format: per value, and with the OCP MX block
// scaling that shares one float8_e8m0fnu scale among 32 values.
//
//   error_summary e = conversion_error<mixprec::float16>(values);
//   error_summary mx = block_scaled_error<mixprec::float4_e2m1fn>(values);
//
// Zeros are exact in every format and are left out; every share is a share of the nonzero
// values.
#pragma once

#include <mixprec/convert.hpp>
#include <mixprec/intn_convert.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "formats.hpp"

namespace mixprec_example {

struct error_summary {
  std::size_t nonzero = 0;    // values that are not zero
  double max_relative = 0;    // largest |stored - x| / |x| over values that did not overflow
  double rms_relative = 0;    // root mean square of the same
  double flushed_share = 0;   // values that became zero (relative error 1, counted above too)
  double overflow_share = 0;  // values beyond the format's range (see error_tally::add)
};

class error_tally {
 public:
  // One value x and what the format made of it.  An overflowed value (beyond the largest finite
  // value: it became inf, NaN or the clipped max) is only counted: its error says nothing about
  // precision, and inf would swamp every mean.
  void add(double x, double stored, bool overflowed) {
    if (x == 0) return;
    ++nonzero_;
    if (overflowed) {
      ++overflowed_;
      return;
    }
    const double relative = std::fabs(stored - x) / std::fabs(x);
    max_relative_ = std::max(max_relative_, relative);
    sum_of_squares_ += relative * relative;
    ++measured_;
    if (stored == 0) ++flushed_;
  }

  error_summary summary() const {
    error_summary s;
    s.nonzero = nonzero_;
    if (nonzero_ == 0) return s;
    const auto share = [&](std::size_t count) { return static_cast<double>(count) / static_cast<double>(nonzero_); };
    s.max_relative = max_relative_;
    s.rms_relative = measured_ > 0 ? std::sqrt(sum_of_squares_ / static_cast<double>(measured_)) : 0.0;
    s.flushed_share = share(flushed_);
    s.overflow_share = share(overflowed_);
    return s;
  }

 private:
  std::size_t nonzero_ = 0, measured_ = 0, flushed_ = 0, overflowed_ = 0;
  double max_relative_ = 0, sum_of_squares_ = 0;
};

// Each value rounded to T from double (nearest, ties to even, one rounding).  Values outside
// [lowest, max] (mixprec::describe) overflow: T gives inf where it has one, else NaN, else
// (fp6, fp4, the integers) the end of its range; those within half a step beyond it round to the
// end and are counted as overflowed all the same.
template <class T>
error_summary conversion_error(const std::vector<double>& values) {
  constexpr mixprec::format_description d = mixprec::describe<T>();
  error_tally tally;
  for (const double x : values) {
    const double stored = static_cast<double>(mixprec::convert<T>(x));
    tally.add(x, stored, x < d.lowest || x > d.max);
  }
  return tally.summary();
}

// OCP Microscaling Formats (MX) v1.0, section 6.3: a block of k = 32 values shares the scale
// X = 2^(floor(log2(max |v|)) - emax), where emax is the exponent of the element format's
// largest normal value (element_emax in formats.hpp, which extends it to the integers as MXINT8
// does); each element is v / X rounded to the element format, and values that land above its max
// are clamped to max (below an integer's lowest, to the lowest).  X is a float8_e8m0fnu, so the shared exponent is
// clamped to e8m0's [-127, 127].  A block costs 32 elements plus one 8-bit scale: 0.25 bits more
// per value.  Clamped values are part of the scheme (at most a factor 2 above max, so their error
// is bounded) and are measured, not counted as overflowed.
template <class T>
error_summary block_scaled_error(const std::vector<double>& values, std::size_t block_size = 32) {
  const int emax = element_emax<T>();
  error_tally tally;
  for (std::size_t begin = 0; begin < values.size(); begin += block_size) {
    const std::size_t end = std::min(values.size(), begin + block_size);
    double largest = 0;
    for (std::size_t i = begin; i < end; ++i) largest = std::max(largest, std::fabs(values[i]));
    if (largest == 0) continue;  // an all-zero block is exact
    const int shared_exponent = std::clamp(std::ilogb(largest) - emax, -127, 127);
    const auto scale = mixprec::convert<mixprec::float8_e8m0fnu>(std::ldexp(1.0, shared_exponent));
    const double x_scale = static_cast<double>(scale);
    for (std::size_t i = begin; i < end; ++i) {
      const auto element =
          mixprec::convert<T>(values[i] / x_scale, mixprec::rounding::nearest_even, mixprec::overflow::saturate);
      tally.add(values[i], static_cast<double>(element) * x_scale, false);
    }
  }
  return tally.summary();
}

}  // namespace mixprec_example
