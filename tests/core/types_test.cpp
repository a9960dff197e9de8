// types.hpp: the named formats match DESIGN.md's table row by row.
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace mixprec;

namespace {
struct design_row {
  int bits, exponent, mantissa, bias;
  bool infinity;
  double max_finite;
};

template <class T>
void check_row(const design_row& row) {
  using traits = format_traits<typename T::format>;
  INFO(format_name<typename T::format>());
  CHECK(traits::total_bits == row.bits);
  CHECK(traits::exponent_bits == row.exponent);
  CHECK(traits::mantissa_bits == row.mantissa);
  CHECK(traits::bias == row.bias);
  CHECK(traits::has_infinity == row.infinity);
  CHECK(static_cast<double>(std::numeric_limits<T>::max()) == row.max_finite);
}
}  // namespace

TEST_CASE("each named type matches its row of DESIGN.md's table", "[types]") {
  check_row<float16>({16, 5, 10, 15, true, 65504});
  check_row<bfloat16>({16, 8, 7, 127, true, 3.3895313892515355e38});
  check_row<float8_e4m3fn>({8, 4, 3, 7, false, 448});
  check_row<float8_e5m2>({8, 5, 2, 15, true, 57344});
  check_row<float8_e4m3fnuz>({8, 4, 3, 8, false, 240});
  check_row<float8_e5m2fnuz>({8, 5, 2, 16, false, 57344});
  check_row<float6_e3m2fn>({6, 3, 2, 3, false, 28});
  check_row<float6_e2m3fn>({6, 2, 3, 1, false, 7.5});
  check_row<float4_e2m1fn>({4, 2, 1, 1, false, 6});
  check_row<float8_e8m0fnu>({8, 8, 0, 127, false, std::ldexp(1.0, 127)});
  check_row<float8_ue4m3>({7, 4, 3, 7, false, 448});
  check_row<float8_e4m3>({8, 4, 3, 7, true, 240});
  check_row<float8_e3m4>({8, 3, 4, 3, true, 15.5});
  check_row<float8_e4m3b11fnuz>({8, 4, 3, 11, false, 30});
  check_row<tfloat32>({19, 8, 10, 127, true, (2 - std::ldexp(1.0, -10)) * std::ldexp(1.0, 127)});
}

TEST_CASE("the ml_dtypes and CUTLASS formats: their special codes and extremes", "[types]") {
  // float8_e4m3 and float8_e3m4 are IEEE-style: exponent all ones is infinity or NaN.
  CHECK(static_cast<float>(float8_e4m3::from_bits(0x78)) == std::numeric_limits<float>::infinity());
  CHECK(static_cast<float>(float8_e4m3::from_bits(0xF8)) == -std::numeric_limits<float>::infinity());
  CHECK(static_cast<float>(float8_e3m4::from_bits(0x70)) == std::numeric_limits<float>::infinity());
  CHECK(static_cast<float>(float8_e3m4::from_bits(0x01)) == std::ldexp(1.f, -6));
  CHECK(static_cast<float>(float8_e3m4::from_bits(0x10)) == 0.25f);
  CHECK(static_cast<float>(float8_e4m3b11fnuz::from_bits(0x01)) == std::ldexp(1.f, -13));
  CHECK(static_cast<float>(float8_e4m3b11fnuz::from_bits(0x7F)) == 30.f);
  CHECK(static_cast<float>(float8_e4m3b11fnuz::from_bits(0xFF)) == -30.f);
  int e4m3_nans = 0, e3m4_nans = 0, b11_nans = 0;
  for (unsigned c = 0; c < 256; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    e4m3_nans += std::isnan(static_cast<float>(float8_e4m3::from_bits(code))) ? 1 : 0;
    e3m4_nans += std::isnan(static_cast<float>(float8_e3m4::from_bits(code))) ? 1 : 0;
    b11_nans += std::isnan(static_cast<float>(float8_e4m3b11fnuz::from_bits(code))) ? 1 : 0;
  }
  CHECK(e4m3_nans == 14);  // S'1111'mmm, m != 0
  CHECK(e3m4_nans == 30);  // S'111'mmmm, m != 0
  CHECK(b11_nans == 1);    // 0x80
  CHECK(std::isnan(static_cast<float>(float8_e4m3b11fnuz::from_bits(0x80))));
  // tfloat32: a float with its low 13 bits cut off, so every code c decodes to the float c << 13.
  for (std::uint32_t c = 0; c < (1u << 19); c += 97) {
    const float f = static_cast<float>(tfloat32::from_bits(c));
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if (!std::isnan(f)) CHECK(bits == c << 13);
  }
  STATIC_REQUIRE(sizeof(tfloat32) == 4);
  STATIC_REQUIRE(sizeof(float8_e4m3) == 1 && sizeof(float8_e3m4) == 1 && sizeof(float8_e4m3b11fnuz) == 1);
}

TEST_CASE("the NaN encodings are the ones DESIGN.md lists", "[types]") {
  // IEEE-style: exponent all ones with a non-zero mantissa, both signs.
  for (unsigned m = 1; m < 4; ++m) {
    CHECK(std::isnan(static_cast<float>(float8_e5m2::from_bits(static_cast<std::uint8_t>(0x7C | m)))));
    CHECK(std::isnan(static_cast<float>(float8_e5m2::from_bits(static_cast<std::uint8_t>(0xFC | m)))));
  }
  // e4m3fn: S.1111.111 only.
  int e4m3_nans = 0, fnuz_nans = 0, e8m0_nans = 0;
  for (unsigned c = 0; c < 256; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    e4m3_nans += std::isnan(static_cast<float>(float8_e4m3fn::from_bits(code))) ? 1 : 0;
    fnuz_nans += std::isnan(static_cast<float>(float8_e4m3fnuz::from_bits(code))) ? 1 : 0;
    fnuz_nans += std::isnan(static_cast<float>(float8_e5m2fnuz::from_bits(code))) ? 1 : 0;
    e8m0_nans += std::isnan(static_cast<float>(float8_e8m0fnu::from_bits(code))) ? 1 : 0;
  }
  CHECK(e4m3_nans == 2);
  CHECK(std::isnan(static_cast<float>(float8_e4m3fn::from_bits(0x7F))));
  CHECK(std::isnan(static_cast<float>(float8_e4m3fn::from_bits(0xFF))));
  CHECK(fnuz_nans == 2);  // 0x80 in each fnuz type
  CHECK(e8m0_nans == 1);  // 0xFF
  // fp6 / fp4: no NaN at all.
  for (unsigned c = 0; c < 64; ++c) {
    CHECK(std::isfinite(static_cast<float>(float6_e3m2fn::from_bits(static_cast<std::uint8_t>(c)))));
    CHECK(std::isfinite(static_cast<float>(float6_e2m3fn::from_bits(static_cast<std::uint8_t>(c)))));
  }
  for (unsigned c = 0; c < 16; ++c) {
    CHECK(std::isfinite(static_cast<float>(float4_e2m1fn::from_bits(static_cast<std::uint8_t>(c)))));
  }
}

TEST_CASE("the aliases name the same types", "[types]") {
  STATIC_REQUIRE(std::is_same<fp16, float16>::value);
  STATIC_REQUIRE(std::is_same<bf16, bfloat16>::value);
  STATIC_REQUIRE(std::is_same<fp8_e4m3, float8_e4m3fn>::value);
  STATIC_REQUIRE(std::is_same<fp8_e5m2, float8_e5m2>::value);
  STATIC_REQUIRE(std::is_same<tf32, tfloat32>::value);
}
