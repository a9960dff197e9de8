#include "format_comparison/accumulation.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "format_comparison/formats.hpp"

using namespace mixprec_example;

TEST_CASE("the exact accumulator is wide enough for every partial sum of 2^20 terms") {
  // 2 * (emax + 1 - q) + 20, q the exponent of the smallest subnormal: float 2 * (128 + 149) + 20.
  STATIC_REQUIRE(exact_sum_bits<float32>() == 574);
  STATIC_REQUIRE(exact_sum_bits<mixprec::float16>() == 2 * (16 + 24) + 20);
  STATIC_REQUIRE(exact_sum_bits<mixprec::bfloat16>() == 2 * (128 + 133) + 20);
  STATIC_REQUIRE(exact_sum_bits<mixprec::float8_e4m3fn>() == 64);  // 2 * (9 + 9) + 20 = 56, raised to 64
}

TEST_CASE("quarter-decade lengths run from 10 to the limit") {
  const std::vector<std::size_t> n = quarter_decade_lengths(1000000);
  REQUIRE(n.size() == 21);
  CHECK(n[0] == 10);
  CHECK(n[1] == 18);
  CHECK(n[2] == 32);
  CHECK(n[4] == 100);
  CHECK(n.back() == 1000000);
  CHECK(quarter_decade_lengths(9).empty());
}

TEST_CASE("fp16 accumulation stagnates at 2048: adding 1 is a tie that rounds back to even") {
  const std::vector<double> ones(4096, 1.0);
  const accumulation_curves c = sum_error<mixprec::float16>(ones, {2048, 4096});
  CHECK(c.lengths == std::vector<std::size_t>{2048, 4096});
  CHECK(c.format_accumulator[0] == 0);
  CHECK(c.format_accumulator[1] == 0.5);  // 2048 computed, 4096 exact
  CHECK(c.float_accumulator[1] == 0);
}

TEST_CASE("a format accumulator rounds each product, then saturates (fp4: 6 is the max)") {
  // 1.5 * 1.5 = 2.25 rounds to 2 in e2m1; 2 + 2 = 4, 4 + 2 = 6, 6 + 2 = 8 -> 6 (fp4 has no inf).
  const std::vector<double> x(4, 1.5);
  const accumulation_curves c = dot_error<mixprec::float4_e2m1fn>(x, x, {1, 2, 4});
  CHECK(c.format_accumulator[0] == Approx(0.25 / 2.25));
  CHECK(c.format_accumulator[1] == Approx(0.5 / 4.5));
  CHECK(c.format_accumulator[2] == Approx(3.0 / 9.0));
  CHECK(c.float_accumulator[2] == 0);  // float holds 2.25 * 4 exactly
}

TEST_CASE("the reference is exact where double would not be: tiny terms between huge ones") {
  // 2^100, then a thousand terms of 2^-100, then -2^100.  The exact sum is 1000 * 2^-100; float
  // (and double) lose every tiny term, so the float accumulator ends at 0 with error
  // 1000 * 2^-100 / (2^101 + 1000 * 2^-100).
  std::vector<double> values = {0x1p100};
  values.insert(values.end(), 1000, 0x1p-100);
  values.push_back(-0x1p100);
  const accumulation_curves c = sum_error<float32>(values, {values.size()});
  const double tiny_sum = 1000 * 0x1p-100;
  CHECK(c.float_accumulator[0] == Approx(tiny_sum / (0x1p101 + tiny_sum)).epsilon(1e-12));
  CHECK(c.float_accumulator[0] > 0);
}

TEST_CASE("an accumulator that overflows to inf reports an infinite error") {
  const std::vector<double> big(2, 60000);  // 120000 > fp16's max 65504
  const accumulation_curves c = sum_error<mixprec::float16>(big, {1, 2});
  CHECK(c.format_accumulator[0] == 0);
  CHECK(std::isinf(c.format_accumulator[1]));
  CHECK(c.float_accumulator[1] == 0);
}
