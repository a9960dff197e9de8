#include "format_comparison/conversion_error.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "common/random.hpp"
#include "format_comparison/formats.hpp"

using namespace mixprec_example;

TEST_CASE("the tally leaves zeros out, counts flushes with error 1 and overflows apart") {
  error_tally tally;
  tally.add(0, 0, false);     // zero: exact everywhere, left out
  tally.add(2, 2.5, false);   // relative error 0.25
  tally.add(1e-9, 0, false);  // flushed: error 1
  tally.add(1e9, HUGE_VAL, true);
  tally.add(-4, -4, false);
  const error_summary s = tally.summary();
  CHECK(s.nonzero == 4);
  CHECK(s.max_relative == 1);
  CHECK(s.rms_relative == Approx(std::sqrt((0.25 * 0.25 + 1 + 0) / 3)));
  CHECK(s.flushed_share == 0.25);
  CHECK(s.overflow_share == 0.25);
  CHECK(error_tally().summary().nonzero == 0);
}

TEST_CASE("conversion to float16: a tie rounds to even, tiny values flush, large ones overflow") {
  const double tie = 1 + 0x1p-11;  // halfway between 1 and 1 + 2^-10: rounds to 1
  const error_summary s = conversion_error<mixprec::float16>({1.0, tie, 1e-9, 1e6, 65504, 0});
  CHECK(s.nonzero == 5);
  CHECK(s.overflow_share == Approx(0.2));
  CHECK(s.flushed_share == Approx(0.2));
  CHECK(s.max_relative == 1);
  const double tie_error = 0x1p-11 / tie;
  CHECK(s.rms_relative == Approx(std::sqrt((tie_error * tie_error + 1) / 4)));
}

TEST_CASE("normal values keep a relative error of at most half an epsilon") {
  // Gaussian values well inside the normal range: |error| <= 2^-(mantissa bits + 1) |x|.
  reproducible_random random(5);
  std::vector<double> values(20000);
  for (double& v : values) v = random.normal();
  CHECK(conversion_error<float32>(values).max_relative <= 0x1p-24);
  CHECK(conversion_error<mixprec::float16>(values).max_relative <= 0x1p-11);
  CHECK(conversion_error<mixprec::bfloat16>(values).max_relative <= 0x1p-8);
  CHECK(conversion_error<mixprec::bfloat16>(values).max_relative > 0x1p-9);  // and about that much
  CHECK(conversion_error<mixprec::bfloat16>(values).flushed_share == 0);
}

TEST_CASE("block scaling moves tiny blocks into the element format's range") {
  // 6 * 2^-20 and 2^-20 flush to zero in e2m1 (smallest value 0.5); with the block scale
  // 2^(floor(log2(6 * 2^-20)) - 2) = 2^-20 they are 6 and 1, both exact.
  const std::vector<double> tiny = {6 * 0x1p-20, 0x1p-20, -3 * 0x1p-20, 0};
  CHECK(conversion_error<mixprec::float4_e2m1fn>(tiny).flushed_share == 1);
  const error_summary scaled = block_scaled_error<mixprec::float4_e2m1fn>(tiny);
  CHECK(scaled.nonzero == 3);
  CHECK(scaled.max_relative == 0);
  CHECK(scaled.flushed_share == 0);
}

TEST_CASE("the block scale puts the block's largest value in the element's top binade") {
  // e2m1 spans 0.5 .. 6 (emax 2).  For {6, 0.5} the scale is 2^(2 - 2) = 1 and both are exact; a
  // scale twice as large would halve 0.5 to 0.25, which flushes, and half as large would clamp 12.
  const error_summary s = block_scaled_error<mixprec::float4_e2m1fn>({6, 0.5});
  CHECK(s.max_relative == 0);
  CHECK(s.flushed_share == 0);
  CHECK(block_scaled_error<mixprec::float8_e4m3fn>({448 * 0x1p-30, 0x1p-9 * 0x1p-30}).max_relative == 0);
}

TEST_CASE("block scaling clamps values above the element's max, and blocks are independent") {
  // Block 1: max 7 -> X = 2^(2 - 2) = 1; 7 clamps to 6 (error 1/7), 1 is exact.
  // Block 2 (size 2): 100 and 50 -> X = 2^(6 - 2) = 16; 100/16 = 6.25 clamps to 6 (96: error
  // 0.04), 50/16 = 3.125 rounds to 3 (48: error 0.04).
  const error_summary s = block_scaled_error<mixprec::float4_e2m1fn>({7, 1, 100, 50}, 2);
  CHECK(s.overflow_share == 0);
  CHECK(s.max_relative == Approx(1.0 / 7));
  CHECK(s.rms_relative == Approx(std::sqrt((1.0 / 49 + 0 + 0.0016 + 0.0016) / 4)));
}

TEST_CASE("the block scale stays within e8m0's range") {
  // 2^-140 would need the shared exponent -142; e8m0 stops at 2^-127, so the block's values
  // become 2^-140 / 2^-127 = 2^-13 in e4m3fn: below its smallest subnormal 2^-9, flushed.
  const error_summary s = block_scaled_error<mixprec::float8_e4m3fn>({0x1p-140});
  CHECK(s.flushed_share == 1);
  const error_summary in_range = block_scaled_error<mixprec::float8_e4m3fn>({0x1p-120});
  CHECK(in_range.max_relative == 0);
}

TEST_CASE("conversion to int4: ties to even, both ends of the range overflow, small values flush") {
  // 2.5 -> 2 (error 0.2), -3.5 -> -4 (1/7), 0.4 -> 0 (flushed), -8 exact, 7.6 -> 7 and -8.6 -> -8
  // (beyond the range: overflowed, not measured).
  const error_summary s = conversion_error<mixprec::int4>({2.5, -3.5, 0.4, -8, 7.6, -8.6});
  CHECK(s.nonzero == 6);
  CHECK(s.overflow_share == Approx(2.0 / 6));
  CHECK(s.flushed_share == Approx(1.0 / 6));
  CHECK(s.max_relative == 1);
  CHECK(s.rms_relative == Approx(std::sqrt((0.04 + 1.0 / 49 + 1 + 0) / 4)));
  CHECK(conversion_error<mixprec::int2>({-2, 1}).overflow_share == 0);
  CHECK(conversion_error<mixprec::int1>({0.25}).overflow_share == 1);  // above int1's max, 0
}

TEST_CASE("block scaling an integer puts the block's largest magnitude in [2^emax, 2^(emax+1))") {
  // int4 (emax 2): for {0.75, 0.1875} the scale is 2^(floor(log2 0.75) - 2) = 2^-3, so the values
  // are 6 and 1.5 -> 2 (ties to even): 0.1875 is stored as 0.25 (error 1/3), 0.75 exactly.
  const error_summary s = block_scaled_error<mixprec::int4>({0.75, 0.1875});
  CHECK(s.max_relative == Approx(1.0 / 3));
  CHECK(s.flushed_share == 0);
  // 7.9 * 2^-3 in a block: scale 2^(2 - 2 - 3) = 2^-3 -> 7.9 clamps to 7 (error 0.9/7.9), and a
  // negative block reaches down to -8: -7.9 * 2^-3 rounds to -8 (error 0.1/7.9).
  CHECK(block_scaled_error<mixprec::int4>({7.9 * 0x1p-3}).max_relative == Approx(0.9 / 7.9));
  CHECK(block_scaled_error<mixprec::int4>({-7.9 * 0x1p-3}).max_relative == Approx(0.1 / 7.9));
  // int2 (emax 0): {1.5, 0.4} -> scale 1, 1.5 clamps to 1, 0.4 flushes.
  const error_summary two = block_scaled_error<mixprec::int2>({1.5, 0.4});
  CHECK(two.flushed_share == 0.5);
  CHECK(two.max_relative == 1);
}
