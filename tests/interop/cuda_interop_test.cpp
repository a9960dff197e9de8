// interop/cuda.hpp, compiled as host code: each CUDA type maps to its mixprec twin by a bit
// copy, every code survives both ways, and the values agree with CUDA's own float conversion.
#include <mixprec/interop/cuda.hpp>

#include <catch2/catch.hpp>

#include <type_traits>

#include "interop_check.hpp"

using namespace mixprec;

namespace {

// Codes built and read through CUDA's own raw types, not through the mapping under test.
__half half_from_code(std::uint16_t code) {
  __half_raw raw;
  raw.x = code;
  return __half(raw);
}
std::uint16_t half_code(const __half& value) { return static_cast<__half_raw>(value).x; }
__nv_bfloat16 bfloat16_from_code(std::uint16_t code) {
  __nv_bfloat16_raw raw;
  raw.x = code;
  return __nv_bfloat16(raw);
}
std::uint16_t bfloat16_code(const __nv_bfloat16& value) { return static_cast<__nv_bfloat16_raw>(value).x; }

template <class Native>
Native byte_from_code(std::uint8_t code) {
  Native native;
  native.__x = code;
  return native;
}
template <class Native>
std::uint8_t byte_code(const Native& value) {
  return value.__x;
}

// CUDA's types have no catch-all constructor, so static_cast reaches minifloat's conversion.
template <class Native>
struct cast_to {
  template <class T>
  Native operator()(T x) const {
    return static_cast<Native>(x);
  }
};

template <class T, class Native>
void check_byte_type(std::uint64_t expected_nan_codes) {
  const auto report =
      mixprec_test::check_every_code<T, Native>(byte_from_code<Native>, byte_code<Native>, cast_to<Native>{});
  INFO(format_name<typename T::format>() << "\n" << report.text());
  CHECK(report.codes == format_traits<typename T::format>::code_mask + 1);
  CHECK(report.nan_codes == expected_nan_codes);
  CHECK(report.failures.empty());
}

}  // namespace

TEST_CASE("CUDA types convert to and from their mixprec twins explicitly", "[interop][cuda]") {
  STATIC_REQUIRE(std::is_constructible<float16, __half>::value);
  STATIC_REQUIRE(std::is_constructible<bfloat16, __nv_bfloat16>::value);
  STATIC_REQUIRE(std::is_constructible<float8_e4m3fn, __nv_fp8_e4m3>::value);
  STATIC_REQUIRE(std::is_constructible<float8_e5m2, __nv_fp8_e5m2>::value);
  STATIC_REQUIRE(!std::is_convertible<__half, float16>::value);
  STATIC_REQUIRE(!std::is_convertible<float16, __half>::value);
  STATIC_REQUIRE(!std::is_convertible<__nv_fp8_e4m3, float8_e4m3fn>::value);
  STATIC_REQUIRE(!std::is_convertible<float8_e4m3fn, __nv_fp8_e4m3>::value);
}

TEST_CASE("every __half code round-trips through float16 and has CUDA's float value", "[interop][cuda]") {
  const auto report = mixprec_test::check_every_code<float16, __half>(half_from_code, half_code, cast_to<__half>{});
  INFO(report.text());
  CHECK(report.codes == 65536);
  CHECK(report.nan_codes == 2 * 1023);
  CHECK(report.failures.empty());
}

TEST_CASE("every __nv_bfloat16 code round-trips through bfloat16 and has CUDA's float value", "[interop][cuda]") {
  const auto report = mixprec_test::check_every_code<bfloat16, __nv_bfloat16>(bfloat16_from_code, bfloat16_code,
                                                                              cast_to<__nv_bfloat16>{});
  INFO(report.text());
  CHECK(report.codes == 65536);
  CHECK(report.nan_codes == 2 * 127);
  CHECK(report.failures.empty());
}

TEST_CASE("every fp8 code round-trips through its mixprec twin and has CUDA's float value", "[interop][cuda]") {
  check_byte_type<float8_e4m3fn, __nv_fp8_e4m3>(2);
  check_byte_type<float8_e5m2, __nv_fp8_e5m2>(2 * 3);
}

#if MIXPREC_INTEROP_CUDA_HAS_MX_TYPES
TEST_CASE("every e8m0, fp6 and fp4 code round-trips through its mixprec twin and has CUDA's float value",
          "[interop][cuda]") {
  check_byte_type<float8_e8m0fnu, __nv_fp8_e8m0>(1);
  check_byte_type<float6_e3m2fn, __nv_fp6_e3m2>(0);
  check_byte_type<float6_e2m3fn, __nv_fp6_e2m3>(0);
  check_byte_type<float4_e2m1fn, __nv_fp4_e2m1>(0);
}

TEST_CASE("bits above an fp6 or fp4 code are dropped on the way in, as CUDA's own decoding ignores them",
          "[interop][cuda]") {
  for (unsigned code = 0; code < 0x40; ++code) {
    for (unsigned high = 1; high < 4; ++high) {
      const auto byte = static_cast<std::uint8_t>(code | high << 6);
      const auto e3m2 = byte_from_code<__nv_fp6_e3m2>(byte);
      const auto e2m3 = byte_from_code<__nv_fp6_e2m3>(byte);
      CHECK(float6_e3m2fn(e3m2).bits() == code);
      CHECK(float6_e2m3fn(e2m3).bits() == code);
      CHECK(static_cast<float>(e3m2) == static_cast<float>(float6_e3m2fn::from_bits(static_cast<std::uint8_t>(code))));
      CHECK(static_cast<float>(e2m3) == static_cast<float>(float6_e2m3fn::from_bits(static_cast<std::uint8_t>(code))));
    }
  }
  for (unsigned code = 0; code < 0x10; ++code) {
    for (unsigned high = 1; high < 16; ++high) {
      const auto e2m1 = byte_from_code<__nv_fp4_e2m1>(static_cast<std::uint8_t>(code | high << 4));
      CHECK(float4_e2m1fn(e2m1).bits() == code);
      CHECK(static_cast<float>(e2m1) == static_cast<float>(float4_e2m1fn::from_bits(static_cast<std::uint8_t>(code))));
    }
  }
}
#endif

TEST_CASE("a value built by CUDA reads as the same number in mixprec", "[interop][cuda]") {
  CHECK(float16(__float2half_rn(0.1f)).bits() == float16(0.1f).bits());
  CHECK(bfloat16(__float2bfloat16_rn(-3.0f)).bits() == 0xC040);
  CHECK(static_cast<float>(float8_e4m3fn(__nv_fp8_e4m3(448.0f))) == 448.0f);
  CHECK(static_cast<float>(static_cast<__nv_fp8_e5m2>(float8_e5m2(-57344.0f))) == -57344.0f);
}
