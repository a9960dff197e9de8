// mx/element.hpp and mx/int8_element.hpp: the element constants, and the four scale rules
// against transcriptions (tests/mx/scale_oracles.hpp): ocp as OCP MX v1.0 §6.3 with
// floor(log2(amax)) in double; round_up as Transformer Engine's float_to_e8m0
// (common/util/ptx_arch_spec.cuh) written out again, and as torchao's RCEIL on finite amaxes;
// ceil with ceil(log2(amax)) in double; even with frexp and rounding in double.  MXINT8's element
// rounding against std::round in double.  The unit run covers every float exponent (normal and
// subnormal) with several mantissas plus random amaxes; the "[.exhaustive]" case runs every 16th
// non-negative float bit pattern, "[.exhaustive_full]" all of them.
#include <mixprec/limits.hpp>
#include <mixprec/mx/element.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "float_bits.hpp"
#include "scale_oracles.hpp"

namespace {

using namespace mixprec;

template <class T>
struct expected_constants;
template <>
struct expected_constants<float8_e4m3fn> {
  static constexpr int bits = 8, emax = 8, mantissa_bits = 3;
  static constexpr double max = 448;
};
template <>
struct expected_constants<float8_e5m2> {
  static constexpr int bits = 8, emax = 15, mantissa_bits = 2;
  static constexpr double max = 57344;
};
template <>
struct expected_constants<float6_e3m2fn> {
  static constexpr int bits = 6, emax = 4, mantissa_bits = 2;
  static constexpr double max = 28;
};
template <>
struct expected_constants<float6_e2m3fn> {
  static constexpr int bits = 6, emax = 2, mantissa_bits = 3;
  static constexpr double max = 7.5;
};
template <>
struct expected_constants<float4_e2m1fn> {
  static constexpr int bits = 4, emax = 2, mantissa_bits = 1;
  static constexpr double max = 6;
};
template <>
struct expected_constants<mxint8_element> {
  static constexpr int bits = 8, emax = 0, mantissa_bits = 6;
  static constexpr double max = 127.0 / 64.0;
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
  using namespace mx_oracles;
  const float amax = float_from_bits(bits);
  constexpr int emax = expected_constants<T>::emax, m = expected_constants<T>::mantissa_bits;
  constexpr double max = expected_constants<T>::max;
  INFO("amax bits " << bits);
  REQUIRE(mx_scale_code<T>(bits, mx_scale_rule::ocp) == floor_code(amax, emax));
  REQUIRE(mx_scale_code<T>(bits, mx_scale_rule::round_up) == round_up_code(amax, max));
  REQUIRE(mx_scale_code<T>(bits, mx_scale_rule::ceil) == ceil_code(amax, emax));
  REQUIRE(mx_scale_code<T>(bits, mx_scale_rule::even) == even_code(amax, emax, m));
  // round_up is torchao's RCEIL on every finite amax, except where amax / max exceeds 2^127: only
  // MXINT8 (max < 2, not a torchao element) gets there, where TE's rule saturates at 2^127 and
  // torchao's formula would give 255.
  if (std::isfinite(amax)) {
    const int code = mx_scale_code<T>(bits, mx_scale_rule::round_up), torchao = torchao_rceil_code(amax, max);
    if (torchao == 0xFF) {
      REQUIRE((std::is_same<T, mxint8_element>::value && code == 0xFE && amax > std::ldexp(127.0f / 64, 127)));
    } else {
      REQUIRE(code == torchao);
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("MX element constants are the spec's", "[mx]", float8_e4m3fn, float8_e5m2, float6_e3m2fn,
                   float6_e2m3fn, float4_e2m1fn, mxint8_element) {
  using e = mx_element<TestType>;
  CHECK(e::bits == expected_constants<TestType>::bits);
  CHECK(e::emax == expected_constants<TestType>::emax);
  CHECK(e::mantissa_bits == expected_constants<TestType>::mantissa_bits);
  CHECK(e::max_value == expected_constants<TestType>::max);
  CHECK(e::block_bytes == 32 * static_cast<std::size_t>(e::bits) / 8);
  CHECK(e::max_value_reciprocal == static_cast<float>(1.0 / expected_constants<TestType>::max));
  if constexpr (std::is_same<TestType, mxint8_element>::value) {
    CHECK(e::max_value == static_cast<double>(static_cast<float>(mxint8_element::from_bits(0x7F))));
  } else {
    CHECK(e::max_value == static_cast<double>(std::numeric_limits<TestType>::max()));
  }
}

TEMPLATE_TEST_CASE("every scale rule equals its transcription on every exponent and random amaxes", "[mx]",
                   float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn, mxint8_element) {
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
  // inf and NaN: the NaN scale under every rule; FLT_MAX: 2^(127 - emax).
  for (const mx_scale_rule rule :
       {mx_scale_rule::ocp, mx_scale_rule::round_up, mx_scale_rule::ceil, mx_scale_rule::even}) {
    CHECK(mx_scale_code<float8_e5m2>(0x7F80'0000u, rule) == 0xFF);
    CHECK(mx_scale_code<float8_e5m2>(0x7FC0'0000u, rule) == 0xFF);
    CHECK(mx_scale_code<mxint8_element>(0x7FFF'FFFFu, rule) == 0xFF);
    CHECK(mx_scale_code<float6_e2m3fn>(0, rule) == 0);
  }
  CHECK(mx_scale_code<float4_e2m1fn>(0x7F7F'FFFFu, mx_scale_rule::ocp) == 127 + 125);
  CHECK(mx_scale_code<float4_e2m1fn>(0x7F7F'FFFFu, mx_scale_rule::round_up) == 127 + 126);
  // ceil: 1.0 is a power of two (2^-8 as floor); 1.5 goes up to 2^1 - 8 (code 120); 500 → 2^9 - 8.
  CHECK(mx_scale_code<float8_e4m3fn>(0x3F80'0000u, mx_scale_rule::ceil) == 119);
  CHECK(mx_scale_code<float8_e4m3fn>(0x3FC0'0000u, mx_scale_rule::ceil) == 120);
  CHECK(mx_scale_code<float8_e4m3fn>(0x43FA'0000u, mx_scale_rule::ceil) == 128);
  // even, e4m3 (m = 3): 500 = 1.953125 × 2^8 rounds to 2 × 2^8 on 4 significant bits: X = 2
  // (no saturation); 470 = 1.8359 × 2^8 rounds to 1.875 × 2^8: X = 1, 470 saturates to 448;
  // 1.9375 (1.1111b) is a tie, halves up: 2^1 - 8.  e2m1 (m = 1): 7 = 1.75 × 2^2 rounds to 2^3.
  CHECK(mx_scale_code<float8_e4m3fn>(0x43FA'0000u, mx_scale_rule::even) == 128);
  CHECK(mx_scale_code<float8_e4m3fn>(0x43EB'0000u, mx_scale_rule::even) == 127);
  CHECK(mx_scale_code<float8_e4m3fn>(0x3FF8'0000u, mx_scale_rule::even) == 120);
  CHECK(mx_scale_code<float8_e4m3fn>(0x3FF0'0000u, mx_scale_rule::even) == 119);
  CHECK(mx_scale_code<float4_e2m1fn>(0x40E0'0000u, mx_scale_rule::even) == 128);
  // even: FLT_MAX rounds to 2^128, which torchao's finiteness test turns into the NaN scale.
  CHECK(mx_scale_code<float8_e4m3fn>(0x7F7F'FFFFu, mx_scale_rule::even) == 0xFF);
  // Subnormal amaxes: field 0 reads as 2^-127; ceil's +1 makes 2^-126 (code 1 for MXINT8,
  // clamped to 0 for the float elements); even carries 0x7FFFFF (m = 6) into 2^-126 as well.
  CHECK(mx_scale_code<mxint8_element>(1, mx_scale_rule::ceil) == 1);
  CHECK(mx_scale_code<mxint8_element>(1, mx_scale_rule::ocp) == 0);
  CHECK(mx_scale_code<float8_e4m3fn>(1, mx_scale_rule::ceil) == 0);
  CHECK(mx_scale_code<mxint8_element>(0x7F'FFFFu, mx_scale_rule::even) == 1);
  CHECK(mx_scale_code<mxint8_element>(0x7E'0000u, mx_scale_rule::even) == 0);
  // MXINT8 (emax 0): 1.0 → X = 1; 1.99 → X = 1 under ocp (saturates to 127/64), 2 under ceil; ceil
  // above 2^127 needs 2^128: exponent 128, code 255, the NaN scale (as torchao's clamp gives).
  CHECK(mx_scale_code<mxint8_element>(0x3F80'0000u, mx_scale_rule::ocp) == 127);
  CHECK(mx_scale_code<mxint8_element>(0x3FFF'0000u, mx_scale_rule::ocp) == 127);
  CHECK(mx_scale_code<mxint8_element>(0x3FFF'0000u, mx_scale_rule::ceil) == 128);
  CHECK(mx_scale_code<mxint8_element>(0x3FFF'0000u, mx_scale_rule::round_up) == 128);
  CHECK(mx_scale_code<mxint8_element>(0x7F00'0000u, mx_scale_rule::ceil) == 254);
  CHECK(mx_scale_code<mxint8_element>(0x7F00'0001u, mx_scale_rule::ceil) == 0xFF);
  CHECK(mx_scale_code<mxint8_element>(0x7F7F'FFFFu, mx_scale_rule::ocp) == 254);
  CHECK(mx_scale_code<mxint8_element>(0x7F7F'FFFFu, mx_scale_rule::round_up) == 254);
  CHECK(std::string(to_string(mx_scale_rule::even)) == "even");
  CHECK(std::string(torchao_name(mx_scale_rule::ocp)) == "FLOOR");
  CHECK(std::string(torchao_name(mx_scale_rule::round_up)) == "RCEIL");
  CHECK(std::string(torchao_name(mx_scale_rule::ceil)) == "CEIL");
  CHECK(std::string(torchao_name(mx_scale_rule::even)) == "EVEN");
}

TEST_CASE("MXINT8 elements: every code's value, and the nearest element of a value", "[mx]") {
  for (unsigned code = 0; code < 256; ++code) {
    const int k = code < 128 ? static_cast<int>(code) : static_cast<int>(code) - 256;
    const auto e = mxint8_element::from_bits(static_cast<std::uint8_t>(code));
    CHECK(e.bits() == code);
    CHECK(e.integer() == k);
    CHECK(static_cast<float>(e) == std::ldexp(static_cast<float>(k), -6));
  }
  // Ties at every k/64 + 1/128 and their neighbours, both signs: halves away from zero.
  for (int k = -140; k <= 140; ++k) {
    const float tie = (static_cast<float>(k) + 0.5f) / 64.0f;
    for (const float x :
         {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 10.0f), -tie, static_cast<float>(k) / 64.0f}) {
      INFO("x = " << x);
      REQUIRE(mxint8_element::nearest(x).bits() == mx_oracles::mxint8_code(x));
    }
  }
  CHECK(mxint8_element::nearest(1.3f).integer() == 83);
  CHECK(mxint8_element::nearest(0.5f / 64).integer() == 1);
  CHECK(mxint8_element::nearest(-0.5f / 64).integer() == -1);
  CHECK(mxint8_element::nearest(2.5f / 64).integer() == 3);  // away from zero, not to even
  CHECK(mxint8_element::nearest(127.5f / 64).integer() == 127);
  CHECK(mxint8_element::nearest(-1000.0f).integer() == -127);  // never -128
  CHECK(mxint8_element::nearest(std::numeric_limits<float>::infinity()).integer() == 127);
  CHECK(mxint8_element::nearest(std::numeric_limits<float>::quiet_NaN()).integer() == 0);
  // The float just below 0.5/64, which floor(x × 64 + 0.5) in float rounds up (1 - 2^-25 is a
  // tie between 1 - 2^-24 and 1, and goes to the even 1); the next one down is exact.
  CHECK(mxint8_element::nearest(std::ldexp(0.5f - std::ldexp(1.0f, -25), -6)).integer() == 0);
  CHECK(mxint8_element::nearest(std::ldexp(0.5f - std::ldexp(1.0f, -24), -6)).integer() == 0);
  std::mt19937 random(23);
  for (int i = 0; i < 200000; ++i) {
    const float x = float_from_bits(static_cast<std::uint32_t>(random()));
    INFO("x bits " << bits_of(x));
    REQUIRE(mxint8_element::nearest(x).bits() == mx_oracles::mxint8_code(x));
  }
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

// The four rules of one element type against the oracles for one amax; the mismatches.
template <class T>
std::uint64_t rule_mismatches(std::uint32_t bits, float amax) {
  using namespace mx_oracles;
  constexpr int emax = expected_constants<T>::emax, m = expected_constants<T>::mantissa_bits;
  constexpr double max = expected_constants<T>::max;
  return std::uint64_t{mx_scale_code<T>(bits, mx_scale_rule::ocp) != floor_code(amax, emax)} +
         std::uint64_t{mx_scale_code<T>(bits, mx_scale_rule::round_up) != round_up_code(amax, max)} +
         std::uint64_t{mx_scale_code<T>(bits, mx_scale_rule::ceil) != ceil_code(amax, emax)} +
         std::uint64_t{mx_scale_code<T>(bits, mx_scale_rule::even) != even_code(amax, emax, m)};
}

// Every `stride`-th non-negative float bit pattern (stride 1: all 2^31), plus, for stride > 1,
// every pattern whose mantissa is 0, 1 or all ones (the edges of each binade): the four rules of
// the six element types, and MXINT8's nearest element of the float and of its negation.
void check_every_float(std::uint64_t stride) {
  std::uint64_t mismatches = 0, checked = 0, element_mismatches = 0;
  for (std::uint64_t b = 0; b <= 0x7FFF'FFFFu; ++b) {
    const std::uint64_t mantissa = b & 0x7F'FFFFu;
    if (b % stride != 0 && mantissa != 0 && mantissa != 1 && mantissa != 0x7F'FFFFu) continue;
    ++checked;
    const auto bits = static_cast<std::uint32_t>(b);
    const float amax = float_from_bits(bits);
    mismatches += rule_mismatches<float8_e4m3fn>(bits, amax) + rule_mismatches<float8_e5m2>(bits, amax) +
                  rule_mismatches<float6_e3m2fn>(bits, amax) + rule_mismatches<float6_e2m3fn>(bits, amax) +
                  rule_mismatches<float4_e2m1fn>(bits, amax) + rule_mismatches<mxint8_element>(bits, amax);
    element_mismatches += mxint8_element::nearest(amax).bits() != mx_oracles::mxint8_code(amax);
    element_mismatches += mxint8_element::nearest(-amax).bits() != mx_oracles::mxint8_code(-amax);
  }
  WARN(checked << " amaxes × 6 element types × 4 rules: " << mismatches
               << " mismatches; MXINT8 elements of ±amax: " << element_mismatches << " mismatches");
  CHECK(mismatches == 0);
  CHECK(element_mismatches == 0);
}

}  // namespace

TEST_CASE("every scale rule equals its transcription on every 16th non-negative float and every binade edge",
          "[.exhaustive]") {
  check_every_float(16);
}

TEST_CASE("every scale rule equals its transcription on every non-negative float", "[.exhaustive_full]") {
  check_every_float(1);
}
