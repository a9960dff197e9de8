// format.hpp: the constants format_traits derives from a descriptor, checked against values
// worked out by hand from the specs (IEEE 754-2019 §3.6, OFP8 v1.0 Table 1, OCP MX v1.0 §5.3).
#include <mixprec/format.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

using namespace mixprec;

TEST_CASE("format_traits derives widths, masks and storage from the descriptor", "[format]") {
  using f16 = format_traits<formats::float16>;
  STATIC_REQUIRE(f16::total_bits == 16);
  STATIC_REQUIRE(std::is_same<f16::storage_type, std::uint16_t>::value);
  STATIC_REQUIRE(f16::sign_mask == 0x8000);
  STATIC_REQUIRE(f16::magnitude_mask == 0x7FFF);
  STATIC_REQUIRE(f16::mantissa_mask == 0x03FF);

  using e2m1 = format_traits<formats::float4_e2m1fn>;
  STATIC_REQUIRE(e2m1::total_bits == 4);
  STATIC_REQUIRE(std::is_same<e2m1::storage_type, std::uint8_t>::value);
  STATIC_REQUIRE(e2m1::code_mask == 0x0F);
  STATIC_REQUIRE(e2m1::sign_mask == 0x08);

  using e8m0 = format_traits<formats::float8_e8m0fnu>;
  STATIC_REQUIRE(e8m0::total_bits == 8);
  STATIC_REQUIRE(e8m0::sign_mask == 0);
  STATIC_REQUIRE(!e8m0::is_signed);
}

TEST_CASE("format_traits places the largest finite code by special-value scheme", "[format]") {
  // IEEE: the top exponent field is reserved, so max = 0'11110'1111111111.
  STATIC_REQUIRE(format_traits<formats::float16>::max_finite_magnitude == 0x7BFF);
  STATIC_REQUIRE(format_traits<formats::bfloat16>::max_finite_magnitude == 0x7F7F);
  STATIC_REQUIRE(format_traits<formats::float8_e5m2>::max_finite_magnitude == 0x7B);
  // fn: only S.1111.111 is NaN, so max = 0'1111'110.
  STATIC_REQUIRE(format_traits<formats::float8_e4m3fn>::max_finite_magnitude == 0x7E);
  // fnuz: every magnitude is finite; 0x80 is the NaN.
  STATIC_REQUIRE(format_traits<formats::float8_e4m3fnuz>::max_finite_magnitude == 0x7F);
  STATIC_REQUIRE(format_traits<formats::float8_e5m2fnuz>::max_finite_magnitude == 0x7F);
  // finite only: all ones is a number.
  STATIC_REQUIRE(format_traits<formats::float6_e3m2fn>::max_finite_magnitude == 0x1F);
  STATIC_REQUIRE(format_traits<formats::float4_e2m1fn>::max_finite_magnitude == 0x7);
  // e8m0: 0xFF is NaN, 0xFE = 2^127.
  STATIC_REQUIRE(format_traits<formats::float8_e8m0fnu>::max_finite_magnitude == 0xFE);
  // The ml_dtypes / CUTLASS additions: IEEE e4m3 and e3m4 give up their top binade to inf/NaN,
  // e4m3b11fnuz keeps it, ue4m3 is e4m3fn without the sign, tf32 is float's top 19 bits.
  STATIC_REQUIRE(format_traits<formats::float8_e4m3>::max_finite_magnitude == 0x77);
  STATIC_REQUIRE(format_traits<formats::float8_e3m4>::max_finite_magnitude == 0x6F);
  STATIC_REQUIRE(format_traits<formats::float8_e4m3b11fnuz>::max_finite_magnitude == 0x7F);
  STATIC_REQUIRE(format_traits<formats::float8_ue4m3>::max_finite_magnitude == 0x7E);
  STATIC_REQUIRE(format_traits<formats::tfloat32>::max_finite_magnitude == 0x3FBFF);
  STATIC_REQUIRE(format_traits<formats::tfloat32>::infinity_magnitude == 0x3FC00);
  STATIC_REQUIRE(std::is_same<format_traits<formats::tfloat32>::storage_type, std::uint32_t>::value);
  STATIC_REQUIRE(format_traits<formats::tfloat32>::sign_mask == 0x40000);
}

TEST_CASE("format_traits gives the exponent range of normal numbers", "[format]") {
  STATIC_REQUIRE(format_traits<formats::float16>::min_exponent == -14);
  STATIC_REQUIRE(format_traits<formats::float16>::max_exponent == 15);
  STATIC_REQUIRE(format_traits<formats::float8_e4m3fn>::max_exponent == 8);  // 448 = 1.75 × 2^8
  STATIC_REQUIRE(format_traits<formats::float8_e4m3fnuz>::min_exponent == -7);
  STATIC_REQUIRE(format_traits<formats::float8_e4m3fnuz>::max_exponent == 7);  // 240 = 1.875 × 2^7
  STATIC_REQUIRE(format_traits<formats::float8_e8m0fnu>::min_exponent == -127);
  STATIC_REQUIRE(format_traits<formats::float8_e8m0fnu>::max_exponent == 127);
  STATIC_REQUIRE(format_traits<formats::float8_e8m0fnu>::min_quantum_exponent == -127);
  STATIC_REQUIRE(format_traits<ieee_binary32>::min_quantum_exponent == -149);
  STATIC_REQUIRE(format_traits<formats::float8_e3m4>::min_exponent == -2);
  STATIC_REQUIRE(format_traits<formats::float8_e3m4>::min_quantum_exponent == -6);
  STATIC_REQUIRE(format_traits<formats::float8_e4m3b11fnuz>::max_exponent == 4);  // 30 = 1.875 × 2^4
  STATIC_REQUIRE(format_traits<formats::float8_e4m3b11fnuz>::min_quantum_exponent == -13);
  STATIC_REQUIRE(format_traits<formats::tfloat32>::min_exponent == -126);
  STATIC_REQUIRE(format_traits<formats::tfloat32>::min_quantum_exponent == -136);
}

TEST_CASE("format_traits puts NaN and infinity where each scheme says", "[format]") {
  using f16 = format_traits<formats::float16>;
  CHECK(f16::is_infinity(0x7C00));
  CHECK(f16::is_infinity(0xFC00));
  CHECK(f16::is_nan(0x7C01));
  CHECK(f16::is_nan(0xFE00));
  CHECK_FALSE(f16::is_nan(0x7BFF));
  CHECK(f16::quiet_nan_code == 0x7E00);
  CHECK(f16::signaling_nan_code == 0x7C01);

  using e4m3 = format_traits<formats::float8_e4m3fn>;
  CHECK(e4m3::is_nan(0x7F));
  CHECK(e4m3::is_nan(0xFF));
  CHECK_FALSE(e4m3::is_nan(0x7E));
  CHECK_FALSE(e4m3::is_infinity(0x78));
  CHECK_FALSE(e4m3::has_infinity);

  using fnuz = format_traits<formats::float8_e4m3fnuz>;
  CHECK(fnuz::is_nan(0x80));
  CHECK_FALSE(fnuz::is_nan(0xFF));
  CHECK_FALSE(fnuz::has_negative_zero);
  CHECK(fnuz::quiet_nan_code == 0x80);

  using e2m3 = format_traits<formats::float6_e2m3fn>;
  for (std::uint64_t code = 0; code < 64; ++code) {
    CHECK_FALSE(e2m3::is_nan(code));
    CHECK_FALSE(e2m3::is_infinity(code));
  }

  using e8m0 = format_traits<formats::float8_e8m0fnu>;
  CHECK(e8m0::is_nan(0xFF));
  CHECK_FALSE(e8m0::is_nan(0xFE));
  CHECK_FALSE(e8m0::has_zero);
}

TEST_CASE("format_name uses the descriptor's name or derives one", "[format]") {
  CHECK(format_name<formats::float8_e4m3fn>() == "float8_e4m3fn");
  CHECK(format_name<binary_format<3, 4, 3, special_encoding::ieee>>() == "e3m4");
  CHECK(format_name<binary_format<4, 3, 8, special_encoding::nan_negative_zero>>() == "e4m3fnuz");
  CHECK(format_name<binary_format<8, 0, 127, special_encoding::nan_all_ones, false, false>>() == "e8m0fnu");
}
