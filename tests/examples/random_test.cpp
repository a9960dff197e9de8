#include "common/random.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

using mixprec_example::reproducible_random;

TEST_CASE("reproducible_random is SplitMix64: the published first outputs for seed 0") {
  // S. Vigna's splitmix64.c with x = 0.
  reproducible_random random(0);
  CHECK(random.next() == 0xE220A8397B1DCDAFu);
  CHECK(random.next() == 0x6E789E6AA1B965F4u);
  CHECK(random.next() == 0x06C45D188009454Fu);
}

TEST_CASE("uniform draws lie in [0, 1) and average one half") {
  reproducible_random random(7);
  double sum = 0;
  const int count = 100000;
  for (int i = 0; i < count; ++i) {
    const double u = random.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
  }
  // The mean of 1e5 uniforms has standard deviation 0.29 / sqrt(1e5) = 9e-4: 5 of them.
  CHECK(std::fabs(sum / count - 0.5) < 5e-3);
}

TEST_CASE("normal draws have mean 0 and variance 1") {
  reproducible_random random(11);
  const int count = 200000;
  double sum = 0, sum_of_squares = 0;
  int beyond_two_sigma = 0;
  for (int i = 0; i < count; ++i) {
    const double z = random.normal();
    REQUIRE(std::isfinite(z));
    sum += z;
    sum_of_squares += z * z;
    beyond_two_sigma += std::fabs(z) > 2 ? 1 : 0;
  }
  CHECK(std::fabs(sum / count) < 0.012);                 // 5 standard errors (1 / sqrt(2e5) = 2.2e-3)
  CHECK(std::fabs(sum_of_squares / count - 1) < 0.016);  // 5 standard errors (sqrt(2 / 2e5) = 3.2e-3)
  // P(|Z| > 2) = 0.0455 for a Gaussian.
  CHECK(std::fabs(static_cast<double>(beyond_two_sigma) / count - 0.0455) < 0.003);
}

TEST_CASE("below(n) covers [0, n) evenly") {
  reproducible_random random(3);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) {
    const std::uint64_t k = random.below(6);
    REQUIRE(k < 6);
    ++counts[k];
  }
  for (const int c : counts) CHECK(std::abs(c - 10000) < 500);  // 5 standard deviations (91 each)
  CHECK(random.below(1) == 0);
}

TEST_CASE("shuffle gives a permutation that depends only on the seed") {
  std::vector<int> a(1000), b(1000), c(1000);
  std::iota(a.begin(), a.end(), 0);
  b = a;
  c = a;
  reproducible_random(42).shuffle(a);
  reproducible_random(42).shuffle(b);
  reproducible_random(43).shuffle(c);
  CHECK(a == b);
  CHECK(a != c);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(sorted == identity);
  CHECK(a != identity);
}
