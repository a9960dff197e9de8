// cmath.hpp's approximated functions (sqrt, exp, exp2, expm1, log, log2, log10, log1p, tanh,
// erf, pow) and fma, checked for correct rounding against Boost.Multiprecision at 200 bits (fma:
// exactly, at 640 bits), rounded into each format by the table oracle of reference_format.hpp,
// with the special values written out here from C17 Annex F and IEEE 754-2019.  Nothing here
// calls the library to compute an expected value.
//
// MIXPREC_MATH_EXHAUSTIVE=1 (the `exhaustive` build): every code of every format for the unary
// functions, every pair of codes of the 8-bit and smaller formats for pow (and every pair with
// a sample of addends for fma), 2^20 random pairs for float16 and bfloat16.  Otherwise (the
// `unit` build) a strided subset of the same sweeps.
#include <mixprec/cmath.hpp>
#include <mixprec/types.hpp>

#include <boost/multiprecision/cpp_bin_float.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "all_formats.hpp"
#include "reference_format.hpp"
#include "sweep.hpp"

#ifndef MIXPREC_MATH_EXHAUSTIVE
#define MIXPREC_MATH_EXHAUSTIVE 0
#endif

namespace {

namespace bmp = boost::multiprecision;
using real = bmp::number<bmp::cpp_bin_float<200, bmp::digit_base_2>, bmp::et_off>;
using wide_real = bmp::number<bmp::cpp_bin_float<640, bmp::digit_base_2>, bmp::et_off>;
using mixprec_test::code_class;
using mixprec_test::format_parameters;
using mixprec_test::reference_format;

constexpr bool exhaustive = MIXPREC_MATH_EXHAUSTIVE != 0;
// Codes of a 16-bit format visited by a unary sweep: all, or every 29th (the unit run).
constexpr std::uint32_t unary_stride_16 = exhaustive ? 1 : 29;
// Pairs of an 8-bit format: all, or every 23rd.
constexpr std::uint32_t pair_stride_8 = exhaustive ? 1 : 23;
// Random pairs of a 16-bit format.
constexpr std::uint32_t random_pairs_16 = exhaustive ? (1u << 20) : (1u << 11);
// Inputs within this relative distance of a rounding boundary are beyond what a 200-bit
// evaluation decides; the oracle accepts them only with a proof of exactness.
const real near_boundary = bmp::ldexp(real(1), -150);

// What a result is before it meets the format.
struct exact_value {
  enum class kind { number, infinity, invalid, nan_input };
  kind k = kind::number;
  bool negative = false;
  real magnitude = 0;          // for numbers (0 for a zero of the given sign)
  bool proven_exact = false;   // magnitude is the exact result (not a 200-bit approximation)
  std::uint32_t nan_code = 0;  // for nan_input: the input NaN's code
};

exact_value number(bool negative, const real& magnitude, bool proven_exact) {
  exact_value v;
  v.negative = negative;
  v.magnitude = magnitude;
  v.proven_exact = proven_exact;
  return v;
}
exact_value exact_number(double value) { return number(std::signbit(value), real(std::fabs(value)), true); }
exact_value infinity(bool negative) {
  exact_value v;
  v.k = exact_value::kind::infinity;
  v.negative = negative;
  return v;
}
exact_value invalid() {
  exact_value v;
  v.k = exact_value::kind::invalid;
  return v;
}
exact_value nan_input(std::uint32_t code) {
  exact_value v;
  v.k = exact_value::kind::nan_input;
  v.nan_code = code;
  return v;
}
// A value of an approximated function: its sign, and |value|, which must not be 0 (results
// that underflow the 200-bit range stay positive).
exact_value approximated(const real& value) {
  static const real tiny = bmp::ldexp(real(1), -100000);
  const bool negative = value < 0;
  if (bmp::isinf(value)) return infinity(negative);
  real magnitude = negative ? real(-value) : value;
  if (magnitude == 0) magnitude = tiny;
  return number(negative, magnitude, false);
}

// The rounding rules of DESIGN.md applied to an exact value, by reference_format's tables.
class oracle {
 public:
  explicit oracle(format_parameters p) : p_(p), table_(p) {}

  const format_parameters& parameters() const { return p_; }
  code_class classify(std::uint32_t code) const { return mixprec_test::classify(p_, code); }
  // The value of a code: ±inf and NaN for those codes, the textbook value otherwise.
  double value(std::uint32_t code) const {
    const double magnitude = std::fabs(mixprec_test::textbook_value(p_, code));
    const bool negative = (code & p_.sign_bit()) != 0;
    switch (classify(code)) {
      case code_class::nan:
        return std::nan("");
      case code_class::infinity:
        return negative ? -HUGE_VAL : HUGE_VAL;
      case code_class::finite:
        break;
    }
    return negative ? -magnitude : magnitude;
  }

  // The code the library must return for v; sets `undecided` when v is a 200-bit approximation
  // too close to a rounding boundary to round.
  std::uint32_t code_of(const exact_value& v, bool* undecided) const {
    *undecided = false;
    switch (v.k) {
      case exact_value::kind::nan_input:
        return quieted(v.nan_code);
      case exact_value::kind::invalid:
        return table_.nan(false);
      case exact_value::kind::infinity:
        return table_.infinity(v.negative, mixprec::overflow::non_finite);
      case exact_value::kind::number:
        break;
    }
    if (v.magnitude == 0) return table_.zero(v.negative, mixprec::overflow::non_finite);
    const auto position = table_.locate(v.magnitude);
    if (!v.proven_exact && !position.exact && (p_.has_subnormals || position.below >= 0)) {
      const real lower = table_.lower_value(position.below), upper = table_.upper_value(position.below);
      const real distance = bmp::abs(real(v.magnitude + v.magnitude - lower - upper));
      if (distance <= v.magnitude * near_boundary) *undecided = true;
    }
    return table_.round(v.negative, position, mixprec::rounding::nearest_even, mixprec::overflow::non_finite);
  }

  // An input NaN, quieted: IEEE-style formats set the quiet bit (the mantissa's top bit) and
  // keep sign and payload; "fn" formats have one NaN per sign, fnuz and e8m0 one NaN.
  std::uint32_t quieted(std::uint32_t code) const {
    switch (p_.specials) {
      case mixprec::special_encoding::ieee:
        return code | (1u << (p_.mantissa_bits - 1));
      case mixprec::special_encoding::nan_all_ones:
        return (code & p_.sign_bit()) | p_.magnitude_mask();
      default:
        return code;
    }
  }

 private:
  format_parameters p_;
  reference_format<real> table_;
};

template <class T>
const oracle& oracle_for() {
  static const oracle instance(mixprec_test::parameters_of<T>());
  return instance;
}

std::string num(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

std::string hex(std::uint32_t code) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%X", code);
  return buffer;
}

// Compares library and oracle on a list of inputs (computed on every core), and reports the
// first mismatches and any input the oracle could not decide.
struct sweep_result {
  std::size_t checked = 0;
  std::size_t mismatches = 0;
  std::size_t undecided = 0;
  std::vector<std::string> examples;
};

template <class Case, class Describe>
sweep_result run_sweep(const std::vector<Case>& cases, const std::function<std::uint32_t(const Case&)>& library,
                       const std::function<std::uint32_t(const Case&, bool*)>& expected, Describe describe) {
  std::vector<std::uint32_t> got(cases.size()), want(cases.size());
  std::vector<char> undecided(cases.size());
  mixprec_test::parallel_for(cases.size(), 64, [&](std::size_t i) {
    got[i] = library(cases[i]);
    bool u = false;
    want[i] = expected(cases[i], &u);
    undecided[i] = u;
  });
  sweep_result result;
  result.checked = cases.size();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (undecided[i]) ++result.undecided;
    if (got[i] != want[i]) {
      ++result.mismatches;
      if (result.examples.size() < 8)
        result.examples.push_back(describe(cases[i]) + ": got " + hex(got[i]) + ", want " + hex(want[i]));
    }
  }
  return result;
}

void report(const std::string& what, const sweep_result& r) {
  INFO(what << ": " << r.checked << " inputs, " << r.mismatches << " mismatches, " << r.undecided
            << " undecided by the oracle");
  std::string examples;
  for (const auto& e : r.examples) examples += "\n  " + e;
  INFO("first mismatches:" << examples);
  CHECK(r.undecided == 0);
  CHECK(r.mismatches == 0);
  if (exhaustive) std::printf("%-44s %10zu inputs, %zu mismatches\n", what.c_str(), r.checked, r.mismatches);
}

template <class T>
std::vector<std::uint32_t> unary_codes() {
  const std::uint32_t n = mixprec_test::code_count<T>();
  const std::uint32_t stride = n > 256 ? unary_stride_16 : 1;
  std::vector<std::uint32_t> codes;
  for (std::uint32_t c = 0; c < n; c += stride) codes.push_back(c);
  return codes;
}

template <class T>
T from_code(std::uint32_t code) {
  return T::from_bits(static_cast<typename T::storage_type>(code));
}

template <class T>
std::string type_name() {
  return mixprec::format_name<typename T::format>();
}

// ---- The exact values of the unary functions (C17 Annex F special values) ------------------

using unary_oracle = exact_value (*)(double x, std::uint32_t code, code_class c);

bool is_integer(double x) { return std::isfinite(x) && std::floor(x) == x; }

exact_value oracle_sqrt(double x, std::uint32_t code, code_class c) {
  if (c == code_class::nan) return nan_input(code);
  if (x == 0) return exact_number(x);
  if (x < 0) return invalid();
  if (c == code_class::infinity) return infinity(false);
  return number(false, bmp::sqrt(real(x)), false);
}

exact_value oracle_exp(double x, std::uint32_t code, code_class c) {
  if (c == code_class::nan) return nan_input(code);
  if (c == code_class::infinity) return x > 0 ? infinity(false) : exact_number(0.0);
  if (x == 0) return exact_number(1.0);
  return approximated(bmp::exp(real(x)));
}

exact_value oracle_exp2(double x, std::uint32_t code, code_class c) {
  if (c == code_class::nan) return nan_input(code);
  if (c == code_class::infinity) return x > 0 ? infinity(false) : exact_number(0.0);
  if (is_integer(x)) {
    const double n = std::max(-100000.0, std::min(100000.0, x));
    return number(false, bmp::ldexp(real(1), static_cast<int>(n)), true);
  }
  return approximated(bmp::exp(real(x) * bmp::log(real(2))));
}

exact_value oracle_expm1(double x, std::uint32_t code, code_class c) {
  if (c == code_class::nan) return nan_input(code);
  if (c == code_class::infinity) return x > 0 ? infinity(false) : exact_number(-1.0);
  if (x == 0) return exact_number(x);
  return approximated(bmp::expm1(real(x)));
}

// log, log2, log10 share their special values.
bool log_special(double x, std::uint32_t code, code_class c, exact_value* v) {
  if (c == code_class::nan) {
    *v = nan_input(code);
  } else if (x == 0) {
    *v = infinity(true);
  } else if (x < 0) {
    *v = invalid();
  } else if (c == code_class::infinity) {
    *v = infinity(false);
  } else if (x == 1) {
    *v = exact_number(0.0);
  } else {
    return false;
  }
  return true;
}

exact_value oracle_log(double x, std::uint32_t code, code_class c) {
  exact_value v;
  if (log_special(x, code, c, &v)) return v;
  return approximated(bmp::log(real(x)));
}

exact_value oracle_log2(double x, std::uint32_t code, code_class c) {
  exact_value v;
  if (log_special(x, code, c, &v)) return v;
  int e = 0;
  if (std::frexp(x, &e) == 0.5) return exact_number(e - 1);  // x = 2^(e-1)
  return approximated(bmp::log(real(x)) / bmp::log(real(2)));
}

exact_value oracle_log10(double x, std::uint32_t code, code_class c) {
  exact_value v;
  if (log_special(x, code, c, &v)) return v;
  real power = 1;
  for (int k = 0; k < 40 && power <= real(x); ++k, power *= 10) {
    if (power == real(x)) return exact_number(k);
  }
  return approximated(bmp::log10(real(x)));
}

exact_value oracle_log1p(double x, std::uint32_t code, code_class c) {
  if (c == code_class::nan) return nan_input(code);
  if (x == -1) return infinity(true);
  if (x < -1) return invalid();
  if (c == code_class::infinity) return infinity(false);
  if (x == 0) return exact_number(x);
  return approximated(bmp::log1p(real(x)));
}

exact_value oracle_tanh(double x, std::uint32_t code, code_class c) {
  if (c == code_class::nan) return nan_input(code);
  if (c == code_class::infinity) return exact_number(x > 0 ? 1.0 : -1.0);
  if (x == 0) return exact_number(x);
  return approximated(bmp::tanh(real(x)));
}

exact_value oracle_erf(double x, std::uint32_t code, code_class c) {
  if (c == code_class::nan) return nan_input(code);
  if (c == code_class::infinity) return exact_number(x > 0 ? 1.0 : -1.0);
  if (x == 0) return exact_number(x);
  return approximated(bmp::erf(real(x)));
}

template <class T, class Function>
void check_unary(const char* name, Function function, unary_oracle expected) {
  const oracle& o = oracle_for<T>();
  const std::vector<std::uint32_t> codes = unary_codes<T>();
  const sweep_result r = run_sweep<std::uint32_t>(
      codes, [&](const std::uint32_t& code) -> std::uint32_t { return function(from_code<T>(code)).bits(); },
      [&](const std::uint32_t& code, bool* undecided) {
        return o.code_of(expected(o.value(code), code, o.classify(code)), undecided);
      },
      [&](const std::uint32_t& code) {
        return std::string(name) + "(" + hex(code) + " = " + num(o.value(code)) + ")";
      });
  report(type_name<T>() + " " + name, r);
}

}  // namespace

#define MIXPREC_UNARY(function) [](auto x) { return mixprec::function(x); }

TEMPLATE_TEST_CASE("sqrt is correctly rounded on every input", "[math][sqrt]", MIXPREC_ALL_TYPES) {
  check_unary<TestType>("sqrt", MIXPREC_UNARY(sqrt), oracle_sqrt);
}

TEMPLATE_TEST_CASE("exp, exp2 and expm1 are correctly rounded on every input", "[math][exp]", MIXPREC_ALL_TYPES) {
  check_unary<TestType>("exp", MIXPREC_UNARY(exp), oracle_exp);
  check_unary<TestType>("exp2", MIXPREC_UNARY(exp2), oracle_exp2);
  check_unary<TestType>("expm1", MIXPREC_UNARY(expm1), oracle_expm1);
}

TEMPLATE_TEST_CASE("log, log2, log10 and log1p are correctly rounded on every input", "[math][log]",
                   MIXPREC_ALL_TYPES) {
  check_unary<TestType>("log", MIXPREC_UNARY(log), oracle_log);
  check_unary<TestType>("log2", MIXPREC_UNARY(log2), oracle_log2);
  check_unary<TestType>("log10", MIXPREC_UNARY(log10), oracle_log10);
  check_unary<TestType>("log1p", MIXPREC_UNARY(log1p), oracle_log1p);
}

TEMPLATE_TEST_CASE("tanh and erf are correctly rounded on every input", "[math][activation]", MIXPREC_ALL_TYPES) {
  check_unary<TestType>("tanh", MIXPREC_UNARY(tanh), oracle_tanh);
  check_unary<TestType>("erf", MIXPREC_UNARY(erf), oracle_erf);
}

// ---- pow --------------------------------------------------------------------------------------

namespace {

struct code_pair {
  std::uint32_t x, y;
};

// Whether x^y (x > 0 finite, y finite) equals the format value `candidate` exactly, decided in
// integers: with x = a 2^e (a odd), y = n / 2^k (n odd integer, k >= 0) and candidate = b 2^f
// (b odd), x^y = candidate iff b^(2^k) = a^n and f 2^k = e n (n > 0), or a = b = 1 and
// f 2^k = e n (n < 0).
bool power_equals(double x, double y, const real& candidate) {
  int k = 0;
  double n = y;
  while (!is_integer(n)) {
    n *= 2;
    ++k;
  }
  int e = 0;
  double a = std::frexp(x, &e);  // x = a 2^e, a in [0.5, 1)
  while (!is_integer(a)) {
    a *= 2;
    --e;
  }
  int f = 0;
  real b = bmp::frexp(candidate, &f);
  while (bmp::floor(b) != b) {
    b *= 2;
    --f;
  }
  using integer = bmp::cpp_int;
  const double exponent_product = static_cast<double>(e) * n;
  if (std::ldexp(static_cast<double>(f), k) != exponent_product) return false;
  if (n < 0 || a == 1) return a == 1 && b == 1;
  if (n * std::log2(a) > 1e6 || k > 16) return false;  // far beyond any value a format can hold
  const integer lhs = bmp::pow(integer(b.convert_to<long long>()), 1u << k);
  const integer rhs = bmp::pow(integer(static_cast<long long>(a)), static_cast<unsigned>(n));
  return lhs == rhs;
}

// pow's exact value by C17 F.10.4.4.
exact_value oracle_pow(const oracle& o, std::uint32_t x_code, std::uint32_t y_code) {
  const code_class cx = o.classify(x_code), cy = o.classify(y_code);
  const double x = cx == code_class::nan ? 0 : o.value(x_code);
  const double y = cy == code_class::nan ? 0 : o.value(y_code);
  const bool x_nan = cx == code_class::nan, y_nan = cy == code_class::nan;
  if (!y_nan && y == 0) return exact_number(1.0);
  if (!x_nan && x == 1) return exact_number(1.0);
  if (x_nan) return nan_input(x_code);
  if (y_nan) return nan_input(y_code);
  const bool y_integer = is_integer(y);
  const bool y_odd = y_integer && std::fmod(y, 2.0) != 0;
  const bool x_negative = std::signbit(x);
  if (x == 0) {
    if (y < 0) return infinity(y_odd && x_negative);
    return exact_number(y_odd ? x : 0.0);
  }
  if (std::isinf(y)) {
    if (x == -1) return exact_number(1.0);
    const bool below_one = std::fabs(x) < 1;
    return below_one == (y < 0) ? infinity(false) : exact_number(0.0);
  }
  if (std::isinf(x)) {
    const bool negative = x_negative && y_odd;
    return y < 0 ? exact_number(negative ? -0.0 : 0.0) : infinity(negative);
  }
  if (x_negative && !y_integer) return invalid();
  const bool negative = x_negative && y_odd;
  const real magnitude = bmp::pow(real(std::fabs(x)), real(y));
  exact_value v = approximated(magnitude);
  v.negative = negative;
  return v;
}

std::uint32_t expected_pow(const oracle& o, const code_pair& p, bool* undecided) {
  exact_value v = oracle_pow(o, p.x, p.y);
  std::uint32_t code = o.code_of(v, undecided);
  if (*undecided) {
    // A 200-bit value this close to a boundary: the boundary itself if x^y is exactly it.
    // Rounding the boundary needs its exact value: it is the midpoint nearest to v.
    const double x = std::fabs(o.value(p.x)), y = o.value(p.y);
    const double boundary_guess = v.magnitude.convert_to<double>();  // a (p+1)-bit number: exact
    if (power_equals(x, y, real(boundary_guess))) {
      v.magnitude = real(boundary_guess);
      v.proven_exact = true;
      code = o.code_of(v, undecided);
    }
  }
  return code;
}

template <class T>
void check_pow(const std::vector<code_pair>& pairs, const std::string& what) {
  const oracle& o = oracle_for<T>();
  const sweep_result r = run_sweep<code_pair>(
      pairs,
      [](const code_pair& p) -> std::uint32_t { return mixprec::pow(from_code<T>(p.x), from_code<T>(p.y)).bits(); },
      [&](const code_pair& p, bool* undecided) { return expected_pow(o, p, undecided); },
      [&](const code_pair& p) {
        return "pow(" + hex(p.x) + " = " + num(o.value(p.x)) + ", " + hex(p.y) + " = " + num(o.value(p.y)) + ")";
      });
  report(type_name<T>() + " " + what, r);
}

// Hand-picked codes of a 16-bit format: zeros, the extremes of each range, ±1 and its
// neighbours, small integers and halves, infinities and NaNs.
template <class T>
std::vector<std::uint32_t> special_codes() {
  using limits = std::numeric_limits<T>;
  const T values[] = {T(0.0),
                      T(1.0),
                      T(2.0),
                      T(3.0),
                      T(0.5),
                      T(1.5),
                      T(0.25),
                      T(10.0),
                      T(-1.0),
                      T(-2.0),
                      T(-3.0),
                      T(-0.5),
                      limits::max(),
                      limits::min(),
                      limits::denorm_min(),
                      limits::infinity(),
                      limits::quiet_NaN(),
                      limits::signaling_NaN(),
                      mixprec::nextafter(T(1.0), T(2.0)),
                      mixprec::nextafter(T(1.0), T(0.0))};
  std::vector<std::uint32_t> codes;
  const std::uint32_t sign = mixprec_test::parameters_of<T>().sign_bit();
  for (const T& v : values) {
    codes.push_back(v.bits());
    codes.push_back(v.bits() ^ sign);
  }
  std::sort(codes.begin(), codes.end());
  codes.erase(std::unique(codes.begin(), codes.end()), codes.end());
  return codes;
}

template <class T>
std::vector<code_pair> all_pairs_strided() {
  const std::uint32_t n = mixprec_test::code_count<T>();
  std::vector<code_pair> pairs;
  for (std::uint32_t i = 0; i < n * n; i += pair_stride_8) pairs.push_back({i / n, i % n});
  return pairs;
}

template <class T>
std::vector<code_pair> random_pairs(std::uint32_t count, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<std::uint32_t> code(0, mixprec_test::code_count<T>() - 1);
  std::vector<code_pair> pairs(count);
  for (auto& p : pairs) p = {code(random), code(random)};
  return pairs;
}

template <class T>
std::vector<code_pair> special_pairs() {
  const auto codes = special_codes<T>();
  std::vector<code_pair> pairs;
  for (auto x : codes)
    for (auto y : codes) pairs.push_back({x, y});
  return pairs;
}

}  // namespace

TEMPLATE_TEST_CASE("pow is correctly rounded on every pair of codes", "[math][pow]", mixprec::float8_e4m3fn,
                   mixprec::float8_e5m2, mixprec::float8_e4m3fnuz, mixprec::float8_e5m2fnuz, mixprec::float6_e3m2fn,
                   mixprec::float6_e2m3fn, mixprec::float4_e2m1fn, mixprec::float8_e8m0fnu, mixprec::float8_e4m3,
                   mixprec::float8_e3m4, mixprec::float8_e4m3b11fnuz) {
  check_pow<TestType>(all_pairs_strided<TestType>(), exhaustive ? "pow, all pairs" : "pow, strided pairs");
}

TEMPLATE_TEST_CASE("pow is correctly rounded on random pairs and on special-value pairs", "[math][pow]",
                   mixprec::float16, mixprec::bfloat16) {
  check_pow<TestType>(random_pairs<TestType>(random_pairs_16, 20240521), "pow, random pairs");
  check_pow<TestType>(special_pairs<TestType>(), "pow, special-value pairs");
}

TEMPLATE_TEST_CASE("pow is correctly rounded where x^y is exact: small integral and half-integral y", "[math][pow]",
                   mixprec::float16, mixprec::bfloat16) {
  // y in {2, 3, 1.5, 0.5, -1, -2, 0.25, 2.5}: squares, cubes and roots that land exactly on
  // values and midpoints (47^2 = 2209 and 169^1.5 = 2197 are float16 ties).
  const double exponents[] = {2, 3, 1.5, 0.5, -1, -2, 0.25, 2.5};
  const std::uint32_t stride = exhaustive ? 1 : 37;
  std::vector<code_pair> pairs;
  for (double y : exponents) {
    const std::uint32_t y_code = TestType(y).bits();
    for (std::uint32_t x = 0; x < mixprec_test::code_count<TestType>(); x += stride) pairs.push_back({x, y_code});
  }
  check_pow<TestType>(pairs, "pow, exact-prone exponents");
}

// ---- fma -------------------------------------------------------------------------------------

namespace {

struct code_triple {
  std::uint32_t x, y, z;
};

// fma's exact value: x y + z in 640 bits holds every such sum of the library's formats exactly
// (products span 2^-266 ... 2^256).
template <class T>
std::uint32_t expected_fma(const code_triple& t, bool* undecided) {
  static const reference_format<wide_real> table(mixprec_test::parameters_of<T>());
  const oracle& o = oracle_for<T>();
  *undecided = false;
  const code_class cx = o.classify(t.x), cy = o.classify(t.y), cz = o.classify(t.z);
  if (cx == code_class::nan) return o.quieted(t.x);
  if (cy == code_class::nan) return o.quieted(t.y);
  if (cz == code_class::nan) return o.quieted(t.z);
  const double x = o.value(t.x), y = o.value(t.y), z = o.value(t.z);
  const bool product_infinite = std::isinf(x) || std::isinf(y);
  if (product_infinite && (x == 0 || y == 0)) return table.nan(false);  // inf × 0
  const bool product_negative = std::signbit(x) != std::signbit(y);
  if (product_infinite || std::isinf(z)) {
    if (product_infinite && std::isinf(z) && product_negative != std::signbit(z)) return table.nan(false);
    const bool negative = product_infinite ? product_negative : std::signbit(z);
    return table.infinity(negative, mixprec::overflow::non_finite);
  }
  const wide_real sum = wide_real(x) * wide_real(y) + wide_real(z);
  if (sum == 0) {
    // IEEE 754-2019 §6.3: an exact zero sum is +0 unless both addends are -0 (under nearest).
    const bool product_is_zero = x == 0 || y == 0;
    const bool negative = product_is_zero && product_negative && std::signbit(z) && z == 0;
    return table.zero(negative, mixprec::overflow::non_finite);
  }
  const bool negative = sum < 0;
  return table.round(negative, table.locate(negative ? wide_real(-sum) : sum), mixprec::rounding::nearest_even,
                     mixprec::overflow::non_finite);
}

template <class T>
void check_fma(const std::vector<code_triple>& triples, const std::string& what) {
  const oracle& o = oracle_for<T>();
  const sweep_result r = run_sweep<code_triple>(
      triples,
      [](const code_triple& t) -> std::uint32_t {
        return mixprec::fma(from_code<T>(t.x), from_code<T>(t.y), from_code<T>(t.z)).bits();
      },
      [](const code_triple& t, bool* undecided) { return expected_fma<T>(t, undecided); },
      [&](const code_triple& t) {
        return "fma(" + hex(t.x) + " = " + num(o.value(t.x)) + ", " + hex(t.y) + " = " + num(o.value(t.y)) + ", " +
               hex(t.z) + " = " + num(o.value(t.z)) + ")";
      });
  report(type_name<T>() + " " + what, r);
}

// Addends that interact with a product's rounding: near -x y (cancellation), a few binades
// below it (the sticky bits), and anywhere.
template <class T>
std::uint32_t addend_for(std::uint32_t x, std::uint32_t y, std::uint32_t choice, std::mt19937& random) {
  const oracle& o = oracle_for<T>();
  const std::uint32_t n = mixprec_test::code_count<T>();
  const std::uint32_t sign = o.parameters().sign_bit();
  std::uniform_int_distribution<std::uint32_t> any(0, n - 1);
  std::uniform_int_distribution<int> offset(-3, 3);
  if (choice == 0 || o.classify(x) != code_class::finite || o.classify(y) != code_class::finite) return any(random);
  const double product = o.value(x) * o.value(y);
  // The code of the largest finite magnitude <= |product|: finite magnitudes are ordered by
  // their codes, and the non-finite ones sit above them.
  std::uint32_t top = o.parameters().magnitude_mask();
  while (o.classify(top) != code_class::finite) --top;
  std::uint32_t low = 0, high = top;
  while (low < high) {
    const std::uint32_t middle = (low + high + 1) / 2;
    if (o.value(middle) <= std::fabs(product)) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  const std::uint32_t near = low;
  const std::uint32_t magnitude_mask = top;
  const int shift = choice == 1 ? 0 : (1 + static_cast<int>(random() % 6)) << o.parameters().mantissa_bits;
  const long code = static_cast<long>(near) - shift + offset(random);
  const std::uint32_t magnitude = static_cast<std::uint32_t>(std::max(0L, std::min<long>(code, magnitude_mask)));
  const bool opposite = choice == 1 || (random() & 1);
  const bool product_negative = std::signbit(product);
  const bool negative = (opposite != product_negative) && sign != 0;
  const std::uint32_t z = magnitude | (negative ? sign : 0);
  return o.classify(z) == code_class::nan ? magnitude : z;
}

}  // namespace

TEMPLATE_TEST_CASE("fma is correctly rounded on every pair of codes with sampled addends", "[math][fma]",
                   mixprec::float8_e4m3fn, mixprec::float8_e5m2, mixprec::float8_e4m3fnuz, mixprec::float8_e5m2fnuz,
                   mixprec::float6_e3m2fn, mixprec::float6_e2m3fn, mixprec::float4_e2m1fn, mixprec::float8_e8m0fnu,
                   mixprec::float8_e4m3, mixprec::float8_e3m4, mixprec::float8_e4m3b11fnuz) {
  std::mt19937 random(7);
  std::vector<code_triple> triples;
  for (const code_pair& p : all_pairs_strided<TestType>()) {
    for (std::uint32_t choice = 0; choice < 3; ++choice) {
      for (int repeat = 0; repeat < 3; ++repeat)
        triples.push_back({p.x, p.y, addend_for<TestType>(p.x, p.y, choice, random)});
    }
  }
  check_fma<TestType>(triples, exhaustive ? "fma, all pairs x 9 addends" : "fma, strided pairs x 9 addends");
  // fp6 and fp4 are small enough for every triple.
  const std::uint32_t n = mixprec_test::code_count<TestType>();
  if (n <= 64) {
    triples.clear();
    for (std::uint32_t i = 0; i < n * n * n; i += pair_stride_8) triples.push_back({i / (n * n), i / n % n, i % n});
    check_fma<TestType>(triples, exhaustive ? "fma, all triples" : "fma, strided triples");
  }
}

TEMPLATE_TEST_CASE("fma is correctly rounded on random triples and on special-value triples", "[math][fma]",
                   mixprec::float16, mixprec::bfloat16) {
  std::mt19937 random(11);
  std::vector<code_triple> triples;
  const auto pairs = random_pairs<TestType>(random_pairs_16, 20240522);
  std::uint32_t choice = 0;
  for (const code_pair& p : pairs) triples.push_back({p.x, p.y, addend_for<TestType>(p.x, p.y, choice++ % 3, random)});
  check_fma<TestType>(triples, "fma, random triples");
  const auto codes = special_codes<TestType>();
  triples.clear();
  for (auto x : codes)
    for (auto y : codes)
      for (auto z : codes) triples.push_back({x, y, z});
  check_fma<TestType>(triples, "fma, special-value triples");
}
