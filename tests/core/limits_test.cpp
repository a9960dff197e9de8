// limits.hpp: std::numeric_limits and describe<T>() against the standard's definitions
// ([numeric.limits.members]) evaluated on the table of values built by the independent oracle.
#include <mixprec/intn.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "all_formats.hpp"
#include "reference_format.hpp"

using namespace mixprec;

TEMPLATE_TEST_CASE("numeric_limits follows the standard's definitions", "[limits]", MIXPREC_ALL_TYPES) {
  using L = std::numeric_limits<TestType>;
  const mixprec_test::reference_format<double> oracle(mixprec_test::parameters_of<TestType>());
  const auto p = oracle.parameters();
  const double smallest = oracle.positive_value(0);
  const double largest = oracle.positive_value(oracle.positive_count() - 1);

  STATIC_REQUIRE(L::is_specialized);
  STATIC_REQUIRE(!L::is_integer);
  STATIC_REQUIRE(!L::is_exact);
  STATIC_REQUIRE(L::radix == 2);
  STATIC_REQUIRE(L::is_bounded);
  CHECK(L::is_signed == p.is_signed);
  CHECK(L::digits == p.mantissa_bits + 1);

  // max: the largest finite value; lowest: the most negative finite value.
  CHECK(static_cast<double>(L::max()) == largest);
  // An unsigned format's lowest is its zero (ue4m3), or its smallest value without one (e8m0).
  CHECK(static_cast<double>(L::lowest()) == (p.is_signed ? -largest : p.has_subnormals ? 0.0 : smallest));
  // min: the smallest positive normal value; denorm_min: the smallest positive value.
  const double min_normal = std::ldexp(1.0, (p.has_subnormals ? 1 : 0) - p.bias);
  CHECK(static_cast<double>(L::min()) == min_normal);
  CHECK(static_cast<double>(L::denorm_min()) == smallest);
  CHECK(L::has_denorm == (p.has_subnormals ? std::denorm_present : std::denorm_absent));
  // epsilon: the difference between 1 and the next representable value.
  const auto one = oracle.locate(1.0);
  REQUIRE(one.exact);
  CHECK(static_cast<double>(L::epsilon()) == oracle.upper_value(one.below) - 1.0);
  CHECK(static_cast<double>(L::round_error()) == 0.5);
  // min() == 2^(min_exponent - 1); 2^(max_exponent - 1) <= max() < 2^max_exponent.
  CHECK(static_cast<double>(L::min()) == std::ldexp(1.0, L::min_exponent - 1));
  CHECK(largest < std::ldexp(1.0, L::max_exponent));
  CHECK(largest >= std::ldexp(1.0, L::max_exponent - 1));
  // 10^min_exponent10 is normal, 10^(min_exponent10 - 1) is not; 10^max_exponent10 is finite.
  CHECK(std::pow(10.0, L::min_exponent10) >= min_normal);
  CHECK(std::pow(10.0, L::min_exponent10 - 1) < min_normal);
  CHECK(std::pow(10.0, L::max_exponent10) <= largest);
  CHECK(std::pow(10.0, L::max_exponent10 + 1) > largest);
  // digits10 = floor((digits - 1) log10 2), max_digits10 = ceil(1 + digits log10 2).
  CHECK(L::digits10 == static_cast<int>(std::floor((L::digits - 1) * std::log10(2.0))));
  CHECK(L::max_digits10 == static_cast<int>(std::ceil(1 + L::digits * std::log10(2.0))));

  CHECK(L::has_infinity == (p.specials == special_encoding::ieee));
  CHECK(L::has_quiet_NaN == (p.specials != special_encoding::none));
  if (L::has_infinity) {
    CHECK(std::isinf(static_cast<double>(L::infinity())));
    CHECK(static_cast<double>(L::infinity()) > 0);
  }
  if (L::has_quiet_NaN) CHECK(std::isnan(static_cast<double>(L::quiet_NaN())));
  if (L::has_signaling_NaN) {
    CHECK(std::isnan(static_cast<double>(L::signaling_NaN())));
    CHECK(L::signaling_NaN().bits() != L::quiet_NaN().bits());
  }
  CHECK(L::is_iec559 == (p.specials == special_encoding::ieee));
}

TEST_CASE("numeric_limits matches the C++ standard library for float itself", "[limits]") {
  using F = minifloat<ieee_binary32>;
  using L = std::numeric_limits<F>;
  using S = std::numeric_limits<float>;
  CHECK(static_cast<float>(L::max()) == S::max());
  CHECK(static_cast<float>(L::min()) == S::min());
  CHECK(static_cast<float>(L::denorm_min()) == S::denorm_min());
  CHECK(static_cast<float>(L::epsilon()) == S::epsilon());
  CHECK(L::digits == S::digits);
  CHECK(L::digits10 == S::digits10);
  CHECK(L::max_digits10 == S::max_digits10);
  CHECK(L::min_exponent == S::min_exponent);
  CHECK(L::max_exponent == S::max_exponent);
  CHECK(L::min_exponent10 == S::min_exponent10);
  CHECK(L::max_exponent10 == S::max_exponent10);
}

TEMPLATE_TEST_CASE("describe<T>() agrees with numeric_limits and is a constant expression", "[limits]",
                   MIXPREC_ALL_TYPES) {
  constexpr format_description d = describe<TestType>();
  using L = std::numeric_limits<TestType>;
  STATIC_REQUIRE(d.total_bits == format_traits<typename TestType::format>::total_bits);
  CHECK(d.max == static_cast<double>(L::max()));
  CHECK(d.min_normal == static_cast<double>(L::min()));
  CHECK(d.min_subnormal == static_cast<double>(L::denorm_min()));
  CHECK(d.epsilon == static_cast<double>(L::epsilon()));
  CHECK(d.digits == L::digits);
  CHECK(d.digits10 == L::digits10);
  CHECK(d.max_digits10 == L::max_digits10);
  CHECK(d.has_infinity == L::has_infinity);
  CHECK(d.has_nan == L::has_quiet_NaN);
  CHECK(d.dynamic_range_decades == Approx(std::log10(d.max / d.min_subnormal)).epsilon(1e-12));
  CHECK(d.storage_bytes == static_cast<int>(sizeof(TestType)));
  CHECK(d.lowest == static_cast<double>(L::lowest()));
  STATIC_REQUIRE_FALSE(d.is_integer);
}

TEST_CASE("describe<T>() of the unsigned scale formats: lowest is their smallest value", "[limits]") {
  STATIC_REQUIRE(describe<float8_ue4m3>().lowest == 0);
  STATIC_REQUIRE(describe<float8_e8m0fnu>().lowest == 0x1p-127);
  STATIC_REQUIRE(describe<float16>().lowest == -65504);
}

TEMPLATE_TEST_CASE("describe<T>() of the narrow integers: whole numbers from lowest to max in steps of 1", "[limits]",
                   int4, uint4, int2, uint2, int1, uint1) {
  constexpr format_description d = describe<TestType>();
  using L = std::numeric_limits<TestType>;
  STATIC_REQUIRE(d.is_integer);
  STATIC_REQUIRE(d.total_bits == TestType::bits_per_value);
  STATIC_REQUIRE(d.storage_bytes == 1);
  STATIC_REQUIRE(d.exponent_bits == 0);
  STATIC_REQUIRE(d.exponent_bias == 0);
  CHECK(d.is_signed == L::is_signed);
  CHECK(d.mantissa_bits == L::digits);
  CHECK(d.digits == L::digits);
  CHECK(d.digits10 == L::digits10);
  CHECK(d.max == static_cast<double>(L::max().value()));
  CHECK(d.lowest == static_cast<double>(L::lowest().value()));
  CHECK(d.min_normal == 1);
  CHECK(d.min_subnormal == 1);
  CHECK(d.epsilon == 1);
  CHECK_FALSE(d.has_infinity);
  CHECK_FALSE(d.has_nan);
  CHECK_FALSE(d.has_negative_zero);
  CHECK_FALSE(d.has_subnormals);
  CHECK(d.dynamic_range_decades == Approx(std::log10(std::max(d.max, -d.lowest))).margin(1e-12));
}

TEST_CASE("describe<T>() of int4 and int1, spelled out", "[limits]") {
  constexpr format_description int4_d = describe<int4>();
  STATIC_REQUIRE(int4_d.max == 7);
  STATIC_REQUIRE(int4_d.lowest == -8);
  STATIC_REQUIRE(int4_d.mantissa_bits == 3);
  CHECK(int4_d.dynamic_range_decades == Approx(std::log10(8.0)));
  constexpr format_description int1_d = describe<int1>();
  STATIC_REQUIRE(int1_d.max == 0);
  STATIC_REQUIRE(int1_d.lowest == -1);
  STATIC_REQUIRE(int1_d.dynamic_range_decades == 0);
  STATIC_REQUIRE(describe<uint2>().max == 3);
  STATIC_REQUIRE(describe<uint2>().lowest == 0);
}

TEST_CASE("well-known limits (IEEE 754, OFP8, OCP MX)", "[limits]") {
  CHECK(static_cast<float>(std::numeric_limits<float16>::max()) == 65504.f);
  CHECK(static_cast<float>(std::numeric_limits<float16>::min()) == std::ldexp(1.f, -14));
  CHECK(static_cast<float>(std::numeric_limits<float16>::epsilon()) == std::ldexp(1.f, -10));
  CHECK(static_cast<float>(std::numeric_limits<bfloat16>::epsilon()) == std::ldexp(1.f, -7));
  CHECK(static_cast<float>(std::numeric_limits<float8_e4m3fn>::max()) == 448.f);
  CHECK(static_cast<float>(std::numeric_limits<float8_e5m2>::max()) == 57344.f);
  CHECK(static_cast<float>(std::numeric_limits<float8_e4m3fnuz>::max()) == 240.f);
  CHECK(static_cast<float>(std::numeric_limits<float8_e5m2fnuz>::max()) == 57344.f);
  CHECK(static_cast<float>(std::numeric_limits<float6_e3m2fn>::max()) == 28.f);
  CHECK(static_cast<float>(std::numeric_limits<float6_e2m3fn>::max()) == 7.5f);
  CHECK(static_cast<float>(std::numeric_limits<float4_e2m1fn>::max()) == 6.f);
  CHECK(static_cast<double>(std::numeric_limits<float8_e8m0fnu>::max()) == std::ldexp(1.0, 127));
  CHECK(static_cast<double>(std::numeric_limits<float8_e8m0fnu>::min()) == std::ldexp(1.0, -127));
  CHECK(static_cast<float>(std::numeric_limits<float8_e8m0fnu>::epsilon()) == 1.0f);
}

TEST_CASE("well-known limits of the ml_dtypes and CUTLASS formats", "[limits]") {
  // ml_dtypes: float8_e4m3 max 240, float8_e3m4 max 15.5 (min normal 0.25, smallest 2^-6),
  // float8_e4m3b11fnuz max 30 (smallest 2^-13); CUTLASS tfloat32_t: float's range, epsilon 2^-10.
  CHECK(static_cast<float>(std::numeric_limits<float8_e4m3>::max()) == 240.f);
  CHECK(static_cast<float>(std::numeric_limits<float8_e4m3>::min()) == std::ldexp(1.f, -6));
  CHECK(static_cast<float>(std::numeric_limits<float8_e4m3>::denorm_min()) == std::ldexp(1.f, -9));
  CHECK(std::isinf(static_cast<float>(std::numeric_limits<float8_e4m3>::infinity())));
  CHECK(static_cast<float>(std::numeric_limits<float8_e3m4>::max()) == 15.5f);
  CHECK(static_cast<float>(std::numeric_limits<float8_e3m4>::min()) == 0.25f);
  CHECK(static_cast<float>(std::numeric_limits<float8_e3m4>::denorm_min()) == std::ldexp(1.f, -6));
  CHECK(static_cast<float>(std::numeric_limits<float8_e3m4>::epsilon()) == 0.0625f);
  CHECK(static_cast<float>(std::numeric_limits<float8_e4m3b11fnuz>::max()) == 30.f);
  CHECK(static_cast<float>(std::numeric_limits<float8_e4m3b11fnuz>::lowest()) == -30.f);
  CHECK(static_cast<float>(std::numeric_limits<float8_e4m3b11fnuz>::min()) == std::ldexp(1.f, -10));
  CHECK(static_cast<float>(std::numeric_limits<float8_e4m3b11fnuz>::denorm_min()) == std::ldexp(1.f, -13));
  CHECK_FALSE(std::numeric_limits<float8_e4m3b11fnuz>::has_infinity);
  CHECK(static_cast<float>(std::numeric_limits<float8_ue4m3>::max()) == 448.f);
  CHECK(static_cast<float>(std::numeric_limits<float8_ue4m3>::lowest()) == 0.f);
  CHECK(static_cast<float>(std::numeric_limits<tfloat32>::max()) == (2 - std::ldexp(1.f, -10)) * std::ldexp(1.f, 127));
  CHECK(static_cast<float>(std::numeric_limits<tfloat32>::min()) == std::numeric_limits<float>::min());
  CHECK(static_cast<float>(std::numeric_limits<tfloat32>::denorm_min()) == std::ldexp(1.f, -136));
  CHECK(static_cast<float>(std::numeric_limits<tfloat32>::epsilon()) == std::ldexp(1.f, -10));
  CHECK(std::numeric_limits<tfloat32>::digits == 11);
}
