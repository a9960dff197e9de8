// minifloat.hpp: the value type's shape, construction, codes, operators and hashing.
#include <mixprec/convert.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <unordered_set>

#include "all_formats.hpp"

using namespace mixprec;

TEMPLATE_TEST_CASE("every type is a trivial, standard-layout value of its storage size", "[minifloat]",
                   MIXPREC_ALL_TYPES) {
  STATIC_REQUIRE(std::is_trivially_copyable<TestType>::value);
  STATIC_REQUIRE(std::is_trivially_default_constructible<TestType>::value);
  STATIC_REQUIRE(std::is_standard_layout<TestType>::value);
  STATIC_REQUIRE(sizeof(TestType) == sizeof(typename TestType::storage_type));
  STATIC_REQUIRE(!std::is_convertible<float, TestType>::value);  // constructors are explicit
  STATIC_REQUIRE(!std::is_convertible<TestType, float>::value);
}

TEMPLATE_TEST_CASE("from_bits and bits round-trip every code", "[minifloat]", MIXPREC_ALL_TYPES) {
  for (unsigned code = 0; code < mixprec_test::code_count<TestType>(); ++code) {
    const auto bits = static_cast<typename TestType::storage_type>(code);
    REQUIRE(TestType::from_bits(bits).bits() == bits);
  }
}

TEMPLATE_TEST_CASE("every non-NaN code survives a round trip through float and double", "[minifloat]",
                   MIXPREC_ALL_TYPES) {
  using traits = format_traits<typename TestType::format>;
  for (unsigned code = 0; code < mixprec_test::code_count<TestType>(); ++code) {
    const TestType x = TestType::from_bits(static_cast<typename TestType::storage_type>(code));
    if (traits::is_nan(code)) {
      REQUIRE(std::isnan(static_cast<float>(x)));
      REQUIRE(std::isnan(static_cast<float>(TestType(static_cast<float>(x)))));
      continue;
    }
    REQUIRE(TestType(static_cast<float>(x)).bits() == x.bits());
    REQUIRE(TestType(static_cast<double>(x)).bits() == x.bits());
    REQUIRE(static_cast<double>(static_cast<float>(x)) == static_cast<double>(x));
  }
}

TEST_CASE("from_bits rejects codes with bits above a narrow format's width", "[minifloat][errors]") {
  CHECK_THROWS_AS(float4_e2m1fn::from_bits(0x10), invalid_encoding);
  CHECK_THROWS_AS(float6_e3m2fn::from_bits(0x40), invalid_encoding);
  CHECK_THROWS_AS(float6_e2m3fn::from_bits(0xFF), invalid_encoding);
  CHECK_THROWS_WITH(float4_e2m1fn::from_bits(0x1F),
                    "float4_e2m1fn::from_bits: 0x1F has bits set above bit 3 (the format's codes are 0 to 15)");
  CHECK_THROWS_AS(float6_e3m2fn::from_bits(0x80), error);  // the family base class catches it too
  CHECK_NOTHROW(float6_e3m2fn::from_bits(0x3F));
}

TEST_CASE("construction is usable in constant expressions", "[minifloat]") {
  STATIC_REQUIRE(float16(1.0f).bits() == 0x3C00);
  STATIC_REQUIRE(bfloat16(-2.0).bits() == 0xC000);
  STATIC_REQUIRE(float8_e4m3fn(448).bits() == 0x7E);
  STATIC_REQUIRE(static_cast<float>(float8_e5m2::from_bits(0x7B)) == 57344.0f);
  STATIC_REQUIRE((float16(1.5f) + float16(2.25f)).bits() == float16(3.75f).bits());
  STATIC_REQUIRE(float16(2.0f) < float16(3.0f));
}

TEST_CASE("integers convert exactly or round once", "[minifloat]") {
  CHECK(float16(2048).bits() == 0x6800);
  CHECK(static_cast<float>(float16(2049)) == 2048.0f);  // tie to even
  CHECK(static_cast<float>(float16(2051)) == 2052.0f);  // tie to even (up)
  CHECK(static_cast<float>(float16(-3)) == -3.0f);
  CHECK(static_cast<float>(bfloat16(std::numeric_limits<std::int64_t>::min())) == -9223372036854775808.0f);
  CHECK(static_cast<double>(bfloat16(std::numeric_limits<std::uint64_t>::max())) == 18446744073709551616.0);
  CHECK(float16(65520).bits() == 0x7C00);  // overflow: the midpoint above max rounds to even = inf
  CHECK(float16(65519).bits() == 0x7BFF);
  CHECK(std::isnan(static_cast<float>(float8_e8m0fnu(0))));
  CHECK(static_cast<float>(float8_e8m0fnu(std::uint8_t{12})) == 16.0f);  // 12 = 1.5 × 8: tie goes up
}

TEST_CASE("conversion between formats rounds once from the exact value", "[minifloat]") {
  // 0x3C01 = 1 + 2^-10; to e4m3 (3 mantissa bits) it is 1.
  CHECK(float8_e4m3fn(float16::from_bits(0x3C01)).bits() == 0x38);
  // 1 + 2^-4 is the e4m3 midpoint between 1 and 1.125; even is 1.
  CHECK(float8_e4m3fn(float16(1.0625f)).bits() == 0x38);
  CHECK(float8_e4m3fn(float16(1.0625f + 0.0009765625f)).bits() == 0x39);
  // Widening is exact.
  CHECK(static_cast<float>(float16(float8_e5m2::from_bits(0x01))) == std::ldexp(1.0f, -16));
  CHECK(bfloat16(float8_e8m0fnu::from_bits(0)).bits() == 0x0040);  // 2^-127: a bf16 subnormal
}

TEST_CASE("arithmetic returns the type and rounds once", "[minifloat][arithmetic]") {
  const float16 a(1.5f), b(2.25f);
  STATIC_REQUIRE(std::is_same<decltype(a + b), float16>::value);
  CHECK(static_cast<float>(a + b) == 3.75f);
  CHECK(static_cast<float>(a - b) == -0.75f);
  CHECK(static_cast<float>(a * b) == 3.375f);
  CHECK(static_cast<float>(b / a) == 1.5f);
  // 1 + 2^-11 is the midpoint between 1 and 1 + 2^-10: ties to even.
  CHECK((float16(1.0f) + float16::from_bits(0x1000)).bits() == 0x3C00);  // 0x1000 = 2^-11
  // Overflow follows the conversion rule of each format.
  CHECK((float16(65504.0f) + float16(65504.0f)).bits() == 0x7C00);
  CHECK((float8_e4m3fn(448.0f) * float8_e4m3fn(2.0f)).bits() == 0x7F);  // NaN: no infinity
  CHECK((float4_e2m1fn(6.0f) + float4_e2m1fn(6.0f)).bits() == 0x7);     // ±max: no inf, no NaN
  float16 c(1.0f);
  c += float16(2.0f);
  c *= float16(3.0f);
  c -= float16(1.0f);
  c /= float16(4.0f);
  CHECK(static_cast<float>(c) == 2.0f);
}

TEST_CASE("comparisons follow IEEE 754: NaN is unordered and -0 == +0", "[minifloat][comparison]") {
  const float16 nan = std::numeric_limits<float16>::quiet_NaN();
  CHECK_FALSE(nan == nan);
  CHECK(nan != nan);
  CHECK_FALSE(nan < float16(1.0f));
  CHECK_FALSE(nan >= float16(1.0f));
  CHECK(float16(-0.0f) == float16(0.0f));
  CHECK_FALSE(float16(-0.0f) < float16(0.0f));
  CHECK(float16(-1.0f) < float16(-0.5f));
  CHECK(float16(-std::numeric_limits<float>::infinity()) < std::numeric_limits<float16>::lowest());
  CHECK(float8_e8m0fnu(0.5f) < float8_e8m0fnu(2.0f));
  CHECK(float8_e4m3fnuz(-1.0f) < float8_e4m3fnuz(0.0f));
}

TEST_CASE("negation flips the sign, within what each format can hold", "[minifloat]") {
  CHECK((-float16(1.0f)).bits() == 0xBC00);
  CHECK((-float16(0.0f)).bits() == 0x8000);
  CHECK((-float8_e4m3fn::from_bits(0x7F)).bits() == 0xFF);    // NaN sign flips (IEEE 754-2019 §5.5.1)
  CHECK((-float8_e4m3fnuz(0.0f)).bits() == 0x00);             // no -0 in fnuz
  CHECK((-float8_e4m3fnuz::from_bits(0x80)).bits() == 0x80);  // the fnuz NaN stays
  CHECK((-float8_e4m3fnuz(2.0f)).bits() == float8_e4m3fnuz(-2.0f).bits());
  CHECK((-float8_e8m0fnu(2.0f)).bits() == 0xFF);  // unsigned: -2 is not representable
  CHECK((+float6_e2m3fn(3.0f)).bits() == float6_e2m3fn(3.0f).bits());
}

TEST_CASE("equal values hash equally", "[minifloat]") {
  CHECK(std::hash<float16>{}(float16(0.0f)) == std::hash<float16>{}(float16(-0.0f)));
  std::unordered_set<bfloat16> set;
  set.insert(bfloat16(0.0f));
  set.insert(bfloat16(-0.0f));
  set.insert(bfloat16(1.0f));
  CHECK(set.size() == 2);
}

// A user-defined format: IEEE-style e3m3 (7 bits, bias 3), declared in one line.
using float7_e3m3 = minifloat<binary_format<3, 3, 3, special_encoding::ieee>>;

TEST_CASE("a user format gets conversions, arithmetic and limits from its descriptor", "[minifloat]") {
  // max 0'110'111 = (1 + 7/8) × 2^(6-3) = 15; inf 0'111'000.
  CHECK(static_cast<float>(std::numeric_limits<float7_e3m3>::max()) == 15.0f);
  CHECK(float7_e3m3(16.0f).bits() == 0x38);  // beyond the midpoint 15.5: infinity
  CHECK(float7_e3m3(15.4f).bits() == 0x37);
  CHECK(static_cast<float>(float7_e3m3(1.25f) * float7_e3m3(2.0f)) == 2.5f);
  CHECK(format_name<float7_e3m3::format>() == "e3m3");
  CHECK(convert<float7_e3m3>(100.0f, rounding::toward_zero).bits() == 0x37);
}
