// The C library's double (and float) functions, callable from host and device code: std:: on
// the host, the CUDA math library's global-namespace overloads in nvcc's device pass.  Nothing
// else in mixprec/math names <cmath> directly, so the host/device split lives here only.
#pragma once

#include <cmath>
#include <cstdint>

#include "../config.hpp"
#include "../detail/bits.hpp"

namespace mixprec::detail::libm {

#if MIXPREC_DEVICE_PASS
#define MIXPREC_DETAIL_LIBM_1(name) \
  MIXPREC_HOST_DEVICE inline double name(double x) noexcept { return ::name(x); }
#define MIXPREC_DETAIL_LIBM_1F(name) \
  MIXPREC_HOST_DEVICE inline float name(float x) noexcept { return ::name##f(x); }
#define MIXPREC_DETAIL_LIBM_2(name) \
  MIXPREC_HOST_DEVICE inline double name(double x, double y) noexcept { return ::name(x, y); }
#else
#define MIXPREC_DETAIL_LIBM_1(name) \
  MIXPREC_HOST_DEVICE inline double name(double x) noexcept { return std::name(x); }
#define MIXPREC_DETAIL_LIBM_1F(name) \
  MIXPREC_HOST_DEVICE inline float name(float x) noexcept { return std::name(x); }
#define MIXPREC_DETAIL_LIBM_2(name) \
  MIXPREC_HOST_DEVICE inline double name(double x, double y) noexcept { return std::name(x, y); }
#endif

MIXPREC_DETAIL_LIBM_1(sqrt)
MIXPREC_DETAIL_LIBM_1F(sqrt)
MIXPREC_DETAIL_LIBM_1(floor)
MIXPREC_DETAIL_LIBM_1F(floor)
MIXPREC_DETAIL_LIBM_1(ceil)
MIXPREC_DETAIL_LIBM_1F(ceil)
MIXPREC_DETAIL_LIBM_1(trunc)
MIXPREC_DETAIL_LIBM_1F(trunc)
MIXPREC_DETAIL_LIBM_1(round)
MIXPREC_DETAIL_LIBM_1F(round)
MIXPREC_DETAIL_LIBM_1(exp)
MIXPREC_DETAIL_LIBM_1(exp2)
MIXPREC_DETAIL_LIBM_1(expm1)
MIXPREC_DETAIL_LIBM_1(log)
MIXPREC_DETAIL_LIBM_1(log2)
MIXPREC_DETAIL_LIBM_1(log10)
MIXPREC_DETAIL_LIBM_1(log1p)
MIXPREC_DETAIL_LIBM_1(tanh)
MIXPREC_DETAIL_LIBM_1(erf)
MIXPREC_DETAIL_LIBM_2(pow)
MIXPREC_DETAIL_LIBM_2(fmod)

#undef MIXPREC_DETAIL_LIBM_1
#undef MIXPREC_DETAIL_LIBM_1F
#undef MIXPREC_DETAIL_LIBM_2

MIXPREC_HOST_DEVICE inline double ldexp(double x, int n) noexcept {
#if MIXPREC_DEVICE_PASS
  return ::ldexp(x, n);
#else
  return std::ldexp(x, n);
#endif
}

// a × b - p exactly, for p = a × b rounded: the error of a product (a fused multiply-add where
// the hardware has one, Dekker's splitting otherwise; Dekker 1971, "A floating-point technique
// for extending the available precision").  Exact unless a × b over- or underflows.
MIXPREC_HOST_DEVICE inline double product_error(double a, double b, double p) noexcept {
#if MIXPREC_DEVICE_PASS
  return ::fma(a, b, -p);
#elif defined(FP_FAST_FMA)
  return std::fma(a, b, -p);
#else
  // Without a hardware FMA the compiler cannot contract the lines below into one, so each
  // operation rounds as written.  2^27 + 1 splits a double into two 26-bit halves.
  constexpr double splitter = 134217729.0;
  const double ta = splitter * a, tb = splitter * b;
  const double a_high = ta - (ta - a), a_low = a - a_high;
  const double b_high = tb - (tb - b), b_low = b - b_high;
  return ((a_high * b_high - p) + a_high * b_low + a_low * b_high) + a_low * b_low;
#endif
}

// IEEE 754 constants without std::numeric_limits (whose members device code may not call).
MIXPREC_HOST_DEVICE inline double infinity() noexcept { return bit_cast<double>(std::uint64_t{0x7FF0000000000000}); }
MIXPREC_HOST_DEVICE inline double quiet_nan() noexcept { return bit_cast<double>(std::uint64_t{0x7FF8000000000000}); }
MIXPREC_HOST_DEVICE inline double smallest_subnormal() noexcept { return bit_cast<double>(std::uint64_t{1}); }
MIXPREC_HOST_DEVICE inline bool is_finite(double x) noexcept { return x - x == 0.0; }

}  // namespace mixprec::detail::libm
