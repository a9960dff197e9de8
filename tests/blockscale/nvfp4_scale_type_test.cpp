// float8_ue4m3, NVFP4's block-scale type: e4m3fn without the sign.  Every non-negative input must
// give the float8_e4m3fn code in every rounding mode, both overflow modes and stochastic rounding
// (the two formats share magnitudes, bias and NaN code); negative inputs follow the unsigned policy
// of types.hpp.  The every-float check against the table oracle is the exhaustive tier's
// (tests/exhaustive, float_to_float8_ue4m3_*).
#include <mixprec/convert.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "all_formats.hpp"
#include "float_bits.hpp"

namespace {

using mixprec::float8_e4m3fn;
using mixprec::float8_ue4m3;
using mixprec::overflow;
using mixprec::rounding;

// Non-negative floats where rounding decides something: every 16381st bit pattern, and each code's
// value and each midpoint between neighbours with the 8 floats on either side.
std::vector<float> non_negative_inputs() {
  std::vector<float> in;
  for (std::uint64_t b = 0; b <= 0x7FFF'FFFFu; b += 16381) in.push_back(float_from_bits(static_cast<std::uint32_t>(b)));
  for (unsigned code = 0; code < 0x7F; ++code) {
    const float v = static_cast<float>(float8_ue4m3::from_bits(static_cast<std::uint8_t>(code)));
    const float next = code + 1 < 0x7F
                           ? static_cast<float>(float8_ue4m3::from_bits(static_cast<std::uint8_t>(code + 1)))
                           : 480.0f;  // where max's successor would be
    for (const float centre : {v, (v + next) / 2}) {
      for (int d = -8; d <= 8; ++d) {
        const std::int64_t b = static_cast<std::int64_t>(bits_of(centre)) + d;
        if (b >= 0) in.push_back(float_from_bits(static_cast<std::uint32_t>(b)));
      }
    }
  }
  in.push_back(std::numeric_limits<float>::infinity());
  in.push_back(std::numeric_limits<float>::quiet_NaN());
  in.push_back(std::numeric_limits<float>::max());
  return in;
}

TEST_CASE("ue4m3 is e4m3fn's magnitudes: every code decodes to the e4m3fn code's value", "[nvfp4][ue4m3]") {
  for (unsigned code = 0; code < 128; ++code) {
    const auto u = float8_ue4m3::from_bits(static_cast<std::uint8_t>(code));
    const auto e = float8_e4m3fn::from_bits(static_cast<std::uint8_t>(code));
    if (code == 0x7F) {
      CHECK(std::isnan(static_cast<float>(u)));
      CHECK(std::isnan(static_cast<double>(u)));
    } else {
      CHECK(bits_of(static_cast<float>(u)) == bits_of(static_cast<float>(e)));
      CHECK(static_cast<double>(u) == static_cast<double>(e));
    }
  }
}

TEST_CASE("ue4m3 limits: 448, 2^-6, 2^-9, zero lowest, one NaN, no infinity", "[nvfp4][ue4m3]") {
  using L = std::numeric_limits<float8_ue4m3>;
  STATIC_REQUIRE(sizeof(float8_ue4m3) == 1);
  STATIC_REQUIRE(!L::is_signed);
  STATIC_REQUIRE(!L::has_infinity);
  STATIC_REQUIRE(L::has_quiet_NaN);
  STATIC_REQUIRE(L::digits == 4);
  CHECK(static_cast<float>(L::max()) == 448.0f);  // 0'1111'110 = (1 + 0b110 × 2^-3) × 2^(15 - 7)
  CHECK(static_cast<float>(L::min()) == 0x1p-6f);
  CHECK(static_cast<float>(L::denorm_min()) == 0x1p-9f);
  CHECK(L::lowest().bits() == 0);
  CHECK(L::quiet_NaN().bits() == 0x7F);
  CHECK(mixprec::format_name<mixprec::formats::float8_ue4m3>() == "float8_ue4m3");
}

TEST_CASE("ue4m3 from a non-negative float gives the e4m3fn code in every mode", "[nvfp4][ue4m3]") {
  const std::vector<float> in = non_negative_inputs();
  std::uint64_t mismatches = 0, checks = 0;
  for (const float x : in) {
    for (const rounding r : mixprec_test::all_roundings) {
      for (const overflow o : mixprec_test::all_overflows) {
        const auto u = mixprec::convert<float8_ue4m3>(x, r, o).bits();
        const auto e = mixprec::convert<float8_e4m3fn>(x, r, o).bits();
        const auto ud = mixprec::convert<float8_ue4m3>(static_cast<double>(x), r, o).bits();
        mismatches += static_cast<std::uint64_t>(u != e) + static_cast<std::uint64_t>(ud != e);
        checks += 2;
      }
    }
    for (const std::uint32_t random : {0u, 1u, 0x8000'0000u, 0xFFFF'FFFFu, bits_of(x) * 2654435761u}) {
      for (const overflow o : mixprec_test::all_overflows) {
        mismatches += mixprec::convert_stochastic<float8_ue4m3>(x, random, o).bits() !=
                      mixprec::convert_stochastic<float8_e4m3fn>(x, random, o).bits();
        ++checks;
      }
    }
    mismatches += float8_ue4m3(x).bits() != float8_e4m3fn(x).bits();
    ++checks;
  }
  INFO(checks << " checks");
  CHECK(mismatches == 0);
}

TEST_CASE("ue4m3 negative inputs: -0 gives +0, others NaN (0 under saturate) in every mode", "[nvfp4][ue4m3]") {
  CHECK(mixprec::convert<float8_ue4m3>(-0.0f).bits() == 0);
  CHECK(mixprec::convert<float8_ue4m3>(-0.0f, rounding::nearest_even, overflow::saturate).bits() == 0);
  for (const float x :
       {-0x1p-149f, -0x1p-12f, -0x1p-9f, -1.0f, -448.0f, -1e30f, -std::numeric_limits<float>::infinity()}) {
    for (const rounding r : mixprec_test::all_roundings) {
      INFO(x << " " << mixprec::to_string(r));
      CHECK(mixprec::convert<float8_ue4m3>(x, r, overflow::non_finite).bits() == 0x7F);
      CHECK(mixprec::convert<float8_ue4m3>(x, r, overflow::saturate).bits() == 0);
    }
    CHECK(mixprec::convert_stochastic<float8_ue4m3>(x, 0x1234'5678u).bits() == 0x7F);
  }
  CHECK(mixprec::convert<float8_ue4m3>(-std::numeric_limits<float>::quiet_NaN()).bits() == 0x7F);
  CHECK(std::isnan(static_cast<float>(-float8_ue4m3(2.0f))));
  CHECK((-float8_ue4m3(0.0f)).bits() == 0);
}

TEST_CASE("ue4m3 arithmetic on every pair of codes rounds as e4m3fn where the result is not negative",
          "[nvfp4][ue4m3]") {
  std::uint64_t mismatches = 0;
  for (unsigned i = 0; i < 0x7F; ++i) {
    for (unsigned j = 0; j < 0x7F; ++j) {
      const auto a = float8_ue4m3::from_bits(static_cast<std::uint8_t>(i));
      const auto b = float8_ue4m3::from_bits(static_cast<std::uint8_t>(j));
      const auto ea = float8_e4m3fn::from_bits(static_cast<std::uint8_t>(i));
      const auto eb = float8_e4m3fn::from_bits(static_cast<std::uint8_t>(j));
      // & 0x7F: a NaN of e4m3fn may carry a sign; ue4m3 has the one NaN.
      mismatches += (a + b).bits() != ((ea + eb).bits() & 0x7F);
      mismatches += (a * b).bits() != ((ea * eb).bits() & 0x7F);
      if (j != 0) mismatches += (a / b).bits() != ((ea / eb).bits() & 0x7F);  // x / 0: the exhaustive tier's
      const auto d = ea - eb;
      const bool negative = static_cast<float>(d) < 0.0f;
      mismatches += (a - b).bits() != (negative ? 0x7F : (d.bits() & 0x7F));
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace
