// Exponentials and logarithms: exp, exp2, expm1, log, log2, log10, log1p.  Each is correctly
// rounded (nearest, ties to even) from the exact value through math/correct_rounding.hpp; the
// special values are those of C17 Annex F.10.3.
//
// None of these functions has an exact result on a rounding boundary except at integers of
// exp2 and at exact powers in log2 and log10 (Lindemann-Weierstrass: e^x and ln x are
// transcendental for rational x other than 0 and 1; 2^x and log2 x are irrational for
// non-integral rational x and for x not a power of two): those are the kernels' exact cases.
#pragma once

#include <cstdint>

#include "../minifloat.hpp"
#include "basic.hpp"
#include "correct_rounding.hpp"
#include "nan.hpp"

namespace mixprec {
namespace detail {

MIXPREC_HOST_DEVICE inline bool is_integral(double x) noexcept { return libm::is_finite(x) && libm::floor(x) == x; }

// 2^n for an integral n, exactly (clamped to double's range: no format reaches past it).
MIXPREC_HOST_DEVICE inline double exact_power_of_two(double n) noexcept {
  const double clamped = n > 1100.0 ? 1100.0 : (n < -1074.0 ? -1074.0 : n);
  return libm::ldexp(1.0, static_cast<int>(clamped));
}

// For a kernel whose result cannot underflow to zero: the C library's underflow to 0 becomes
// the smallest subnormal, which rounds into every format as the tiny exact value does.
MIXPREC_HOST_DEVICE inline double positive_or_smallest(double y) noexcept {
  return y > 0.0 ? y : libm::smallest_subnormal();
}

struct exp_kernel {
  double x;
  MIXPREC_HOST_DEVICE double approximate() const noexcept { return positive_or_smallest(libm::exp(x)); }
  MIXPREC_HOST_DEVICE bool exact(double*) const noexcept { return false; }
  MIXPREC_HOST_DEVICE refined_value refine() const noexcept {
    return {dd_exp(double_double{x, 0.0}), refined_relative_error};
  }
};

struct exp2_kernel {
  double x;
  MIXPREC_HOST_DEVICE double approximate() const noexcept { return positive_or_smallest(libm::exp2(x)); }
  MIXPREC_HOST_DEVICE bool exact(double* result) const noexcept {
    if (!is_integral(x)) return false;
    *result = exact_power_of_two(x);
    return true;
  }
  MIXPREC_HOST_DEVICE refined_value refine() const noexcept { return {dd_exp2(x), refined_relative_error}; }
};

struct expm1_kernel {
  double x;
  MIXPREC_HOST_DEVICE double approximate() const noexcept { return libm::expm1(x); }
  MIXPREC_HOST_DEVICE bool exact(double*) const noexcept { return false; }
  MIXPREC_HOST_DEVICE refined_value refine() const noexcept { return {dd_expm1(x), refined_relative_error}; }
};

struct log_kernel {
  double x;
  MIXPREC_HOST_DEVICE double approximate() const noexcept { return libm::log(x); }
  MIXPREC_HOST_DEVICE bool exact(double*) const noexcept { return false; }
  MIXPREC_HOST_DEVICE refined_value refine() const noexcept { return {dd_log(x), refined_relative_error}; }
};

struct log2_kernel {
  double x;
  MIXPREC_HOST_DEVICE double approximate() const noexcept { return libm::log2(x); }
  // x = 2^k: k.  (Format values are normal doubles, so a power of two has a zero mantissa.)
  MIXPREC_HOST_DEVICE bool exact(double* result) const noexcept {
    const std::uint64_t bits = bit_cast<std::uint64_t>(x);
    if ((bits & 0x000FFFFFFFFFFFFF) != 0) return false;
    *result = static_cast<double>(static_cast<int>(bits >> 52) - 1023);
    return true;
  }
  MIXPREC_HOST_DEVICE refined_value refine() const noexcept { return {dd_log2(x), refined_relative_error}; }
};

struct log10_kernel {
  double x;
  MIXPREC_HOST_DEVICE double approximate() const noexcept { return libm::log10(x); }
  // x = 10^k (k >= 0; 10^-k is not a binary fraction): k.  10^k is exact in double to k = 22.
  MIXPREC_HOST_DEVICE bool exact(double* result) const noexcept {
    double power = 1.0;
    for (int k = 0; k <= 22; ++k, power *= 10.0) {
      if (power == x) {
        *result = static_cast<double>(k);
        return true;
      }
      if (power > x) break;
    }
    return false;
  }
  MIXPREC_HOST_DEVICE refined_value refine() const noexcept { return {dd_log10(x), refined_relative_error}; }
};

struct log1p_kernel {
  double x;
  MIXPREC_HOST_DEVICE double approximate() const noexcept { return libm::log1p(x); }
  MIXPREC_HOST_DEVICE bool exact(double*) const noexcept { return false; }
  MIXPREC_HOST_DEVICE refined_value refine() const noexcept { return {dd_log1p(x), refined_relative_error}; }
};

template <class Format, class Kernel>
MIXPREC_HOST_DEVICE minifloat<Format> correctly_rounded(const Kernel& kernel) noexcept {
  return minifloat<Format>(evaluate<Format>(kernel).representative);
}

}  // namespace detail

// e^x.  exp(±0) = 1, exp(-inf) = +0, exp(+inf) = +inf (F.10.3.1).
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> exp(minifloat<Format> x) noexcept {
  using T = minifloat<Format>;
  if (isnan(x)) return detail::quieted(x);
  const double v = static_cast<double>(x);
  if (isinf(x)) return T(v > 0 ? v : 0.0);
  return detail::correctly_rounded<Format>(detail::exp_kernel{v});
}

// 2^x.  As exp (F.10.3.2); 2^n for integral n is exact before rounding.
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> exp2(minifloat<Format> x) noexcept {
  using T = minifloat<Format>;
  if (isnan(x)) return detail::quieted(x);
  const double v = static_cast<double>(x);
  if (isinf(x)) return T(v > 0 ? v : 0.0);
  return detail::correctly_rounded<Format>(detail::exp2_kernel{v});
}

// e^x - 1.  expm1(±0) = ±0, expm1(-inf) = -1, expm1(+inf) = +inf (F.10.3.3).
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> expm1(minifloat<Format> x) noexcept {
  using T = minifloat<Format>;
  if (isnan(x)) return detail::quieted(x);
  const double v = static_cast<double>(x);
  if (isinf(x)) return T(v > 0 ? v : -1.0);
  return detail::correctly_rounded<Format>(detail::expm1_kernel{v});
}

namespace detail {
// The special values shared by log, log2 and log10 (F.10.3.7, .8, .11): log(±0) = -inf,
// log(1) = +0, log(x < 0) = NaN (invalid), log(+inf) = +inf.  Returns false for a finite x > 0.
template <class Format>
MIXPREC_HOST_DEVICE bool log_special(minifloat<Format> x, minifloat<Format>* result) noexcept {
  using T = minifloat<Format>;
  const double v = static_cast<double>(x);
  if (isnan(x)) {
    *result = quieted(x);
  } else if (v == 0.0) {
    *result = T(-detail::libm::infinity());
  } else if (v < 0.0) {
    *result = invalid_operation<Format>();
  } else if (isinf(x)) {
    *result = x;
  } else {
    return false;
  }
  return true;
}
}  // namespace detail

template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> log(minifloat<Format> x) noexcept {
  minifloat<Format> special{};
  if (detail::log_special(x, &special)) return special;
  return detail::correctly_rounded<Format>(detail::log_kernel{static_cast<double>(x)});
}

template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> log2(minifloat<Format> x) noexcept {
  minifloat<Format> special{};
  if (detail::log_special(x, &special)) return special;
  return detail::correctly_rounded<Format>(detail::log2_kernel{static_cast<double>(x)});
}

template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> log10(minifloat<Format> x) noexcept {
  minifloat<Format> special{};
  if (detail::log_special(x, &special)) return special;
  return detail::correctly_rounded<Format>(detail::log10_kernel{static_cast<double>(x)});
}

// ln(1 + x).  log1p(±0) = ±0, log1p(-1) = -inf, log1p(x < -1) = NaN, log1p(+inf) = +inf
// (F.10.3.9).
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> log1p(minifloat<Format> x) noexcept {
  using T = minifloat<Format>;
  if (isnan(x)) return detail::quieted(x);
  const double v = static_cast<double>(x);
  if (v == -1.0) return T(-detail::libm::infinity());
  if (v < -1.0) return detail::invalid_operation<Format>();
  if (isinf(x)) return x;
  return detail::correctly_rounded<Format>(detail::log1p_kernel{v});
}

}  // namespace mixprec
