// How mixprec/math rounds the value of a function that it can only approximate.
//
// A function value v (exp x, ln x, x^y, ...) is almost never a number of the target format,
// and the C library gives it in double with an error of a few units in double's last place.
// Rounding that double into the format gives the correctly rounded v unless v lies close to a
// rounding boundary of the format (a midpoint between two neighbours, or the overflow
// threshold).  So each function runs a kernel through evaluate<Format>():
//
//   1. direct:   y = the C library's double value.  If every number within 2^-44 |y| of y
//                (256 units in double's last place: any C or CUDA library is far better)
//                rounds into the format as y does, v does too, and y is the answer.
//   2. exact:    otherwise the kernel may recognise an exact case (2^n, log2 of a power of
//                two, x^y with an exact result) and give v exactly, or rounded to odd.
//   3. refined:  otherwise a double-double evaluation (math/double_double.hpp) with a proven
//                relative error bound (used here at least 2^15 times larger) decides the same
//                way.
//   4. unresolved: even that lies within its bound of a boundary.  Its rounding is used; no
//                input of any of the library's formats ends here (tests/math/ counts the paths
//                for every input).
//
// The answer is a "representative" double that rounds into the format as v does.  A value
// known to more than double precision (hi + lo) is represented by its round-to-odd double:
// rounding that to nearest into a format of p <= 51 significand bits gives the nearest value of
// hi + lo itself (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved
// algorithms using rounding to odd", IEEE Trans. Computers 57(4), 2008: round-to-odd to at
// least p + 2 bits, then to nearest, is one correct rounding).
#pragma once

#include <cstdint>

#include "../detail/convert_bits.hpp"
#include "double_double.hpp"

namespace mixprec::detail {

enum class evaluation_path : unsigned char { direct, exact, refined, unresolved };

struct evaluation {
  double representative;  // rounds into the format as the exact value does
  evaluation_path path;
};

// A double-double value with its relative error bound.
struct refined_value {
  double_double value;
  double relative_error;
};

// The relative error assumed of the C library's double functions.  CUDA documents at most
// 2 ulp for these functions, glibc under 4; 2^-44 leaves room for 256 ulp.
constexpr double libm_relative_error = 0x1p-44;
// The relative error bound used for the double-double evaluations: 2^15 times the bounds that
// math/double_double.hpp proves and tests/math/double_double_test.cpp checks.
constexpr double refined_relative_error = 0x1p-80;

template <class Format>
MIXPREC_HOST_DEVICE inline typename format_traits<Format>::storage_type nearest_code(double x) noexcept {
  return convert_bits<ieee_binary64, Format>(bit_cast<std::uint64_t>(x), round_mode::nearest_even, overflow::non_finite,
                                             0);
}

// Round-to-odd of hi + lo to double: the double itself if hi + lo is one, else of the two
// doubles around it the one with an odd last bit.
MIXPREC_HOST_DEVICE inline double round_to_odd(double hi, double lo) noexcept {
  if (lo == 0.0) return hi;                 // (and keeps the sign of a zero hi: -0 + +0 would be +0)
  const double_double s = two_sum(hi, lo);  // s.hi = hi + lo rounded, s.lo the exact rest
  if (s.lo == 0.0 || !libm::is_finite(s.hi)) return s.hi;
  std::uint64_t bits = bit_cast<std::uint64_t>(s.hi);
  if ((bits & 1) == 0) {
    // |s.lo| <= half an ulp of s.hi, so the exact sum lies between s.hi and its neighbour on
    // the side of s.lo; that neighbour is odd.  Codes order magnitudes.
    const bool away_from_zero = (s.lo > 0.0) == (s.hi > 0.0);
    bits = away_from_zero ? bits + 1 : bits - 1;
  }
  return bit_cast<double>(bits);
}

// Whether every v with |v - y| <= relative_error |y| rounds into Format as y does.  Rounding
// is monotonic, so the two ends of the interval decide.  A zero y is exact (the kernels only
// return zero for an exact zero: their results never underflow double, or are clamped to its
// smallest subnormal), and infinities and NaN are special values that kernels return only when
// the exact result is beyond any format's range.
template <class Format>
MIXPREC_HOST_DEVICE inline bool rounds_as(double y, double relative_error) noexcept {
  const double margin = (y < 0.0 ? -y : y) * relative_error;
  if (!(margin > 0.0) || !libm::is_finite(margin)) return true;
  return nearest_code<Format>(y - margin) == nearest_code<Format>(y + margin);
}

template <class Format>
MIXPREC_HOST_DEVICE inline bool rounds_as(double_double v, double relative_error) noexcept {
  const double margin = (v.hi < 0.0 ? -v.hi : v.hi) * relative_error;
  if (!(margin > 0.0) || !libm::is_finite(margin)) return true;
  return nearest_code<Format>(round_to_odd(v.hi, v.lo - margin)) ==
         nearest_code<Format>(round_to_odd(v.hi, v.lo + margin));
}

// A kernel has: double approximate() (the C library's value), bool exact(double*) (an exact
// case: stores its representative), refined_value refine() (double-double).
template <class Format, class Kernel>
MIXPREC_HOST_DEVICE evaluation evaluate(const Kernel& kernel) noexcept {
  static_assert(format_traits<Format>::precision <= 51, "round-to-odd in double needs p + 2 <= 53");
  const double y = kernel.approximate();
  if (rounds_as<Format>(y, libm_relative_error)) return {y, evaluation_path::direct};
  double exact = 0.0;
  if (kernel.exact(&exact)) return {exact, evaluation_path::exact};
  const refined_value r = kernel.refine();
  const double representative = round_to_odd(r.value.hi, r.value.lo);
  return {representative,
          rounds_as<Format>(r.value, r.relative_error) ? evaluation_path::refined : evaluation_path::unresolved};
}

}  // namespace mixprec::detail
