// convert.hpp: each rounding and overflow rule of DESIGN.md "Conversion" on hand-picked inputs
// (the exhaustive sweeps under tests/exhaustive check every input), and the statistics of
// stochastic rounding.
#include <mixprec/convert.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "all_formats.hpp"

using namespace mixprec;

namespace {
constexpr float inf = std::numeric_limits<float>::infinity();

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST_CASE("the contract's examples hold", "[convert]") {
  CHECK(float8_e4m3fn(464.f).bits() == 0x7E);  // tie between 448 and 480: even is 448
  CHECK(std::isnan(static_cast<float>(float8_e4m3fn(480.f))));
  CHECK(convert<float8_e4m3fn>(1e9f, rounding::nearest_even, overflow::saturate).bits() == 0x7E);
  CHECK(convert<float16>(65520.f, rounding::toward_zero).bits() == 0x7BFF);
  CHECK(convert<float16>(65520.f).bits() == 0x7C00);
  CHECK(convert<bfloat16>(1.0f, rounding::upward).bits() == 0x3F80);
}

TEST_CASE("a double is rounded once, never through float", "[convert]") {
  // 1 + 2^-11 + 2^-40 is just above the fp16 midpoint 1 + 2^-11; through float it would become
  // the midpoint itself and round to even (1.0).
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  CHECK(float16(x).bits() == 0x3C01);
  CHECK(float16(static_cast<float>(x)).bits() == 0x3C00);
  // The same for bf16 just below a midpoint, in each nearest mode.
  const double below = 1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -50);
  CHECK(convert<bfloat16>(below, rounding::nearest_away).bits() == 0x3F80);
  CHECK(convert<bfloat16>(static_cast<float>(below), rounding::nearest_away).bits() == 0x3F81);
}

TEST_CASE("each rounding mode picks its neighbour", "[convert]") {
  const float x = 1.0f + std::ldexp(1.0f, -9);  // between bf16 1 (0x3F80) and 1 + 2^-7 (0x3F81), nearer 1
  CHECK(convert<bfloat16>(x, rounding::nearest_even).bits() == 0x3F80);
  CHECK(convert<bfloat16>(x, rounding::nearest_away).bits() == 0x3F80);
  CHECK(convert<bfloat16>(x, rounding::toward_zero).bits() == 0x3F80);
  CHECK(convert<bfloat16>(x, rounding::upward).bits() == 0x3F81);
  CHECK(convert<bfloat16>(x, rounding::downward).bits() == 0x3F80);
  CHECK(convert<bfloat16>(x, rounding::to_odd).bits() == 0x3F81);
  CHECK(convert<bfloat16>(-x, rounding::upward).bits() == 0xBF80);
  CHECK(convert<bfloat16>(-x, rounding::downward).bits() == 0xBF81);
  // Ties: 1 + 2^-8 is the midpoint.
  const float tie = 1.0f + std::ldexp(1.0f, -8);
  CHECK(convert<bfloat16>(tie, rounding::nearest_even).bits() == 0x3F80);
  CHECK(convert<bfloat16>(tie, rounding::nearest_away).bits() == 0x3F81);
  // An exact value never moves, in any mode.
  for (rounding r : mixprec_test::all_roundings) CHECK(convert<float8_e5m2>(1.5f, r).bits() == 0x3E);
}

TEST_CASE("directed modes overflow as IEEE 754 says", "[convert][overflow]") {
  const float big = 1e6f;
  CHECK(convert<float16>(big, rounding::toward_zero).bits() == 0x7BFF);
  CHECK(convert<float16>(-big, rounding::toward_zero).bits() == 0xFBFF);
  CHECK(convert<float16>(big, rounding::upward).bits() == 0x7C00);
  CHECK(convert<float16>(-big, rounding::upward).bits() == 0xFBFF);
  CHECK(convert<float16>(big, rounding::downward).bits() == 0x7BFF);
  CHECK(convert<float16>(-big, rounding::downward).bits() == 0xFC00);
  CHECK(convert<float16>(big, rounding::upward, overflow::saturate).bits() == 0x7BFF);
  // No infinity: NaN under non_finite, max under saturate.
  CHECK(convert<float8_e4m3fn>(1000.f, rounding::upward).bits() == 0x7F);
  CHECK(convert<float8_e4m3fn>(1000.f, rounding::upward, overflow::saturate).bits() == 0x7E);
  CHECK(convert<float8_e4m3fnuz>(-1000.f).bits() == 0x80);
  // Neither: ±max.
  CHECK(convert<float4_e2m1fn>(-100.f).bits() == 0xF);
}

TEST_CASE("the ml_dtypes formats round and overflow by their own encodings", "[convert][overflow]") {
  // float8_e4m3 (IEEE, max 240): 248 is the midpoint to 256, ties-to-even goes to infinity.
  CHECK(convert<float8_e4m3>(247.f).bits() == 0x77);
  CHECK(convert<float8_e4m3>(248.f).bits() == 0x78);
  CHECK(convert<float8_e4m3>(248.f, rounding::nearest_even, overflow::saturate).bits() == 0x77);
  CHECK(convert<float8_e4m3>(-inf).bits() == 0xF8);
  // float8_e3m4 (IEEE, max 15.5): 15.75 ties to infinity; 2^-7 ties to even (zero).
  CHECK(convert<float8_e3m4>(15.75f).bits() == 0x70);
  CHECK(convert<float8_e3m4>(std::ldexp(1.f, -7)).bits() == 0x00);
  CHECK(convert<float8_e3m4>(std::ldexp(3.f, -7)).bits() == 0x02);
  // float8_e4m3b11fnuz (max 30, NaN 0x80): overflow is NaN, -0 is +0.
  CHECK(convert<float8_e4m3b11fnuz>(31.f).bits() == 0x80);
  CHECK(convert<float8_e4m3b11fnuz>(-31.f, rounding::nearest_even, overflow::saturate).bits() == 0xFF);
  CHECK(convert<float8_e4m3b11fnuz>(-0.0f).bits() == 0x00);
  // tfloat32: 1 + 2^-11 is a tie; RNE keeps 1, ties away (cvt.rna.tf32.f32) gives 1 + 2^-10.
  CHECK(convert<tfloat32>(1.f + std::ldexp(1.f, -11)).bits() == (0x3F800000u >> 13));
  CHECK(convert<tfloat32>(1.f + std::ldexp(1.f, -11), rounding::nearest_away).bits() == (0x3F802000u >> 13));
  CHECK(convert<tfloat32>(std::numeric_limits<float>::max()).bits() == 0x3FC00);
  CHECK(convert<tfloat32>(std::numeric_limits<float>::max(), rounding::toward_zero).bits() == 0x3FBFF);
  CHECK(convert<tfloat32>(-std::numeric_limits<float>::max(), rounding::nearest_even, overflow::saturate).bits() ==
        0x7FBFF);
  CHECK(static_cast<float>(tfloat32(0.1f)) == float_of(0x3DCCC000u));
}

TEST_CASE("round-to-odd never makes a non-finite value from a finite one", "[convert][overflow]") {
  // Above 448 the odd e4m3fn code would be the NaN 0x7F, so 448 it is.
  CHECK(convert<float8_e4m3fn>(450.f, rounding::to_odd).bits() == 0x7E);
  CHECK(convert<float8_e4m3fn>(1e30f, rounding::to_odd).bits() == 0x7E);
  CHECK(convert<float16>(1e30f, rounding::to_odd).bits() == 0x7BFF);
  CHECK(convert<float16>(-1e30f, rounding::to_odd).bits() == 0xFBFF);
  CHECK(convert<float16>(inf, rounding::to_odd).bits() == 0x7C00);  // infinity itself stays
}

TEST_CASE("infinities: kept, NaN or max; saturate makes them ±max", "[convert][specials]") {
  CHECK(convert<float16>(inf).bits() == 0x7C00);
  CHECK(convert<float16>(-inf, rounding::nearest_even, overflow::saturate).bits() == 0xFBFF);
  CHECK(convert<float8_e4m3fn>(inf).bits() == 0x7F);
  CHECK(convert<float8_e4m3fn>(-inf).bits() == 0xFF);
  CHECK(convert<float8_e4m3fn>(-inf, rounding::nearest_even, overflow::saturate).bits() == 0xFE);
  CHECK(convert<float8_e5m2fnuz>(inf).bits() == 0x80);
  CHECK(convert<float6_e3m2fn>(-inf).bits() == 0x3F);
  CHECK(convert<float8_e8m0fnu>(inf).bits() == 0xFF);
  CHECK(convert<float8_e8m0fnu>(inf, rounding::nearest_even, overflow::saturate).bits() == 0xFE);
}

TEST_CASE("NaN stays NaN with its sign; canonical when narrowing, payload kept when widening", "[convert][specials]") {
  const float negative_nan = float_of(0xFFC00001u);
  CHECK(convert<float16>(negative_nan).bits() == 0xFE00);
  CHECK(convert<bfloat16>(float_of(0x7F800001u)).bits() == 0x7FC0);  // signalling in, quiet out
  CHECK(convert<float8_e4m3fn>(negative_nan).bits() == 0xFF);
  CHECK(convert<float8_e5m2>(negative_nan).bits() == 0xFE);
  CHECK(convert<float8_e4m3fnuz>(negative_nan).bits() == 0x80);
  CHECK(convert<float8_e8m0fnu>(negative_nan).bits() == 0xFF);
  // No NaN in fp6/fp4: +max, as CUDA's cvt does (docs/decisions.md).
  CHECK(convert<float6_e2m3fn>(negative_nan).bits() == 0x1F);
  CHECK(convert<float4_e2m1fn>(negative_nan, rounding::toward_zero, overflow::saturate).bits() == 0x7);
  // Widening IEEE -> IEEE keeps the payload and quiets it (IEEE 754-2019 §6.2.3).
  CHECK(bits_of(static_cast<float>(float16::from_bits(0x7D01))) == 0x7FE02000u);  // 0x101 << 13, quiet bit set
  CHECK(bits_of(static_cast<float>(bfloat16::from_bits(0xFF81))) == 0xFFC10000u);
  CHECK(bits_of(static_cast<float>(float8_e4m3fn::from_bits(0xFF))) == 0xFFC00000u);
}

TEST_CASE("zeros keep their sign where the format has -0", "[convert][specials]") {
  CHECK(convert<float16>(-0.0f).bits() == 0x8000);
  CHECK(convert<float16>(-1e-30f).bits() == 0x8000);  // underflow to -0
  CHECK(convert<float16>(-1e-30f, rounding::downward).bits() == 0x8001);
  CHECK(convert<float8_e4m3fnuz>(-0.0f).bits() == 0x00);
  CHECK(convert<float8_e4m3fnuz>(-1e-30f).bits() == 0x00);
  CHECK(convert<float6_e3m2fn>(-0.0f).bits() == 0x20);
}

TEST_CASE("e8m0: no zero, no sign, ties go up, saturate clips to [2^-127, 2^127]", "[convert][e8m0]") {
  CHECK(convert<float8_e8m0fnu>(1.0f).bits() == 0x7F);
  CHECK(convert<float8_e8m0fnu>(1.5f).bits() == 0x80);  // tie: up
  CHECK(convert<float8_e8m0fnu>(1.4999f).bits() == 0x7F);
  CHECK(convert<float8_e8m0fnu>(0.0f).bits() == 0xFF);   // zero: NaN
  CHECK(convert<float8_e8m0fnu>(-4.0f).bits() == 0xFF);  // negative: NaN
  CHECK(convert<float8_e8m0fnu>(0.0f, rounding::nearest_even, overflow::saturate).bits() == 0x00);
  CHECK(convert<float8_e8m0fnu>(-4.0f, rounding::nearest_even, overflow::saturate).bits() == 0x00);
  CHECK(convert<float8_e8m0fnu>(1e-45f).bits() == 0x00);  // below 2^-127: the smallest value
  CHECK(convert<float8_e8m0fnu>(1e-45f, rounding::toward_zero).bits() == 0x00);
  CHECK(convert<float8_e8m0fnu>(std::ldexp(1.5f, 127)).bits() == 0xFF);  // overflow: NaN
  CHECK(convert<float8_e8m0fnu>(std::ldexp(1.5f, 127), rounding::toward_zero).bits() == 0xFE);
  CHECK(convert<float8_e8m0fnu>(3.0f, rounding::to_odd).bits() == 0x80);  // to_odd truncates powers of two
}

TEST_CASE("subnormal inputs and outputs are exact", "[convert][subnormal]") {
  CHECK(convert<float16>(std::ldexp(1.0f, -24)).bits() == 0x0001);
  CHECK(convert<float16>(std::ldexp(1.0f, -25)).bits() == 0x0000);  // tie with 0: even
  CHECK(convert<float16>(std::ldexp(1.5f, -25)).bits() == 0x0001);
  CHECK(convert<bfloat16>(float_of(0x00000001u), rounding::upward).bits() == 0x0001);  // float subnormal in
  CHECK(convert<bfloat16>(float_of(0x00010000u)).bits() == 0x0001);
  CHECK(convert<bfloat16>(float_of(0x00018000u)).bits() == 0x0002);  // tie: even
  CHECK(convert<float8_e4m3fn>(std::ldexp(1.0f, -9)).bits() == 0x01);
  CHECK(convert<float8_e4m3fn>(std::ldexp(7.0f, -9)).bits() == 0x07);
  CHECK(convert<float8_e4m3fn>(std::ldexp(7.5f, -9)).bits() == 0x08);  // tie: up to the smallest normal (even)
}

TEMPLATE_TEST_CASE("stochastic rounding returns a neighbour, up with the exact fraction", "[convert][stochastic]",
                   float16, bfloat16, float8_e4m3fn, float8_e5m2, float6_e2m3fn, float4_e2m1fn, float8_e8m0fnu) {
  // x = lower + f × gap for a few fractions f; 2^18 draws each from a fixed-seed generator.
  // The count of "up" results is binomial(n, f): accept within 6 standard deviations
  // (a false alarm has probability < 1e-8 per check, and the seed is fixed anyway).
  std::mt19937 generator(12345);
  const TestType lower(1.0f);
  const TestType upper = TestType::from_bits(static_cast<typename TestType::storage_type>(lower.bits() + 1));
  const double gap = static_cast<double>(upper) - static_cast<double>(lower);
  for (double f : {0.0, 0.1, 0.25, 0.5, 0.7, 0.999}) {
    const auto x = static_cast<float>(static_cast<double>(lower) + f * gap);
    const double exact_f = (static_cast<double>(x) - static_cast<double>(lower)) / gap;
    constexpr int draws = 1 << 18;
    int ups = 0, neither = 0;
    for (int i = 0; i < draws; ++i) {
      const TestType y = convert_stochastic<TestType>(x, static_cast<std::uint32_t>(generator()));
      ups += y.bits() == upper.bits() ? 1 : 0;
      neither += (y.bits() != lower.bits() && y.bits() != upper.bits()) ? 1 : 0;
    }
    CHECK(neither == 0);
    const double sigma = std::sqrt(draws * exact_f * (1 - exact_f));
    CHECK(std::abs(ups - draws * exact_f) <= 6 * sigma + 1);
    if (f == 0.0) CHECK(ups == 0);
    // Negative values mirror: away from zero with the same probability.
    if (std::numeric_limits<TestType>::is_signed) {
      const TestType y = convert_stochastic<TestType>(-x, 0xFFFFFFFFu);
      CHECK(y.bits() == (f == 0.0 ? (-lower).bits() : (-upper).bits()));
    }
  }
}

TEST_CASE("stochastic rounding follows the overflow rule at the top of the range", "[convert][stochastic]") {
  // 460 lies between 448 and the (NaN) code above it.
  CHECK(convert_stochastic<float8_e4m3fn>(460.f, 0u).bits() == 0x7E);
  CHECK(convert_stochastic<float8_e4m3fn>(460.f, 0xFFFFFFFFu).bits() == 0x7F);
  CHECK(convert_stochastic<float8_e4m3fn>(460.f, 0xFFFFFFFFu, overflow::saturate).bits() == 0x7E);
  CHECK(convert_stochastic<float16>(inf, 0u, overflow::saturate).bits() == 0x7BFF);
}
