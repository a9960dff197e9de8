// How the error of a long sum or dot product grows with its length n, when it is accumulated in
// float and when it is accumulated in the format itself, against the exact result.
//
//   std::vector<std::size_t> n = quarter_decade_lengths(1000000);   // 10, 18, 32, ..., 10^6
//   accumulation_curves sum = sum_error<mixprec::float16>(values, n);
//   accumulation_curves dot = dot_error<mixprec::float16>(x, y, n);
//
// The inputs are first rounded to T, as a model stored in T holds them; what is measured is then
// the accumulation's error alone.  Terms are added in order, one at a time (no pairwise or
// blocked summation), so this is the worst common case:
//
//   float accumulator    float acc; acc += float(x[i])            or float(x[i]) * float(y[i])
//   format accumulator   T acc;     acc = acc + x[i]              or acc + x[i] * y[i]
//                        (mixprec's T arithmetic: each product and each sum rounded to T)
//
// The error reported after n terms is |acc - exact| / sum |term|: the quantity that the classic
// bound |error| <= gamma_n * sum |term| (Higham, "Accuracy and Stability of Numerical Algorithms",
// 2nd ed., section 3.1) limits, and for sums of positive values the relative error itself.
#pragma once

#include <mixprec/convert.hpp>
#include <mixprec/format.hpp>
#include <mixprec/minifloat.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <boost/multiprecision/cpp_bin_float.hpp>

namespace mixprec_example {

// The longest accumulation measured: 2^20 > 10^6 terms.
constexpr int longest_accumulation_log2 = 20;
constexpr std::size_t longest_accumulation = std::size_t{1} << longest_accumulation_log2;

// Bits that make every partial sum of up to 2^20 terms exact.  A term (a value of T, or the
// product of two) is an integer multiple of 2^(2q), q being the exponent of T's smallest
// subnormal's last bit, and below 2^(2 (emax + 1)) in magnitude; a sum of 2^20 of them is a
// multiple of 2^(2q) below 2^(2 (emax + 1) + 20).  float: 2 * (128 + 149) + 20 = 574 bits.  At
// least 64 bits, so that Boost takes a double without an explicit (possibly rounding) conversion.
template <class T>
constexpr unsigned exact_sum_bits() {
  using traits = mixprec::format_traits<typename T::format>;
  return std::max(64u, static_cast<unsigned>(2 * (traits::max_exponent + 1 - traits::min_quantum_exponent) +
                                             longest_accumulation_log2));
}

// A binary float of that many bits: its additions of terms never round.
template <class T>
using exact_accumulator = boost::multiprecision::number<
    boost::multiprecision::cpp_bin_float<exact_sum_bits<T>(), boost::multiprecision::digit_base_2>,
    boost::multiprecision::et_off>;

// n = 10^(k/4) rounded, for k = 4, 5, ...: four lengths per decade from 10 up to `longest`.
inline std::vector<std::size_t> quarter_decade_lengths(std::size_t longest) {
  std::vector<std::size_t> lengths;
  for (int k = 4;; ++k) {
    const auto n = static_cast<std::size_t>(std::llround(std::pow(10.0, k / 4.0)));
    if (n > longest) return lengths;
    lengths.push_back(n);
  }
}

struct accumulation_curves {
  std::vector<std::size_t> lengths;
  std::vector<double> float_accumulator;   // error after lengths[i] terms
  std::vector<double> format_accumulator;  // the same, accumulated in T
};

// One term three ways: exactly (a double holds the product of two values of T exactly: at most
// 2 * 24 significant bits), as the float accumulator computes it, as T arithmetic computes it.
template <class T>
struct accumulation_term {
  double exact;
  float in_float;
  T in_format;
};

template <class T, class TermOf>
accumulation_curves accumulation_error(const std::vector<std::size_t>& lengths, TermOf term_of) {
  accumulation_curves curves;
  curves.lengths = lengths;
  exact_accumulator<T> exact = 0;
  double magnitude = 0;  // sum |term|: a normaliser, its own rounding errors do not matter
  float float_sum = 0;
  T format_sum = mixprec::convert<T>(0.0f);
  const auto error_of = [&](double computed) {
    if (!std::isfinite(computed)) return HUGE_VAL;
    const exact_accumulator<T> difference = exact_accumulator<T>(computed) - exact;
    return std::fabs(difference.template convert_to<double>()) / magnitude;
  };
  std::size_t done = 0;
  for (const std::size_t n : lengths) {
    for (; done < n; ++done) {
      const accumulation_term<T> term = term_of(done);
      exact += term.exact;
      magnitude += std::fabs(term.exact);
      float_sum += term.in_float;
      format_sum = format_sum + term.in_format;
    }
    curves.float_accumulator.push_back(error_of(static_cast<double>(float_sum)));
    curves.format_accumulator.push_back(error_of(static_cast<double>(format_sum)));
  }
  return curves;
}

// The values must hold at least lengths.back() elements.
template <class T>
accumulation_curves sum_error(const std::vector<double>& values, const std::vector<std::size_t>& lengths) {
  return accumulation_error<T>(lengths, [&](std::size_t i) {
    const T v = mixprec::convert<T>(values[i]);
    return accumulation_term<T>{static_cast<double>(v), static_cast<float>(v), v};
  });
}

template <class T>
accumulation_curves dot_error(const std::vector<double>& x, const std::vector<double>& y,
                              const std::vector<std::size_t>& lengths) {
  return accumulation_error<T>(lengths, [&](std::size_t i) {
    const T a = mixprec::convert<T>(x[i]);
    const T b = mixprec::convert<T>(y[i]);
    return accumulation_term<T>{static_cast<double>(a) * static_cast<double>(b),
                                static_cast<float>(a) * static_cast<float>(b), a * b};
  });
}

}  // namespace mixprec_example
