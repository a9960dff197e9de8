// cmath.hpp on hand-picked inputs: each rule of docs/math.md once, by name (the sweeps in
// elementary_test.cpp and exact_functions_test.cpp check every input against the oracle).
#include <mixprec/cmath.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "all_formats.hpp"

using namespace mixprec;

namespace {
template <class T>
double value(T x) {
  return static_cast<double>(x);
}
template <class T>
T nan_of() {
  return std::numeric_limits<T>::quiet_NaN();
}
template <class T>
T inf_of() {
  return std::numeric_limits<T>::infinity();
}
}  // namespace

TEST_CASE("the std names find the minifloat overloads by argument-dependent lookup", "[math][cmath]") {
  using std::exp;
  using std::sqrt;
  const float16 x(2.0);
  STATIC_REQUIRE(std::is_same<decltype(exp(x)), float16>::value);
  STATIC_REQUIRE(std::is_same<decltype(sqrt(x)), float16>::value);
  STATIC_REQUIRE(std::is_same<decltype(pow(x, x)), float16>::value);
  STATIC_REQUIRE(std::is_same<decltype(isnan(x)), bool>::value);
  STATIC_REQUIRE(std::is_same<decltype(exp(2.0)), double>::value);  // the double overload still wins for double
  CHECK(value(sqrt(x)) == value(float16(1.4142135623730951)));
}

TEST_CASE("the exact functions are usable in constant expressions", "[math][cmath]") {
  STATIC_REQUIRE(isnan(std::numeric_limits<float16>::quiet_NaN()));
  STATIC_REQUIRE(!isfinite(std::numeric_limits<bfloat16>::infinity()));
  STATIC_REQUIRE(isnormal(float8_e8m0fnu::from_bits(0)));  // 2^-127 is normal: e8m0 has no subnormals
  STATIC_REQUIRE(signbit(float16::from_bits(0x8000)));
  STATIC_REQUIRE(copysign(float16::from_bits(0x3C00), float16::from_bits(0x8000)).bits() == 0xBC00);
  STATIC_REQUIRE(fmin(float16::from_bits(0x0000), float16::from_bits(0x8000)).bits() == 0x8000);
  STATIC_REQUIRE(nextafter(float16::from_bits(0x3C00), float16::from_bits(0x4000)).bits() == 0x3C01);
  STATIC_REQUIRE(ldexp(float16::from_bits(0x3C00), -24).bits() == 0x0001);
  STATIC_REQUIRE(abs(float8_e4m3fn::from_bits(0xFF)).bits() == 0x7F);
}

TEST_CASE("results exactly on a rounding boundary round to even", "[math][cmath][ties]") {
  // 169^1.5 = 2197, midway between the float16 values 2196 (even) and 2198.
  CHECK(value(pow(float16(169.0), float16(1.5))) == 2196.0);
  // 47^2 = 2209, midway between 2208 (even) and 2210.
  CHECK(value(pow(float16(47.0), float16(2.0))) == 2208.0);
  // 2^-25 is midway between 0 and the smallest subnormal 2^-24: +0.
  CHECK(exp2(float16(-25.0)).bits() == 0x0000);
  CHECK(exp2(float16(-24.0)).bits() == 0x0001);
  // log2(512) = 9, midway between the e5m2 values 8 (even) and 10; log2(2048) = 11 → 12.
  CHECK(value(log2(float8_e5m2(512.0))) == 8.0);
  CHECK(value(log2(float8_e5m2(2048.0))) == 12.0);
  // e8m0 breaks ties upward: log2(8) = 3 → 4, as its conversion does.
  CHECK(value(log2(float8_e8m0fnu(8.0))) == 4.0);
  // log10(1000) = 3 exactly; 10000 = 2^4 × 625 is a float16 value, log10 of it 4.
  CHECK(value(log10(float16(1000.0))) == 3.0);
  CHECK(value(log10(float16(10000.0))) == 4.0);
}

TEST_CASE("pow follows C17 Annex F.10.4.4", "[math][cmath][pow]") {
  const float16 nan = nan_of<float16>(), inf = inf_of<float16>();
  CHECK(value(pow(nan, float16(0.0))) == 1.0);  // pow(x, ±0) = 1 even for NaN x
  CHECK(value(pow(nan, float16::from_bits(0x8000))) == 1.0);
  CHECK(value(pow(float16(1.0), nan)) == 1.0);  // pow(+1, y) = 1 even for NaN y
  CHECK(isnan(pow(nan, float16(1.0))));
  CHECK(value(pow(float16(-1.0), inf)) == 1.0);
  CHECK(value(pow(float16(-1.0), -inf)) == 1.0);
  CHECK(pow(float16::from_bits(0x8000), float16(-3.0)).bits() == 0xFC00);  // -inf
  CHECK(pow(float16::from_bits(0x8000), float16(-2.0)).bits() == 0x7C00);  // +inf
  CHECK(pow(float16::from_bits(0x8000), float16(3.0)).bits() == 0x8000);   // -0
  CHECK(pow(float16::from_bits(0x8000), float16(2.5)).bits() == 0x0000);   // +0
  CHECK(value(pow(float16(0.5), -inf)) == HUGE_VAL);
  CHECK(value(pow(float16(2.0), -inf)) == 0.0);
  CHECK(value(pow(float16(0.5), inf)) == 0.0);
  CHECK(pow(-inf, float16(-3.0)).bits() == 0x8000);
  CHECK(pow(-inf, float16(3.0)).bits() == 0xFC00);
  CHECK(pow(-inf, float16(2.0)).bits() == 0x7C00);
  CHECK(isnan(pow(float16(-8.0), float16(0.5))));  // negative base, non-integral exponent
  CHECK(value(pow(float16(-2.0), float16(3.0))) == -8.0);
  CHECK(value(pow(float16(-2.0), float16(-2.0))) == 0.25);
}

TEST_CASE("special values of the other functions follow C17 Annex F", "[math][cmath]") {
  const float16 nan = nan_of<float16>(), inf = inf_of<float16>(), minus_zero = float16::from_bits(0x8000);
  CHECK(sqrt(minus_zero).bits() == 0x8000);
  CHECK(isnan(sqrt(float16(-1.0))));
  CHECK(log(float16(0.0)).bits() == 0xFC00);
  CHECK(log(minus_zero).bits() == 0xFC00);
  CHECK(log(float16(1.0)).bits() == 0x0000);
  CHECK(isnan(log(float16(-1.0))));
  CHECK(exp(-inf).bits() == 0x0000);
  CHECK(exp(inf).bits() == 0x7C00);
  CHECK(exp(minus_zero).bits() == 0x3C00);
  CHECK(expm1(minus_zero).bits() == 0x8000);
  CHECK(value(expm1(-inf)) == -1.0);
  CHECK(log1p(float16(-1.0)).bits() == 0xFC00);
  CHECK(log1p(minus_zero).bits() == 0x8000);
  CHECK(value(tanh(-inf)) == -1.0);
  CHECK(tanh(minus_zero).bits() == 0x8000);
  CHECK(value(erf(inf)) == 1.0);
  CHECK(erf(minus_zero).bits() == 0x8000);
  CHECK(isnan(fma(inf, float16(0.0), float16(1.0))));
  CHECK(isnan(fma(inf, float16(1.0), -inf)));
  CHECK(fma(float16(0.0), float16(-1.0), minus_zero).bits() == 0x8000);    // -0 + -0
  CHECK(fma(float16(1.0), float16(-1.0), float16(1.0)).bits() == 0x0000);  // exact cancellation: +0
  CHECK(value(fmin(nan, float16(1.0))) == 1.0);
  CHECK(value(fmax(float16(1.0), nan)) == 1.0);
  CHECK(fmax(minus_zero, float16(0.0)).bits() == 0x0000);
  CHECK(fmin(float16(0.0), minus_zero).bits() == 0x8000);
  CHECK(nextafter(float16(0.0), minus_zero).bits() == 0x8000);  // y itself
  CHECK(nextafter(std::numeric_limits<float16>::max(), inf).bits() == 0x7C00);
  CHECK(nextafter(inf, float16(0.0)).bits() == 0x7BFF);
  CHECK(nextafter(float16::from_bits(0x8001), float16(1.0)).bits() == 0x8000);
  CHECK(value(round(float16(2.5))) == 3.0);  // halfway away from zero
  CHECK(ceil(float16(-0.5)).bits() == 0x8000);
}

TEST_CASE("fma rounds once: the product's low bits survive a cancellation", "[math][cmath][fma]") {
  // a = 1 + 2^-10: a² = 1 + 2^-9 + 2^-20, and a² - (1 + 2^-8) = -(2^-9 - 2^-20), a float16
  // value.  Rounding the product first loses the 2^-20 and gives -2^-9.
  const float16 a(1.0 + std::ldexp(1.0, -10)), c(-(1.0 + std::ldexp(1.0, -8)));
  CHECK(value(fma(a, a, c)) == -(std::ldexp(1.0, -9) - std::ldexp(1.0, -20)));
  CHECK(value(a * a + c) == -std::ldexp(1.0, -9));
}

TEST_CASE("NaN results: an input NaN propagates quieted, an invalid operation gives the canonical NaN",
          "[math][cmath][nan]") {
  CHECK(sqrt(float16::from_bits(0x7D01)).bits() == 0x7F01);  // signalling: quiet bit set, payload kept
  CHECK(exp(float16::from_bits(0xFE01)).bits() == 0xFE01);   // sign kept
  CHECK(log(float16(-1.0)).bits() == 0x7E00);
  CHECK(pow(float16(-2.0), float16(0.5)).bits() == 0x7E00);
  CHECK(fma(float16::from_bits(0x7C00), float16(0.0), float16(1.0)).bits() == 0x7E00);
  CHECK(tanh(float8_e4m3fn::from_bits(0xFF)).bits() == 0xFF);
  CHECK(sqrt(float8_e4m3fn(-1.0)).bits() == 0x7F);
  CHECK(sqrt(float8_e4m3fnuz(-1.0)).bits() == 0x80);
}

TEST_CASE("e8m0: zero and negative results are NaN, tiny results are 2^-127", "[math][cmath][e8m0]") {
  const float8_e8m0fnu smallest = float8_e8m0fnu::from_bits(0);  // 2^-127
  CHECK(log(float8_e8m0fnu(1.0)).bits() == 0xFF);                // log(1) = 0: no zero
  CHECK(log(float8_e8m0fnu(0.5)).bits() == 0xFF);                // negative
  CHECK(floor(float8_e8m0fnu(0.5)).bits() == 0xFF);              // floor = 0
  CHECK(value(ceil(float8_e8m0fnu(0.5))) == 1.0);
  CHECK(pow(smallest, float8_e8m0fnu(2.0)).bits() == 0x00);  // 2^-254 → 2^-127
  CHECK(value(exp(smallest)) == 1.0);
  CHECK(value(sqrt(float8_e8m0fnu(2.0))) == 1.0);  // 1.414 < 1.5, the midpoint of 1 and 2
  CHECK(value(sqrt(float8_e8m0fnu(8.0))) == 2.0);  // 2.83 < 3, the midpoint of 2 and 4
}

TEST_CASE("fnuz: no -0, one NaN whose sign bit is set", "[math][cmath][fnuz]") {
  CHECK(copysign(float8_e4m3fnuz(0.0), float8_e4m3fnuz(-1.0)).bits() == 0x00);
  CHECK(copysign(float8_e4m3fnuz::from_bits(0x80), float8_e4m3fnuz(1.0)).bits() == 0x80);  // NaN stays NaN
  CHECK(fabs(float8_e4m3fnuz::from_bits(0x80)).bits() == 0x80);
  CHECK(signbit(float8_e4m3fnuz::from_bits(0x80)));
  CHECK(nextafter(float8_e4m3fnuz::from_bits(0x81), float8_e4m3fnuz(1.0)).bits() == 0x00);
  CHECK(ceil(float8_e4m3fnuz(-0.5)).bits() == 0x00);
  CHECK(expm1(float8_e5m2fnuz(-0.0)).bits() == 0x00);
}

TEST_CASE("fp6 and fp4: NaN results become +max, overflow ±max", "[math][cmath][fp6]") {
  CHECK(sqrt(float6_e3m2fn(-1.0)).bits() == 0x1F);
  CHECK(sqrt(float6_e2m3fn(-1.0)).bits() == 0x1F);
  CHECK(log(float4_e2m1fn(-1.0)).bits() == 0x7);
  CHECK(log(float4_e2m1fn(0.0)).bits() == 0xF);  // -inf → -max
  CHECK(exp(float4_e2m1fn(4.0)).bits() == 0x7);  // 54.6 → +max
  CHECK(value(exp(float8_e4m3fn(6.0))) == 416.0);
  CHECK(exp(float8_e4m3fn(7.0)).bits() == 0x7F);  // 1096.6 overflows: NaN
}

TEMPLATE_TEST_CASE("ldexp undoes frexp on every code", "[math][cmath][frexp]", mixprec::float16, mixprec::bfloat16,
                   mixprec::float8_e4m3fn, mixprec::float8_e5m2, mixprec::float8_e4m3fnuz, mixprec::float8_e5m2fnuz,
                   mixprec::float6_e3m2fn, mixprec::float8_e8m0fnu, mixprec::float8_e4m3, mixprec::float8_e3m4,
                   mixprec::float8_e4m3b11fnuz, mixprec::tfloat32) {
  for (unsigned code = 0; code < mixprec_test::code_count<TestType>(); ++code) {
    const auto x = TestType::from_bits(static_cast<typename TestType::storage_type>(code));
    if (isnan(x)) continue;
    int e = 0;
    const TestType m = frexp(x, &e);
    REQUIRE(ldexp(m, e).bits() == x.bits());
    if (isfinite(x) && value(x) != 0) REQUIRE((std::fabs(value(m)) >= 0.5 && std::fabs(value(m)) < 1.0));
  }
}
