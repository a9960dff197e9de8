// Double-double arithmetic (a value held as the unevaluated sum hi + lo of two doubles, about
// 106 significant bits) and the elementary functions in it.  mixprec's <cmath> functions first
// evaluate with the C library in double; only when that result lies too close to a rounding
// boundary of the target format to decide (math/correct_rounding.hpp) do they come here.  So
// these routines are written for accuracy and plainness, not speed.
//
// Algorithms: error-free sums and products (Knuth's TwoSum, Dekker's FastTwoSum and product),
// and the double-double operations of Hida, Li & Bailey's QD library paper ("Algorithms for
// quad-double precision floating point arithmetic", ARITH 2001), each with a relative error
// of a few units of 2^-106.  Each function below states its relative error bound;
// tests/math/double_double_test.cpp checks every bound on every value of every format against
// Boost.Multiprecision, and math/correct_rounding.hpp assumes only 2^-80.  The bounds hold for
// results of magnitude at least 2^-860: below, the low part becomes subnormal, but such results
// lie far below every format and round to its zero (or smallest value) whatever their error.
#pragma once

#include "libm.hpp"

namespace mixprec::detail {

struct double_double {
  double hi;
  double lo;  // |lo| <= ulp(hi) / 2 after normalisation
};

// a + b = s + e exactly (Knuth, TAOCP vol. 2, §4.2.2, Theorem B).
MIXPREC_HOST_DEVICE inline double_double two_sum(double a, double b) noexcept {
  const double s = a + b;
  const double b_virtual = s - a;
  const double a_virtual = s - b_virtual;
  return {s, (a - a_virtual) + (b - b_virtual)};
}

// The same when |a| >= |b| (Dekker).
MIXPREC_HOST_DEVICE inline double_double fast_two_sum(double a, double b) noexcept {
  const double s = a + b;
  return {s, b - (s - a)};
}

MIXPREC_HOST_DEVICE inline double_double two_product(double a, double b) noexcept {
  const double p = a * b;
  return {p, libm::product_error(a, b, p)};
}

MIXPREC_HOST_DEVICE inline double_double dd_add(double_double a, double_double b) noexcept {
  double_double s = two_sum(a.hi, b.hi);
  const double_double t = two_sum(a.lo, b.lo);
  s.lo += t.hi;
  s = fast_two_sum(s.hi, s.lo);
  s.lo += t.lo;
  return fast_two_sum(s.hi, s.lo);
}

MIXPREC_HOST_DEVICE inline double_double dd_add(double_double a, double b) noexcept {
  double_double s = two_sum(a.hi, b);
  s.lo += a.lo;
  return fast_two_sum(s.hi, s.lo);
}

MIXPREC_HOST_DEVICE inline double_double dd_negate(double_double a) noexcept { return {-a.hi, -a.lo}; }

MIXPREC_HOST_DEVICE inline double_double dd_mul(double_double a, double_double b) noexcept {
  double_double p = two_product(a.hi, b.hi);
  p.lo += a.hi * b.lo + a.lo * b.hi;
  return fast_two_sum(p.hi, p.lo);
}

MIXPREC_HOST_DEVICE inline double_double dd_mul(double_double a, double b) noexcept {
  double_double p = two_product(a.hi, b);
  p.lo += a.lo * b;
  return fast_two_sum(p.hi, p.lo);
}

// Long division: three quotient digits, each correcting the remainder of the last.
MIXPREC_HOST_DEVICE inline double_double dd_div(double_double a, double_double b) noexcept {
  const double q1 = a.hi / b.hi;
  double_double r = dd_add(a, dd_negate(dd_mul(b, q1)));
  const double q2 = r.hi / b.hi;
  r = dd_add(r, dd_negate(dd_mul(b, q2)));
  const double q3 = r.hi / b.hi;
  return dd_add(fast_two_sum(q1, q2), q3);
}

// Exact scaling by 2^n (no over- or underflow for the arguments used here).
MIXPREC_HOST_DEVICE inline double_double dd_ldexp(double_double a, int n) noexcept {
  return {libm::ldexp(a.hi, n), libm::ldexp(a.lo, n)};
}

// Constants rounded to double-double (the first 106 bits; computed with mpmath at 300 bits).
namespace dd_constants {
constexpr double_double ln2{0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};
constexpr double ln2_third = 0x1.7b57a079a1934p-111;  // ln 2 - ln2.hi - ln2.lo, rounded
constexpr double_double inv_ln2{0x1.71547652b82fep+0, 0x1.777d0ffda0d24p-56};
constexpr double_double inv_ln10{0x1.bcb7b1526e50ep-2, 0x1.95355baaafad3p-57};
constexpr double_double two_over_sqrt_pi{0x1.20dd750429b6dp+0, 0x1.1ae3a914fed80p-56};
// Beyond these the double-double exponential over- or underflows; no format reaches them.
constexpr double exp_argument_max = 709.0;
constexpr double exp_argument_min = -744.0;
}  // namespace dd_constants

// e^r - 1 for |r| <= 0.5, to a relative error below 2^-102: Taylor's series on r / 2^6
// (13 terms reach 2^-110), then six doublings e^(2s) - 1 = (e^s - 1)(e^s - 1 + 2), which keep
// the relative accuracy of a small result (no cancellation against 1).
MIXPREC_HOST_DEVICE inline double_double dd_expm1_reduced(double_double r) noexcept {
  constexpr int halvings = 6;
  constexpr int terms = 13;
  const double_double s = dd_ldexp(r, -halvings);
  // Horner: s (1 + s/2 (1 + s/3 (1 + ... (1 + s/terms)))).
  double_double sum{1.0, 0.0};
  for (int k = terms; k >= 2; --k) {
    sum = dd_add(dd_div(dd_mul(sum, s), double_double{static_cast<double>(k), 0.0}), 1.0);
  }
  double_double em1 = dd_mul(sum, s);
  for (int i = 0; i < halvings; ++i) em1 = dd_mul(em1, dd_add(em1, 2.0));
  return em1;
}

// e^t.  t = k ln 2 + r with |r| <= ln 2 / 2, e^t = 2^k (1 + (e^r - 1)).  k ln 2 is taken to
// 160 bits (ln 2 as three doubles, the first two products exact), so the reduction costs no
// accuracy even for |k| ~ 1000.  Relative error < 2^-103.
MIXPREC_HOST_DEVICE inline double_double dd_exp(double_double t) noexcept {
  if (t.hi > dd_constants::exp_argument_max) return {libm::infinity(), 0.0};
  // Below the range the result is tiny but positive: the smallest subnormal stands for it (it
  // rounds into every format as the exact value does, to +0 or, in e8m0, 2^-127).
  if (t.hi < dd_constants::exp_argument_min) return {libm::smallest_subnormal(), 0.0};
  const double k = libm::floor(t.hi * dd_constants::inv_ln2.hi + 0.5);
  double_double r = dd_add(t, dd_negate(two_product(k, dd_constants::ln2.hi)));
  r = dd_add(r, dd_negate(two_product(k, dd_constants::ln2.lo)));
  r = dd_add(r, -k * dd_constants::ln2_third);
  const double_double e = dd_add(dd_expm1_reduced(r), 1.0);
  return dd_ldexp(e, static_cast<int>(k));
}

// e^x - 1, relative error < 2^-101: the series where e^x is near 1, e^x - 1 elsewhere (where
// |e^x - 1| >= 0.39 loses under two bits).
MIXPREC_HOST_DEVICE inline double_double dd_expm1(double x) noexcept {
  if (x == 0.0) return {x, 0.0};  // ±0, sign kept
  if (x > dd_constants::exp_argument_max) return {libm::infinity(), 0.0};
  if (x > -0.5 && x < 0.5) return dd_expm1_reduced(double_double{x, 0.0});
  return dd_add(dd_exp(double_double{x, 0.0}), -1.0);
}

// ln(1 + f) for |f| <= 0.25 given in double-double: 2 atanh(u), u = f / (2 + f), |u| <= 1/7,
// = 2 (u + u^3/3 + u^5/5 + ...); 24 terms reach 2^-110.  Relative error < 2^-100.
MIXPREC_HOST_DEVICE inline double_double dd_log1p_series(double_double f) noexcept {
  constexpr int terms = 24;
  const double_double u = dd_div(f, dd_add(f, 2.0));
  const double_double u2 = dd_mul(u, u);
  double_double sum = dd_div(double_double{1.0, 0.0}, double_double{2.0 * terms + 1.0, 0.0});
  for (int k = terms - 1; k >= 0; --k) {
    const double_double term = dd_div(double_double{1.0, 0.0}, double_double{2.0 * k + 1.0, 0.0});
    sum = dd_add(dd_mul(sum, u2), term);
  }
  return dd_ldexp(dd_mul(sum, u), 1);
}

// ln a for a > 0 in double-double, |ln a| >= 0.2: Newton's iteration y <- y + a e^-y - 1 from
// the C library's log, twice (each squares the error; the second is a safety margin for a
// poor library log).  Absolute error < 2^-103, so relative error < 2^-101.
MIXPREC_HOST_DEVICE inline double_double dd_log_newton(double_double a) noexcept {
  double_double y{libm::log(a.hi), 0.0};
  for (int i = 0; i < 2; ++i) {
    const double_double residual = dd_add(dd_mul(a, dd_exp(dd_negate(y))), -1.0);
    y = dd_add(y, residual);
  }
  return y;
}

// ln x for a finite x > 0.  Relative error < 2^-101.
MIXPREC_HOST_DEVICE inline double_double dd_log(double x) noexcept {
  // Near 1, x - 1 is exact (Sterbenz) and the series keeps the relative accuracy of a small
  // logarithm.
  if (x > 0.75 && x < 1.25) return dd_log1p_series(double_double{x - 1.0, 0.0});
  return dd_log_newton(double_double{x, 0.0});
}

// ln(1 + x) for x > -1.  Relative error < 2^-101.
MIXPREC_HOST_DEVICE inline double_double dd_log1p(double x) noexcept {
  if (x == 0.0) return {x, 0.0};
  if (x > -0.25 && x < 0.25) return dd_log1p_series(double_double{x, 0.0});
  return dd_log_newton(two_sum(1.0, x));  // 1 + x exactly
}

// 2^x, log2 x, log10 x, x^y (x > 0): through e^t and ln x.  Relative errors < 2^-101 for the
// first three; for x^y the error of t = y ln x, |t| 2^-101, adds to e^t's: (|t| + 1) 2^-101.
MIXPREC_HOST_DEVICE inline double_double dd_exp2(double x) noexcept {
  // 2^x = 2^n e^(f ln 2) with n = round(x) and f = x - n exact: f ln 2 is small, so its
  // double-double rounding error is small too (x ln 2 whole would carry |x| 2^-106).
  if (!(x > -1100.0 && x < 1100.0)) return dd_exp(double_double{x, 0.0});  // over- or underflows
  const double n = libm::floor(x + 0.5);
  return dd_ldexp(dd_exp(dd_mul(dd_constants::ln2, x - n)), static_cast<int>(n));
}
MIXPREC_HOST_DEVICE inline double_double dd_log2(double x) noexcept { return dd_mul(dd_log(x), dd_constants::inv_ln2); }
MIXPREC_HOST_DEVICE inline double_double dd_log10(double x) noexcept {
  return dd_mul(dd_log(x), dd_constants::inv_ln10);
}
MIXPREC_HOST_DEVICE inline double_double dd_pow(double x, double y, double* exponent_magnitude) noexcept {
  const double_double t = dd_mul(dd_log(x), y);
  *exponent_magnitude = t.hi < 0 ? -t.hi : t.hi;
  return dd_exp(t);
}

// tanh x = (e^2x - 1) / (e^2x - 1 + 2) on |x|, odd.  Relative error < 2^-101.
MIXPREC_HOST_DEVICE inline double_double dd_tanh(double x) noexcept {
  const double a = x < 0 ? -x : x;
  if (a == 0.0) return {x, 0.0};
  if (a > 40.0) return {x < 0 ? -1.0 : 1.0, 0.0};  // 1 - tanh a < 2^-115
  const double_double e = dd_expm1(2.0 * a);
  const double_double t = dd_div(e, dd_add(e, 2.0));
  return x < 0 ? dd_negate(t) : t;
}

// erf x = (2/√π) x e^(-x²) Σ_{n>=0} (2x²)^n / (1·3·5···(2n+1)) (Abramowitz & Stegun 7.1.6): a
// series of positive terms, so no cancellation, for |x| <= 8 (at most about 400 terms); beyond,
// 1 - erf|x| < 2^-96.  Relative error < 2^-95.
MIXPREC_HOST_DEVICE inline double_double dd_erf(double x) noexcept {
  const double a = x < 0 ? -x : x;
  if (a == 0.0) return {x, 0.0};
  if (a > 8.0) return {x < 0 ? -1.0 : 1.0, 0.0};
  const double_double a2 = two_product(a, a);
  const double_double two_a2 = dd_ldexp(a2, 1);
  double_double term{1.0, 0.0}, sum{1.0, 0.0};
  for (int n = 1; n < 1000; ++n) {
    term = dd_div(dd_mul(term, two_a2), double_double{2.0 * n + 1.0, 0.0});
    sum = dd_add(sum, term);
    if (term.hi < sum.hi * 0x1p-110) break;
  }
  const double_double scale = dd_mul(dd_exp(dd_negate(a2)), dd_mul(dd_constants::two_over_sqrt_pi, a));
  const double_double e = dd_mul(sum, scale);
  return x < 0 ? dd_negate(e) : e;
}

}  // namespace mixprec::detail
