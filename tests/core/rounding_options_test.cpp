// The CPFloat-parity rounding options (issue 17, item 2): rounding::nearest_zero, the
// equal-probability stochastic rule, subnormals::flush, and bit-flip fault injection.  Known
// values worked by hand here; the every-float checks against the table oracle are
// tests/exhaustive/float_to_format_sweep.cpp (--subnormals both), and every SIMD path against the
// scalar functions tests/bulk/bulk_sweep.cpp.
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/convert.hpp>
#include <mixprec/fault_injection.hpp>
#include <mixprec/io.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <bitset>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "all_formats.hpp"

using namespace mixprec;

namespace {
// 2^e for any float exponent (a 64-bit shift would stop at 2^-63).
inline float two_to(int e) { return std::ldexp(1.0f, e); }
}  // namespace

TEST_CASE("nearest_zero breaks ties toward zero and rounds everything else to nearest", "[rounding]") {
  // bfloat16 near 1: last place 2^-7.  1 + 2^-8 is the tie between 0x3F80 (even) and 0x3F81.
  const float tie_even_below = 1.0f + two_to(-8);
  CHECK(convert<bfloat16>(tie_even_below, rounding::nearest_zero).bits() == 0x3F80);
  CHECK(convert<bfloat16>(tie_even_below, rounding::nearest_even).bits() == 0x3F80);
  // 1 + 3 × 2^-8 ties 0x3F81 (odd) and 0x3F82: nearest_even goes up, nearest_zero stays.
  const float tie_odd_below = 1.0f + 3 * two_to(-8);
  CHECK(convert<bfloat16>(tie_odd_below, rounding::nearest_even).bits() == 0x3F82);
  CHECK(convert<bfloat16>(tie_odd_below, rounding::nearest_zero).bits() == 0x3F81);
  CHECK(convert<bfloat16>(-tie_odd_below, rounding::nearest_zero).bits() == 0xBF81);
  CHECK(convert<bfloat16>(-tie_odd_below, rounding::nearest_away).bits() == 0xBF82);
  // Not a tie: nearest in both directions.
  CHECK(convert<bfloat16>(tie_odd_below + two_to(-20), rounding::nearest_zero).bits() == 0x3F82);
  CHECK(convert<bfloat16>(tie_odd_below - two_to(-20), rounding::nearest_zero).bits() == 0x3F81);
  // Subnormal tie of e4m3fn: 2^-10 is half its smallest subnormal 2^-9: toward zero, signed.
  CHECK(convert<float8_e4m3fn>(two_to(-10), rounding::nearest_zero).bits() == 0x00);
  CHECK(convert<float8_e4m3fn>(-two_to(-10), rounding::nearest_zero).bits() == 0x80);
  CHECK(convert<float8_e4m3fn>(two_to(-10), rounding::nearest_away).bits() == 0x01);
  // Overflow as the other nearest modes: float16's max 65504, next step 32: 65520 is the tie.
  CHECK(convert<float16>(65520.0f, rounding::nearest_zero).bits() == 0x7BFF);
  CHECK(convert<float16>(65520.0f, rounding::nearest_even).bits() == 0x7C00);
  CHECK(convert<float16>(65521.0f, rounding::nearest_zero).bits() == 0x7C00);
  CHECK(convert<float16>(65521.0f, rounding::nearest_zero, overflow::saturate).bits() == 0x7BFF);
  // double -> float rounds once, and bulk agrees with scalar.
  const double tie = 1.0 + std::ldexp(1.0, -24);
  CHECK(convert<float>(tie, rounding::nearest_zero) == 1.0f);
  CHECK(convert<float>(tie, rounding::nearest_away) == 1.0f + two_to(-23));
  std::vector<float> in{tie_even_below, tie_odd_below, -tie_odd_below, 65520.0f, two_to(-10)};
  std::vector<float16> out(in.size());
  convert_n(in.data(), in.size(), out.data(), rounding::nearest_zero);
  for (std::size_t i = 0; i < in.size(); ++i)
    CHECK(out[i].bits() == convert<float16>(in[i], rounding::nearest_zero).bits());
  CHECK(std::string(to_string(rounding::nearest_zero)) == "nearest_zero");
  // Decimal text: the exact tie 1 + 2^-11 of float16, and just above it.
  CHECK(parse<float16>("1.00048828125", rounding::nearest_zero).bits() == 0x3C00);
  CHECK(parse<float16>("-1.00048828125", rounding::nearest_zero).bits() == 0xBC00);
  CHECK(parse<float16>("1.000488281250000000000000001", rounding::nearest_zero).bits() == 0x3C01);
  CHECK(parse<float16>("1.00048828125", rounding::nearest_away).bits() == 0x3C01);
}

TEST_CASE("equal-probability stochastic rounding goes either way with probability exactly one half",
          "[rounding][stochastic]") {
  // e4m3fn near 1: last place 2^-3.  1 + 2^-6 is an eighth of the way to 1.125.
  const float x = 1.0f + two_to(-6);
  const auto up = convert<float8_e4m3fn>(1.125f).bits(), down = convert<float8_e4m3fn>(1.0f).bits();
  const auto sr = [&](float v, std::uint32_t word, stochastic_rule rule) {
    return convert_stochastic<float8_e4m3fn>(v, word, overflow::non_finite, rule).bits();
  };
  // The rule is the word's top bit, whatever the distance.
  CHECK(sr(x, 0x7FFFFFFFu, stochastic_rule::equal_probability) == down);
  CHECK(sr(x, 0x80000000u, stochastic_rule::equal_probability) == up);
  CHECK(sr(1.125f - two_to(-7), 0x7FFFFFFFu, stochastic_rule::equal_probability) == down);  // 3/4 of the way
  // The proportional rule for the same x goes up only for the top eighth of the words.
  CHECK(sr(x, 0xDFFFFFFFu, stochastic_rule::proportional) == down);
  CHECK(sr(x, 0xE0000000u, stochastic_rule::proportional) == up);
  // Exact values never move, under either rule, for any word.
  for (std::uint32_t word : {0u, 0x80000000u, 0xFFFFFFFFu}) {
    CHECK(sr(1.0f, word, stochastic_rule::equal_probability) == down);
    CHECK(sr(1.125f, word, stochastic_rule::equal_probability) == up);
  }
  // A lost part far below the 32-bit window (double input): still inexact, still half and half,
  // where the proportional rule reads a fraction of 0 and never goes up.
  const double tiny_excess = 1.0 + std::ldexp(1.0, -50);
  CHECK(convert_stochastic<float8_e4m3fn>(tiny_excess, 0xFFFFFFFFu, overflow::non_finite,
                                          stochastic_rule::equal_probability)
            .bits() == up);
  CHECK(convert_stochastic<float8_e4m3fn>(tiny_excess, 0xFFFFFFFFu).bits() == down);
  // Counts over a grid of 2^16 words spanning the whole range: exactly half go up, for fractions
  // from 1/8 to 7/8; the proportional rule gives floor(fraction × 2^16) of them.
  for (int eighths = 1; eighths < 8; ++eighths) {
    const float v = 1.0f + static_cast<float>(eighths) * two_to(-6);
    unsigned equal_up = 0, proportional_up = 0;
    for (std::uint32_t k = 0; k < (1u << 16); ++k) {
      const std::uint32_t word = k << 16 | 0x5A5Au;
      equal_up += sr(v, word, stochastic_rule::equal_probability) == up;
      proportional_up += sr(v, word, stochastic_rule::proportional) == up;
    }
    CHECK(equal_up == (1u << 15));
    CHECK(proportional_up == static_cast<unsigned>(eighths) * (1u << 13));
  }
  CHECK(std::string(to_string(stochastic_rule::equal_probability)) == "equal_probability");
}

TEST_CASE("subnormals::flush rounds below the normal range to zero or the smallest normal", "[rounding][subnormals]") {
  // e4m3fn: smallest normal 2^-6 (code 0x08), smallest subnormal 2^-9.
  const auto flush = [](float v, rounding r, overflow o = overflow::non_finite) {
    return convert<float8_e4m3fn>(v, r, o, subnormals::flush).bits();
  };
  CHECK(flush(two_to(-7), rounding::nearest_even) == 0x08);  // the tie goes up, as CPFloat
  CHECK(flush(-two_to(-7), rounding::nearest_even) == 0x88);
  CHECK(flush(two_to(-7) - two_to(-20), rounding::nearest_even) == 0x00);
  CHECK(flush(-two_to(-7) + two_to(-20), rounding::nearest_even) == 0x80);  // -0 keeps its sign
  CHECK(flush(two_to(-7), rounding::nearest_zero) == 0x00);
  CHECK(flush(two_to(-7), rounding::nearest_away) == 0x08);
  CHECK(flush(two_to(-9), rounding::toward_zero) == 0x00);
  CHECK(flush(two_to(-12), rounding::upward) == 0x08);
  CHECK(flush(-two_to(-12), rounding::upward) == 0x80);
  CHECK(flush(-two_to(-12), rounding::downward) == 0x88);
  CHECK(flush(two_to(-12), rounding::to_odd) == 0x08);  // zero would claim exactness
  CHECK(flush(0.0f, rounding::to_odd) == 0x00);
  // Under keep, the same inputs are subnormals.
  CHECK(convert<float8_e4m3fn>(two_to(-8)).bits() == 0x02);
  CHECK(flush(two_to(-8), rounding::nearest_even) == 0x00);
  // At and above the smallest normal nothing changes.
  for (float v : {two_to(-6), 1.0f + two_to(-4), 448.0f, 500.0f}) {
    for (rounding r : mixprec_test::all_roundings) {
      CHECK(flush(v, r) == convert<float8_e4m3fn>(v, r).bits());
    }
  }
  // fnuz has no -0; an unsigned format refuses negatives as under keep; e8m0 has no subnormals.
  CHECK(
      convert<float8_e4m3fnuz>(-two_to(-12), rounding::nearest_even, overflow::non_finite, subnormals::flush).bits() ==
      0x00);
  CHECK(convert<float8_ue4m3>(-two_to(-12), rounding::nearest_even, overflow::non_finite, subnormals::flush).bits() ==
        convert<float8_ue4m3>(-two_to(-12)).bits());
  CHECK(convert<float8_e8m0fnu>(two_to(-140), rounding::nearest_even, overflow::non_finite, subnormals::flush).bits() ==
        convert<float8_e8m0fnu>(two_to(-140)).bits());
  // Into float: float's own subnormals flush; from double the rounding is once.
  const float min_normal = std::numeric_limits<float>::min();
  CHECK(convert<float>(min_normal / 4, rounding::nearest_even, overflow::non_finite, subnormals::flush) == 0.0f);
  CHECK(convert<float>(min_normal / 2, rounding::nearest_even, overflow::non_finite, subnormals::flush) == min_normal);
  CHECK(convert<float>(static_cast<double>(min_normal) * 0.75, rounding::nearest_even, overflow::non_finite,
                       subnormals::flush) == min_normal);
  CHECK(convert<float>(1e-300, rounding::upward, overflow::non_finite, subnormals::flush) == min_normal);
  // Stochastically: probability |x| / min normal, or 1/2.
  const float quarter = two_to(-8);  // a quarter of the smallest normal
  const auto sr = [&](std::uint32_t word, stochastic_rule rule) {
    return convert_stochastic<float8_e4m3fn>(quarter, word, overflow::non_finite, rule, subnormals::flush).bits();
  };
  CHECK(sr(0xBFFFFFFFu, stochastic_rule::proportional) == 0x00);
  CHECK(sr(0xC0000000u, stochastic_rule::proportional) == 0x08);
  CHECK(sr(0x7FFFFFFFu, stochastic_rule::equal_probability) == 0x00);
  CHECK(sr(0x80000000u, stochastic_rule::equal_probability) == 0x08);
  CHECK(std::string(to_string(subnormals::flush)) == "flush");
}

TEST_CASE("bulk conversions under flush and the equal rule equal the scalar functions", "[rounding][bulk]") {
  // Inputs crowded around e4m3fn's and float16's normal range, with signs, zeros and specials.
  std::vector<float> in;
  std::uint64_t state = 0x1234;
  for (int i = 0; i < 20000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const auto bits = static_cast<std::uint32_t>(state >> 32);
    const int exponent = -30 + static_cast<int>(bits % 28);
    const float v = std::ldexp(1.0f + static_cast<float>(bits >> 8 & 0xFFFF) / 65536.0f, exponent);
    in.push_back((bits & 1) != 0 ? -v : v);
  }
  in.insert(in.end(), {0.0f, -0.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::denorm_min(), 1e30f});
  const auto check_type = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> out(in.size());
    for (rounding r : mixprec_test::all_roundings) {
      for (overflow o : mixprec_test::all_overflows) {
        convert_n(in.data(), in.size(), out.data(), r, o, subnormals::flush);
        for (std::size_t i = 0; i < in.size(); ++i) {
          if (out[i].bits() != convert<T>(in[i], r, o, subnormals::flush).bits()) {
            FAIL_CHECK("convert_n flush " << to_string(r) << " " << to_string(o) << " element " << i);
            break;
          }
        }
      }
    }
    constexpr std::uint64_t seed = 99;
    for (stochastic_rule rule : {stochastic_rule::proportional, stochastic_rule::equal_probability}) {
      for (subnormals s : {subnormals::keep, subnormals::flush}) {
        convert_stochastic_n(in.data(), in.size(), out.data(), seed, overflow::saturate, rule, s);
        for (std::size_t i = 0; i < in.size(); ++i) {
          const T expected = convert_stochastic<T>(in[i], detail::philox_bits(seed, i), overflow::saturate, rule, s);
          if (out[i].bits() != expected.bits()) {
            FAIL_CHECK("convert_stochastic_n " << to_string(rule) << " " << to_string(s) << " element " << i);
            break;
          }
        }
      }
    }
  };
  check_type(float8_e4m3fn{});
  check_type(float16{});
  check_type(float4_e2m1fn{});
  // double -> float under flush (the scalar loop).
  std::vector<double> wide{1e-39, -3e-39, 1e-45, 2.0, 6e-39};
  std::vector<float> narrow(wide.size());
  convert_n(wide.data(), wide.size(), narrow.data(), rounding::nearest_even, overflow::non_finite, subnormals::flush);
  for (std::size_t i = 0; i < wide.size(); ++i) {
    CHECK(narrow[i] == convert<float>(wide[i], rounding::nearest_even, overflow::non_finite, subnormals::flush));
  }
  CHECK(narrow[0] == 0.0f);
  CHECK(narrow[4] == std::numeric_limits<float>::min());
}

TEST_CASE("bit flips: one bit of the chosen field, at the chosen rate, reproducible by (seed, index)",
          "[rounding][fault_injection]") {
  constexpr std::size_t n = 1u << 16;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = 1.0f + static_cast<float>(i % 1000) / 1000.0f;
  std::vector<bfloat16> clean(n);
  convert_n(x.data(), n, clean.data());

  SECTION("probability 0 and 1") {
    std::vector<bfloat16> codes = clean;
    inject_bit_flips_n(codes.data(), n, bit_flips{0.0, flip_bits::any, 1});
    for (std::size_t i = 0; i < n; ++i) REQUIRE(codes[i].bits() == clean[i].bits());
    inject_bit_flips_n(codes.data(), n, bit_flips{1.0, flip_bits::fraction, 1});
    unsigned per_bit[7] = {};
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned difference = codes[i].bits() ^ clean[i].bits();
      REQUIRE(std::bitset<16>(difference).count() == 1);
      REQUIRE(difference < (1u << 7));  // a fraction bit of bfloat16
      for (int b = 0; b < 7; ++b) per_bit[b] += (difference >> b) & 1u;
    }
    // Each of the 7 bits about n / 7 = 9362 times (binomial sd 90; a fixed seed: the counts are
    // the same on every run, and a broken choice, e.g. always bit 0, fails at once).
    for (unsigned count : per_bit) {
      CHECK(count > 8900);
      CHECK(count < 9800);
    }
  }
  SECTION("a rate of 1/4 over any bit, as one call or in pieces") {
    std::vector<bfloat16> whole = clean, pieces = clean;
    const bit_flips f{0.25, flip_bits::any, 2024};
    inject_bit_flips_n(whole.data(), n, f);
    inject_bit_flips_n(pieces.data(), 1001, f);
    inject_bit_flips_n(pieces.data() + 1001, n - 1001, f, 1001);
    std::size_t hit = 0, sign_or_exponent = 0;
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(whole[i].bits() == pieces[i].bits());
      REQUIRE(whole[i].bits() == inject_bit_flip(clean[i], f, i).bits());
      const unsigned difference = whole[i].bits() ^ clean[i].bits();
      if (difference == 0) continue;
      REQUIRE(std::bitset<16>(difference).count() == 1);
      ++hit;
      sign_or_exponent += difference >= (1u << 7);
    }
    CHECK(hit > 15800);  // n / 4 = 16384, sd 111
    CHECK(hit < 17000);
    CHECK(sign_or_exponent > hit / 2 - 500);  // 9 of the 16 bits
    CHECK(sign_or_exponent < hit * 9 / 16 + 500);
    // Another seed, another pattern.
    std::vector<bfloat16> other = clean;
    inject_bit_flips_n(other.data(), n, bit_flips{0.25, flip_bits::any, 2025});
    std::size_t same = 0;
    for (std::size_t i = 0; i < n; ++i) same += other[i].bits() == whole[i].bits();
    CHECK(same < n * 3 / 4);
  }
  SECTION("float, double and fp4 codes") {
    std::vector<float> f(x.begin(), x.begin() + 64);
    inject_bit_flips_n(f.data(), f.size(), bit_flips{1.0, flip_bits::fraction, 3});
    for (std::size_t i = 0; i < f.size(); ++i) {
      const std::uint32_t difference = detail::bit_cast<std::uint32_t>(f[i]) ^ detail::bit_cast<std::uint32_t>(x[i]);
      CHECK(std::bitset<32>(difference).count() == 1);
      CHECK(difference < (1u << 23));
    }
    const double d = inject_bit_flip(1.0, bit_flips{1.0, flip_bits::any, 3}, 7);
    CHECK(std::bitset<64>(detail::bit_cast<std::uint64_t>(d) ^ detail::bit_cast<std::uint64_t>(1.0)).count() == 1);
    std::vector<float4_e2m1fn> fp4(256, float4_e2m1fn(1.0f));
    inject_bit_flips_n(fp4.data(), fp4.size(), bit_flips{1.0, flip_bits::any, 4});
    for (const auto& c : fp4) CHECK(c.bits() < 16u);  // never a bit above the code
  }
  SECTION("bad arguments") {
    std::vector<bfloat16> codes = clean;
    CHECK_THROWS_WITH(inject_bit_flips_n(codes.data(), n, bit_flips{-0.5, flip_bits::any, 1}),
                      "inject_bit_flips_n: probability is -0.500000, it must be in [0, 1]");
    CHECK_THROWS_AS(inject_bit_flips_n(codes.data(), n, bit_flips{std::nan(""), flip_bits::any, 1}), invalid_argument);
    CHECK_THROWS_AS(inject_bit_flip(clean[0], bit_flips{1.5, flip_bits::any, 1}, 0), invalid_argument);
    std::vector<float8_e8m0fnu> scales(4);
    CHECK_THROWS_WITH(inject_bit_flips_n(scales.data(), scales.size(), bit_flips{0.5, flip_bits::fraction, 1}),
                      "inject_bit_flips_n: flip_bits::fraction on float8_e8m0fnu, which has 0 fraction bits; use "
                      "flip_bits::any");
    CHECK_THROWS_WITH(inject_bit_flips_n(static_cast<bfloat16*>(nullptr), 3, bit_flips{0.5, flip_bits::any, 1}),
                      "inject_bit_flips_n: null data pointer with n = 3");
    // Nothing was written by the refused calls.
    for (std::size_t i = 0; i < n; ++i) REQUIRE(codes[i].bits() == clean[i].bits());
  }
}
