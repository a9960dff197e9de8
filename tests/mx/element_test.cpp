// mx/element.hpp: the element constants, and both scale rules against direct transcriptions:
// the OCP MX v1.0 §6.3 rule written with floor(log2(amax)) in double, and Transformer Engine's
// float_to_e8m0 (common/util/ptx_arch_spec.cuh) written out again here.  The unit run covers
// every float exponent (normal and subnormal) with several mantissas plus random amaxes; the
// "[.exhaustive]" case runs every non-negative float bit pattern.
#include <mixprec/limits.hpp>
#include <mixprec/mx/element.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "float_bits.hpp"

namespace {

using namespace mixprec;

// OCP MX v1.0 §6.3 Algorithm 1, lines 1-2, in e8m0: floor(log2(amax)) - emax_elem, clamped to
// e8m0's range below; log2(0) = -inf clamps to -127; inf and NaN amaxes give the NaN scale.
int spec_scale_code(float amax, int emax_elem) {
  if (std::isnan(amax) || std::isinf(amax)) return 0xFF;
  if (amax == 0.0f) return 0;
  const double shared_exp = std::floor(std::log2(static_cast<double>(amax))) - emax_elem;
  return static_cast<int>(std::max(shared_exp, -127.0)) + 127;
}

// transformer_engine/common/util/ptx_arch_spec.cuh, float_to_e8m0 (the path before Blackwell).
std::uint8_t te_float_to_e8m0(float val) {
  if (std::isnan(val)) return 0xFF;
  if (std::isinf(val)) return 0xFE;
  if (val == 0.0f) return 0x00;
  std::uint32_t val_u32;
  std::memcpy(&val_u32, &val, 4);
  auto exponent = static_cast<std::uint8_t>(val_u32 >> 23);
  const std::uint32_t mantissa = val_u32 & 0x7FFFFF;
  if ((mantissa > 0 && exponent != 0xFE) && !(exponent == 0 && mantissa <= 0x400000)) ++exponent;
  return exponent;
}

// The round_up rule: TE's code of amax × Quantized_Limits<T>::max_norm_rcp (1.0 / max in double,
// then float), NaN scale for blocks with inf or NaN.
int te_round_up_code(float amax, double max_value) {
  if (std::isnan(amax) || std::isinf(amax)) return 0xFF;
  return te_float_to_e8m0(amax * static_cast<float>(1.0 / max_value));
}

template <class T>
struct expected_constants;
template <>
struct expected_constants<float8_e4m3fn> {
  static constexpr int bits = 8, emax = 8;
  static constexpr double max = 448;
};
template <>
struct expected_constants<float8_e5m2> {
  static constexpr int bits = 8, emax = 15;
  static constexpr double max = 57344;
};
template <>
struct expected_constants<float6_e3m2fn> {
  static constexpr int bits = 6, emax = 4;
  static constexpr double max = 28;
};
template <>
struct expected_constants<float6_e2m3fn> {
  static constexpr int bits = 6, emax = 2;
  static constexpr double max = 7.5;
};
template <>
struct expected_constants<float4_e2m1fn> {
  static constexpr int bits = 4, emax = 2;
  static constexpr double max = 6;
};

// Amaxes for the unit run: every exponent field with mantissas 0, 1, the middle, the largest,
// every subnormal leading bit, the specials, and random patterns.
std::vector<std::uint32_t> amax_patterns() {
  std::vector<std::uint32_t> v;
  for (std::uint32_t field = 0; field < 256; ++field) {
    for (std::uint32_t mantissa : {0u, 1u, 0x400000u, 0x400001u, 0x7FFFFFu, 0x123456u})
      v.push_back(field << 23 | mantissa);
  }
  for (int bit = 0; bit < 23; ++bit) v.push_back(1u << bit);
  std::mt19937 random(17);
  for (int i = 0; i < 200000; ++i) v.push_back(static_cast<std::uint32_t>(random()) & 0x7FFF'FFFFu);
  return v;
}

template <class T>
void check_rules(std::uint32_t bits) {
  const float amax = float_from_bits(bits);
  INFO("amax bits " << bits);
  REQUIRE(mx_scale_code<T>(bits, mx_scale_rule::ocp) == spec_scale_code(amax, mx_element<T>::emax));
  REQUIRE(mx_scale_code<T>(bits, mx_scale_rule::round_up) == te_round_up_code(amax, expected_constants<T>::max));
}

}  // namespace

TEMPLATE_TEST_CASE("MX element constants are the spec's", "[mx]", float8_e4m3fn, float8_e5m2, float6_e3m2fn,
                   float6_e2m3fn, float4_e2m1fn) {
  using e = mx_element<TestType>;
  CHECK(e::bits == expected_constants<TestType>::bits);
  CHECK(e::emax == expected_constants<TestType>::emax);
  CHECK(e::max_value == expected_constants<TestType>::max);
  CHECK(e::max_value == static_cast<double>(std::numeric_limits<TestType>::max()));
  CHECK(e::block_bytes == 32 * static_cast<std::size_t>(e::bits) / 8);
  CHECK(e::max_value_reciprocal == static_cast<float>(1.0 / expected_constants<TestType>::max));
}

TEMPLATE_TEST_CASE("both scale rules equal their transcriptions on every exponent and random amaxes", "[mx]",
                   float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn) {
  for (const std::uint32_t bits : amax_patterns()) check_rules<TestType>(bits);
}

TEST_CASE("scale rules on worked values", "[mx]") {
  // 1.0: floor(log2) = 0, minus emax 8: 2^-8 (code 119); round-up: 1/448 → 2^-8 too.
  CHECK(mx_scale_code<float8_e4m3fn>(0x3F80'0000u, mx_scale_rule::ocp) == 119);
  CHECK(mx_scale_code<float8_e4m3fn>(0x3F80'0000u, mx_scale_rule::round_up) == 119);
  // 500: floor(log2) = 8: X = 1, and 500 saturates to 448 (ocp); round-up: 500/448 → X = 2.
  CHECK(mx_scale_code<float8_e4m3fn>(0x43FA'0000u, mx_scale_rule::ocp) == 127);
  CHECK(mx_scale_code<float8_e4m3fn>(0x43FA'0000u, mx_scale_rule::round_up) == 128);
  // 7 in e2m1: ocp X = 2^(2-2) = 1, 7 saturates to 6; round-up X = 2 (7/6 → 2^1).
  CHECK(mx_scale_code<float4_e2m1fn>(0x40E0'0000u, mx_scale_rule::ocp) == 127);
  CHECK(mx_scale_code<float4_e2m1fn>(0x40E0'0000u, mx_scale_rule::round_up) == 128);
  // Zero blocks: 2^-127; subnormal amaxes clamp there under the spec rule.
  CHECK(mx_scale_code<float6_e3m2fn>(0, mx_scale_rule::ocp) == 0);
  CHECK(mx_scale_code<float6_e3m2fn>(1, mx_scale_rule::ocp) == 0);
  CHECK(mx_scale_code<float6_e3m2fn>(0, mx_scale_rule::round_up) == 0);
  // inf and NaN: the NaN scale under both rules; FLT_MAX: 2^(127 - emax).
  for (const mx_scale_rule rule : {mx_scale_rule::ocp, mx_scale_rule::round_up}) {
    CHECK(mx_scale_code<float8_e5m2>(0x7F80'0000u, rule) == 0xFF);
    CHECK(mx_scale_code<float8_e5m2>(0x7FC0'0000u, rule) == 0xFF);
  }
  CHECK(mx_scale_code<float4_e2m1fn>(0x7F7F'FFFFu, mx_scale_rule::ocp) == 127 + 125);
  CHECK(mx_scale_code<float4_e2m1fn>(0x7F7F'FFFFu, mx_scale_rule::round_up) == 127 + 126);
}

TEST_CASE("scale values and reciprocals are exact powers of two for every e8m0 code", "[mx]") {
  for (int code = 0; code < 255; ++code) {
    const auto c = static_cast<std::uint8_t>(code);
    CHECK(mx_scale_value(c) == static_cast<float>(float8_e8m0fnu::from_bits(c)));
    CHECK(mx_scale_value(c) == std::ldexp(1.0f, code - 127));
    CHECK(mx_scale_reciprocal(c) == std::ldexp(1.0f, 127 - code));
  }
  CHECK(std::isnan(mx_scale_value(0xFF)));
}

namespace {

// Every `stride`-th non-negative float bit pattern (stride 1: all 2^31), plus, for stride > 1,
// every pattern whose mantissa is 0, 1 or all ones (the edges of each binade).
void check_every_float(std::uint64_t stride) {
  std::uint64_t mismatches = 0, checked = 0;
  const double maxima[5] = {448, 57344, 28, 7.5, 6};
  for (std::uint64_t b = 0; b <= 0x7FFF'FFFFu; ++b) {
    const std::uint64_t mantissa = b & 0x7F'FFFFu;
    if (b % stride != 0 && mantissa != 0 && mantissa != 1 && mantissa != 0x7F'FFFFu) continue;
    ++checked;
    const auto bits = static_cast<std::uint32_t>(b);
    const float amax = float_from_bits(bits);
    const bool special = std::isnan(amax) || std::isinf(amax);
    const double log2_floor = special || amax == 0.0f ? 0.0 : std::floor(std::log2(static_cast<double>(amax)));
    const auto spec = [&](int emax) {
      if (special) return 0xFF;
      if (amax == 0.0f) return 0;
      return static_cast<int>(std::max(log2_floor - emax, -127.0)) + 127;
    };
    mismatches += mx_scale_code<float8_e4m3fn>(bits, mx_scale_rule::ocp) != spec(8);
    mismatches += mx_scale_code<float8_e5m2>(bits, mx_scale_rule::ocp) != spec(15);
    mismatches += mx_scale_code<float6_e3m2fn>(bits, mx_scale_rule::ocp) != spec(4);
    mismatches += mx_scale_code<float6_e2m3fn>(bits, mx_scale_rule::ocp) != spec(2);
    mismatches += mx_scale_code<float4_e2m1fn>(bits, mx_scale_rule::ocp) != spec(2);
    mismatches += mx_scale_code<float8_e4m3fn>(bits, mx_scale_rule::round_up) != te_round_up_code(amax, maxima[0]);
    mismatches += mx_scale_code<float8_e5m2>(bits, mx_scale_rule::round_up) != te_round_up_code(amax, maxima[1]);
    mismatches += mx_scale_code<float6_e3m2fn>(bits, mx_scale_rule::round_up) != te_round_up_code(amax, maxima[2]);
    mismatches += mx_scale_code<float6_e2m3fn>(bits, mx_scale_rule::round_up) != te_round_up_code(amax, maxima[3]);
    mismatches += mx_scale_code<float4_e2m1fn>(bits, mx_scale_rule::round_up) != te_round_up_code(amax, maxima[4]);
  }
  WARN(checked << " amaxes × 5 element types × 2 rules: " << mismatches << " mismatches");
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("both scale rules equal their transcriptions on every 16th non-negative float and every binade edge",
          "[.exhaustive]") {
  check_every_float(16);
}

TEST_CASE("both scale rules equal their transcriptions on every non-negative float", "[.exhaustive_full]") {
  check_every_float(1);
}
