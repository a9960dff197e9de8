// scaling/unscale.hpp: the fused unscale gives g * float(1.0 / double(scale)) bit for bit (float,
// and bfloat16/float16 rounded back), for every length, alignment and thread count; found_inf
// is right wherever the inf/NaN is (first, last, inside the vector tail, the 1000th of 1000
// arrays) and with zero-length arrays; Eigen matrices, maps and blocks unscale in place.
#include <mixprec/convert.hpp>
#include <mixprec/scaling/unscale.hpp>
#include <mixprec/types.hpp>

#include <Eigen/Core>
#include <catch2/catch.hpp>

#include "float_gradients.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace mixprec;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float quiet_nan = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST_CASE("inverse_scale is the double reciprocal rounded once to float", "[unscale]") {
  for (const float s : test_scales) CHECK(bits_of(inverse_scale(s)) == bits_of(static_cast<float>(1.0 / double(s))));
  CHECK(inverse_scale(0x1p-149f) == inf);  // 2^149 is beyond float
}

TEST_CASE("float unscale is bit-exact against g * float(1.0 / double(scale)) at every length", "[unscale]") {
  for (const float s : test_scales) {
    const float inv = inverse_scale(s);
    for (std::size_t n : {0u, 1u, 3u, 15u, 16u, 17u, 63u, 64u, 65u, 127u, 128u, 129u, 1000u, 4099u}) {
      for (std::size_t offset : {0u, 1u, 3u}) {  // misaligned starts
        std::vector<float> g = finite_gradients(n + offset, static_cast<std::uint32_t>(n * 31 + offset));
        const std::vector<float> before = g;
        REQUIRE(unscale_and_check(g.data() + offset, n, inv));
        for (std::size_t i = 0; i < n + offset; ++i) {
          const float expected = i < offset ? before[i] : before[i] * inv;
          if (bits_of(g[i]) != bits_of(expected)) {
            FAIL("scale " << s << " n " << n << " offset " << offset << " index " << i);
          }
        }
      }
    }
  }
}

TEST_CASE("bfloat16 and float16 unscale multiplies in float and rounds back in the chosen mode", "[unscale]") {
  std::mt19937 generator(7);
  for (const rounding r : {rounding::nearest_even, rounding::toward_zero, rounding::upward, rounding::to_odd}) {
    for (const float s : {65536.f, 3.f, 0.25f, 1000.1f}) {
      const float inv = inverse_scale(s);
      std::vector<bfloat16> b(70000);
      std::vector<float16> h(70000);
      for (std::size_t i = 0; i < b.size(); ++i) {  // every finite code, and random ones
        b[i] = bfloat16::from_bits(static_cast<std::uint16_t>(i < 65536 ? i : generator()));
        h[i] = float16::from_bits(static_cast<std::uint16_t>(i < 65536 ? i : generator()));
        if (!std::isfinite(static_cast<float>(b[i]))) b[i] = bfloat16(1.f);
        if (!std::isfinite(static_cast<float>(h[i]))) h[i] = float16(-2.f);
      }
      const auto b0 = b;
      const auto h0 = h;
      unscale_options options;
      options.gradient_rounding = r;
      REQUIRE(unscale_and_check(b.data(), b.size(), inv, options));
      REQUIRE(unscale_and_check(h.data(), h.size(), inv, options));
      for (std::size_t i = 0; i < b.size(); ++i) {
        REQUIRE(b[i].bits() == convert<bfloat16>(static_cast<float>(b0[i]) * inv, r).bits());
        REQUIRE(h[i].bits() == convert<float16>(static_cast<float>(h0[i]) * inv, r).bits());
      }
    }
  }
}

TEST_CASE("an inverse scale of exactly 1 only checks: nothing is written, NaN payloads stay", "[unscale]") {
  std::vector<float> g = {1.f, -0.f, 3.f};
  std::uint32_t signalling = 0x7F80'0001u;
  float snan;
  std::memcpy(&snan, &signalling, 4);
  g.push_back(snan);
  CHECK_FALSE(unscale_and_check(g.data(), g.size(), 1.0f));
  CHECK(bits_of(g[3]) == signalling);
  CHECK(bits_of(g[1]) == bits_of(-0.f));
}

TEST_CASE("found_inf is right for inf or NaN at the first, last and vector-tail positions", "[unscale]") {
  for (const float bad : {inf, -inf, quiet_nan, -quiet_nan}) {
    for (std::size_t n : {1u, 5u, 64u, 65u, 131u, 1024u, 1027u}) {
      for (std::size_t where : {std::size_t{0}, n - 1, n / 2, (n / 64) * 64 + (n % 64 ? (n % 64) / 2 : 0)}) {
        if (where >= n) continue;
        std::vector<float> g(n, 2.f);
        g[where] = bad;
        CHECK_FALSE(unscale_and_check(g.data(), n, 0.5f));
        for (std::size_t i = 0; i < n; ++i) {
          if (i != where) REQUIRE(g[i] == 1.f);
        }
      }
      std::vector<bfloat16> b(n, bfloat16(2.f));
      b[n - 1] = bfloat16(bad);
      CHECK_FALSE(unscale_and_check(b.data(), n, 0.5f));
      std::vector<float16> h(n, float16(2.f));
      h[0] = float16(bad);
      CHECK_FALSE(unscale_and_check(h.data(), n, 0.5f));
    }
  }
  // The largest finite values are finite; unscaling by a small inverse scale never flags.
  std::vector<float> edge = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                             std::numeric_limits<float>::denorm_min()};
  CHECK(unscale_and_check(edge.data(), edge.size(), 0.5f));
}

TEST_CASE("many arrays: the inf in the 1000th of 1000 arrays is found; zero-length arrays are fine", "[unscale]") {
  std::mt19937 generator(11);
  std::vector<std::vector<float>> storage(1000);
  std::vector<gradient_view> views;
  for (std::size_t a = 0; a < storage.size(); ++a) {
    storage[a].assign(a % 7 == 3 ? 0 : 1 + generator() % 300, 4.f);  // some arrays are empty
    views.emplace_back(storage[a].data(), storage[a].size());
  }
  CHECK(unscale_and_check(views.data(), views.size(), 0.25f));
  for (const auto& s : storage) {
    for (const float x : s) REQUIRE(x == 1.f);
  }
  storage.back().back() = quiet_nan;
  CHECK_FALSE(unscale_and_check(views.data(), views.size(), 1.f));
  CHECK(unscale_and_check(views.data(), 0, 0.5f));  // no arrays
  gradient_view empty(static_cast<float*>(nullptr), 0);
  CHECK(unscale_and_check(&empty, 1, 0.5f));
}

TEST_CASE("mixed element types in one list each get their own rule", "[unscale]") {
  std::vector<float> f(100, 8.f);
  std::vector<bfloat16> b(33, bfloat16(8.f));
  std::vector<float16> h(7, float16(8.f));
  const std::vector<gradient_view> views = {{f.data(), f.size()}, {b.data(), b.size()}, {h.data(), h.size()}};
  CHECK(unscale_and_check(views.data(), views.size(), 0.125f));
  CHECK(f[99] == 1.f);
  CHECK(static_cast<float>(b[32]) == 1.f);
  CHECK(static_cast<float>(h[6]) == 1.f);
}

TEST_CASE("the result does not depend on the thread count", "[unscale]") {
  const std::size_t n = 3 * unscale_elements_per_thread + 12345;
  std::vector<float> a = finite_gradients(n, 3), b = a, c = a;
  std::vector<float> small = finite_gradients(777, 4);
  const std::vector<gradient_view> va = {{a.data(), 1000}, {small.data(), small.size()}, {a.data() + 1000, n - 1000}};
  unscale_options one, four;
  four.threads = 4;
  CHECK(unscale_and_check(b.data(), n, 0.3f, one));
  CHECK(unscale_and_check(c.data(), n, 0.3f, four));
  CHECK(std::memcmp(b.data(), c.data(), n * sizeof(float)) == 0);
  c[n - 3] = inf;  // in the last thread's share
  CHECK_FALSE(unscale_and_check(c.data(), n, 1.f, four));
  four.threads = 0;  // one per hardware thread
  CHECK(unscale_and_check(va.data(), va.size(), 0.3f, four));
  CHECK(std::memcmp(a.data(), b.data(), n * sizeof(float)) == 0);
}

TEST_CASE("bad arguments are clear errors", "[unscale]") {
  CHECK_THROWS_AS(unscale_and_check(static_cast<float*>(nullptr), 3, 1.f), invalid_argument);
  gradient_view bad(static_cast<float*>(nullptr), 5);
  CHECK_THROWS_WITH(unscale_and_check(&bad, 1, 1.f), Catch::Contains("array 0 of 1 is a null pointer with size 5"));
  CHECK_THROWS_AS(unscale_and_check(static_cast<const gradient_view*>(nullptr), 2, 1.f), invalid_argument);
}

TEST_CASE("Eigen matrices, maps and blocks unscale in place", "[unscale][eigen]") {
  Eigen::MatrixXf m = Eigen::MatrixXf::Constant(37, 11, 4.f);
  std::vector<gradient_view> views = gradient_views_of(m);
  REQUIRE(views.size() == 1);
  CHECK(unscale_and_check(views.data(), views.size(), 0.5f));
  CHECK((m.array() == 2.f).all());

  auto block = m.block(3, 2, 10, 5);  // column-major block: 5 columns of 10 contiguous floats
  views = gradient_views_of(block);
  REQUIRE(views.size() == 5);
  CHECK(unscale_and_check(views.data(), views.size(), 0.5f));
  CHECK(m(3, 2) == 1.f);
  CHECK(m(12, 6) == 1.f);
  CHECK(m(2, 2) == 2.f);
  CHECK(m(13, 6) == 2.f);
  CHECK(m(3, 7) == 2.f);

  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r(4, 6);
  r.setConstant(3.f);
  r(3, 5) = quiet_nan;
  views = gradient_views_of(r);
  CHECK_FALSE(unscale_and_check(views.data(), views.size(), 1.f));

  std::vector<float> raw(12, 8.f);
  Eigen::Map<Eigen::VectorXf> map(raw.data(), 12);
  views = gradient_views_of(map);
  CHECK(unscale_and_check(views.data(), views.size(), 0.125f));
  CHECK(raw[11] == 1.f);

  Eigen::Map<Eigen::VectorXf, 0, Eigen::InnerStride<2>> strided(raw.data(), 6);
  CHECK_THROWS_WITH(gradient_views_of(strided), Catch::Contains("inner stride 2"));
}
