// bulk/amax.hpp: amax_n is max |x| on every path and thread count, NaN wherever a NaN is.
#include <mixprec/bulk/amax.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "simd_paths.hpp"

using namespace mixprec;

TEST_CASE("amax_n is the largest magnitude on every path, for every length and alignment", "[bulk][amax]") {
  std::mt19937 random(9);
  std::vector<float> x(5000);
  for (float& v : x) {
    std::uint32_t bits = static_cast<std::uint32_t>(random());
    if ((bits & 0x7F80'0000u) == 0x7F80'0000u) bits &= 0xBFFF'FFFFu;  // finite
    std::memcpy(&v, &bits, 4);
  }
  on_every_path_and_thread_count([&] {
    for (std::size_t offset : {0u, 1u, 3u}) {
      for (std::size_t n : {0u, 1u, 7u, 16u, 33u, 64u, 65u, 1000u, 4990u}) {
        float expected = 0.0f;
        for (std::size_t i = 0; i < n; ++i) expected = std::max(expected, std::fabs(x[offset + i]));
        REQUIRE(amax_n(x.data() + offset, n) == expected);
      }
    }
  });
}

TEST_CASE("amax_n returns NaN when any element is NaN, inf when one is infinite, at any position", "[bulk][amax]") {
  const std::size_t n = (std::size_t{1} << 21) + 37;  // large enough for two threads
  std::vector<float> x(n, -1.5f);
  on_every_path_and_thread_count([&] {
    for (std::size_t at : {std::size_t{0}, std::size_t{15}, n / 2 + 3, n - 1}) {
      x[at] = -std::numeric_limits<float>::infinity();
      REQUIRE(amax_n(x.data(), n) == std::numeric_limits<float>::infinity());
      x[at] = -std::numeric_limits<float>::quiet_NaN();
      const float amax = amax_n(x.data(), n);
      REQUIRE(std::isnan(amax));
      REQUIRE(!std::signbit(amax));
      x[at] = -1.5f;
    }
    REQUIRE(amax_n(x.data(), n) == 1.5f);
  });
  CHECK_THROWS_AS(amax_n(nullptr, 3), invalid_argument);
}
