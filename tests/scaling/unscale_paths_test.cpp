// scaling/unscale.hpp on every bulk SIMD path this CPU and build have (portable, avx2, avx512,
// avx512_bf16; bulk/simd_path.hpp force_simd_path): float unscale is bit-exact against
// g * float(1.0 / double(scale)) for every length 0..300 and several misalignments, found_inf
// is right for inf and NaN at the first element, the last, inside the vector tail, and in the
// 1000th of 1000 arrays, with zero-length arrays in the list; bfloat16/float16 gradients give the
// scalar rule's bits for every 16-bit code under every rounding mode.
#include <mixprec/bulk/simd_path.hpp>
#include <mixprec/convert.hpp>
#include <mixprec/scaling/unscale.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include "float_gradients.hpp"
#include "simd_paths.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace mixprec;

namespace {

std::vector<simd_path> available_paths() {
  std::vector<simd_path> paths;
  for (simd_path p : {simd_path::portable, simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16}) {
    if (simd_path_supported(p)) paths.push_back(p);
  }
  return paths;
}

const float non_finite[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()};

}  // namespace

TEST_CASE("float unscale is bit-exact on every SIMD path, every length and alignment", "[unscale][simd]") {
  for (simd_path p : available_paths()) {
    simd_path_guard guard(p);
    INFO("path " << to_string(p));
    const std::vector<float> source = finite_gradients(300 + 16, 7);
    std::size_t mismatches = 0;
    for (float scale : test_scales) {
      const float inv = inverse_scale(scale);
      for (std::size_t offset : {0u, 1u, 3u, 8u}) {
        for (std::size_t n = 0; n <= 300; ++n) {
          std::vector<float> g(source.begin() + static_cast<std::ptrdiff_t>(offset),
                               source.begin() + static_cast<std::ptrdiff_t>(offset + n));
          if (!unscale_and_check(g.data(), g.size(), inv)) ++mismatches;
          for (std::size_t i = 0; i < n; ++i) {
            const float expected = source[offset + i] * inv;
            if (bits_of(g[i]) != bits_of(expected)) ++mismatches;
          }
        }
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("found_inf on every SIMD path: first, last, vector tail, every position", "[unscale][simd]") {
  for (simd_path p : available_paths()) {
    simd_path_guard guard(p);
    INFO("path " << to_string(p));
    std::size_t wrong = 0;
    for (std::size_t n : {1u, 15u, 16u, 17u, 63u, 64u, 65u, 127u, 129u, 1000u, 1031u}) {
      for (float bad : non_finite) {
        for (std::size_t at = 0; at < n; at += (n > 70 && at > 3 && at + 70 < n) ? 61 : 1) {
          std::vector<float> g(n, 3.f);
          g[at] = bad;
          if (unscale_and_check(g.data(), n, 0.25f)) ++wrong;           // multiplying
          if (unscale_and_check(g.data(), n, 1.0f)) ++wrong;            // checking only
          if (g[(at + 1) % n] != 0.75f && (at + 1) % n != at) ++wrong;  // the others were unscaled
        }
      }
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("1000 arrays on every SIMD path: the inf in the 1000th is found; zero-length arrays", "[unscale][simd]") {
  for (simd_path p : available_paths()) {
    simd_path_guard guard(p);
    INFO("path " << to_string(p));
    std::vector<std::vector<float>> arrays(1000);
    std::vector<gradient_view> views;
    for (std::size_t a = 0; a < arrays.size(); ++a) {
      arrays[a].assign(a % 7 == 3 ? 0 : (a * 37) % 101 + 1, 2.f);
      views.emplace_back(arrays[a].data(), arrays[a].size());
    }
    CHECK(unscale_and_check(views.data(), views.size(), 0.5f));
    arrays[999].back() = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(unscale_and_check(views.data(), views.size(), 0.5f));
    CHECK(arrays[998].front() == 0.5f);
    std::vector<gradient_view> empty(5, gradient_view(static_cast<float*>(nullptr), 0));
    CHECK(unscale_and_check(empty.data(), empty.size(), 0.5f));
    CHECK(unscale_and_check(static_cast<float*>(nullptr), 0, 0.5f));
  }
}

namespace {

// The scalar rule for a narrow gradient: widen exactly, multiply in float, round back once.
template <class T>
T unscaled_by_rule(T g, float inv, rounding r) {
  return convert<T>(static_cast<float>(g) * inv, r);
}

// Every 16-bit code (all NaN payloads, subnormals, both infinities) in one array, unscaled on
// every path with every rounding mode: the result must be the rule's bits, and found_inf must be
// set (the array holds infinities and NaNs); then the finite codes alone must come back finite.
template <class T>
void check_narrow_unscale_every_code() {
  std::vector<T> all, finite;
  for (std::uint32_t c = 0; c <= 0xFFFF; ++c) {
    const T x = T::from_bits(static_cast<std::uint16_t>(c));
    all.push_back(x);
    if (std::isfinite(static_cast<float>(x))) finite.push_back(x);
  }
  for (simd_path p : available_paths()) {
    simd_path_guard guard(p);
    INFO("path " << to_string(p));
    for (rounding r : {rounding::nearest_even, rounding::nearest_away, rounding::toward_zero, rounding::upward,
                       rounding::downward, rounding::to_odd}) {
      INFO("rounding " << static_cast<int>(r));
      for (float scale : {65536.f, 3.f, 0x1p-20f, 1.f}) {
        const float inv = inverse_scale(scale);
        unscale_options options;
        options.gradient_rounding = r;
        std::size_t mismatches = 0;
        // Offsets 0 and 3: the block boundaries of the kernels fall on different codes.
        for (std::size_t offset : {std::size_t{0}, std::size_t{3}}) {
          std::vector<T> g(all.begin() + static_cast<std::ptrdiff_t>(offset), all.end());
          CHECK_FALSE(unscale_and_check(g.data(), g.size(), inv, options));
          for (std::size_t i = 0; i < g.size(); ++i) {
            const T expected = inv == 1.f ? all[offset + i] : unscaled_by_rule(all[offset + i], inv, r);
            if (g[i].bits() != expected.bits()) ++mismatches;
          }
        }
        CHECK(mismatches == 0);
        std::vector<T> f = finite;
        CHECK(unscale_and_check(f.data(), f.size(), inv, options));
      }
    }
  }
}

}  // namespace

TEST_CASE("bfloat16 unscale gives the scalar rule's bits for every code, mode and path", "[unscale][simd]") {
  check_narrow_unscale_every_code<bfloat16>();
}

TEST_CASE("float16 unscale gives the scalar rule's bits for every code, mode and path", "[unscale][simd]") {
  check_narrow_unscale_every_code<float16>();
}

TEST_CASE("a narrow gradient's inf or NaN is found at the first, the last and a block-edge position",
          "[unscale][simd]") {
  for (simd_path p : available_paths()) {
    simd_path_guard guard(p);
    INFO("path " << to_string(p));
    for (std::size_t n :
         {std::size_t{1}, std::size_t{17}, std::size_t{511}, std::size_t{512}, std::size_t{513}, std::size_t{1500}}) {
      for (std::size_t at : {std::size_t{0}, n / 2, n - 1, std::min(n - 1, std::size_t{512})}) {
        for (float bad : non_finite) {
          std::vector<bfloat16> b(n, bfloat16(1.5f));
          std::vector<float16> h(n, float16(1.5f));
          b[at] = convert<bfloat16>(bad);
          h[at] = convert<float16>(bad);
          INFO("n " << n << " at " << at << " value " << bad);
          CHECK_FALSE(unscale_and_check(b.data(), n, 0.5f));
          CHECK_FALSE(unscale_and_check(h.data(), n, 0.5f));
          CHECK_FALSE(unscale_and_check(b.data(), n, 1.f));
          CHECK_FALSE(unscale_and_check(h.data(), n, 1.f));
          if (n > 1) CHECK(static_cast<float>(b[at == 0 ? n - 1 : 0]) == 0.75f);  // the others were unscaled
        }
      }
    }
  }
}

namespace {

// The amax unscale_and_check reports for one array: float(max |g|) × inv_scale, from the values
// before the call; inf or NaN as the array's worst non-finite value.
template <class T>
float expected_amax(const std::vector<T>& g, float inv_scale) {
  float largest = 0;
  bool has_inf = false, has_nan = false;
  for (const T& x : g) {
    const auto v = static_cast<float>(x);
    has_nan |= std::isnan(v);
    has_inf |= std::isinf(v);
    if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
  }
  if (has_nan) return std::numeric_limits<float>::quiet_NaN();
  if (has_inf) return std::numeric_limits<float>::infinity();
  return largest * inv_scale;
}

bool same_amax(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST_CASE("per-array amax in the fused pass on every SIMD path and thread count", "[unscale][simd][amax]") {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> d(-3000.0f, 3000.0f);
  for (simd_path p : available_paths()) {
    simd_path_guard guard(p);
    INFO("path " << to_string(p));
    for (const unsigned threads : {1u, 2u}) {
      for (const float inv_scale : {1.0f, 0.125f, 3.0f}) {
        INFO("threads " << threads << ", inv_scale " << inv_scale);
        // Arrays of every kind and length class: empty, a vector tail, misaligned, large enough to
        // span two threads' shares, bf16 and fp16, one holding an inf, one a NaN and an inf.
        std::vector<std::vector<float>> floats(6);
        const std::size_t float_sizes[] = {0, 13, 300, std::size_t{1} << 19, 5, 1000};
        for (std::size_t a = 0; a < floats.size(); ++a) {
          floats[a].resize(float_sizes[a]);
          for (float& x : floats[a]) x = d(rng);
        }
        floats[4][3] = std::numeric_limits<float>::infinity();
        floats[5][999] = -std::numeric_limits<float>::infinity();
        floats[5][10] = std::numeric_limits<float>::quiet_NaN();
        std::vector<bfloat16> halves(777);
        for (bfloat16& x : halves) x = bfloat16(d(rng));
        std::vector<float16> smalls(129);
        for (float16& x : smalls) x = float16(d(rng) / 8.0f);
        std::vector<float> expected;
        std::vector<gradient_view> views;
        for (std::size_t a = 0; a < floats.size(); ++a) {
          expected.push_back(expected_amax(floats[a], inv_scale));
          // misaligned by one element for the 300-element array
          views.emplace_back(floats[a].data() + (a == 2 ? 1 : 0), floats[a].size() - (a == 2 ? 1 : 0));
          if (a == 2) {
            expected.back() = expected_amax(std::vector<float>(floats[a].begin() + 1, floats[a].end()), inv_scale);
          }
        }
        expected.push_back(expected_amax(halves, inv_scale));
        views.emplace_back(halves.data(), halves.size());
        expected.push_back(expected_amax(smalls, inv_scale));
        views.emplace_back(smalls.data(), smalls.size());

        std::vector<float> amax(views.size(), -1.0f);
        unscale_options o;
        o.threads = threads;
        CHECK_FALSE(unscale_and_check(views.data(), views.size(), inv_scale, amax.data(), o));
        for (std::size_t a = 0; a < views.size(); ++a) {
          INFO("array " << a);
          CHECK(same_amax(amax[a], expected[a]));
        }
      }
    }
  }
  float* none = nullptr;
  std::vector<float> g(4, 1.0f);
  const gradient_view view(g.data(), g.size());
  CHECK_THROWS_WITH(unscale_and_check(&view, 1, 1.0f, none),
                    Catch::Contains("unscale_and_check: null amax pointer for 1 arrays"));
  CHECK(unscale_and_check(&view, 0, 1.0f, none));  // no arrays: no amax to write
}
