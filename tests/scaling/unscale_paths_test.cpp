// scaling/unscale.hpp on every bulk SIMD path this CPU and build have (portable, avx2, avx512,
// avx512_bf16; bulk/simd_path.hpp force_simd_path): float unscale is bit-exact against
// g * float(1.0 / double(scale)) for every length 0..300 and several misalignments, found_inf
// is right for inf and NaN at the first element, the last, inside the vector tail, and in the
// 1000th of 1000 arrays, with zero-length arrays in the list; bfloat16/float16 gradients too.
#include <mixprec/bulk/simd_path.hpp>
#include <mixprec/convert.hpp>
#include <mixprec/scaling/unscale.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace mixprec;

namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::vector<float> finite_gradients(std::size_t n, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::vector<float> out(n);
  for (auto& x : out) {
    do {
      const auto bits = static_cast<std::uint32_t>(generator());
      std::memcpy(&x, &bits, 4);
    } while (!std::isfinite(x));
  }
  return out;
}

std::vector<simd_path> available_paths() {
  std::vector<simd_path> paths;
  for (simd_path p : {simd_path::portable, simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16}) {
    if (simd_path_supported(p)) paths.push_back(p);
  }
  return paths;
}

struct path_guard {  // restores the detected path even when a check throws
  explicit path_guard(simd_path p) { force_simd_path(p); }
  ~path_guard() { reset_simd_path(); }
  path_guard(const path_guard&) = delete;
  path_guard& operator=(const path_guard&) = delete;
};

const float scales[] = {65536.f, 1.f, 0.5f, 0x1p100f, 0x1p-100f, 3.f, 1000.1f, 7.3e-12f, 1.7e38f, 1e-45f};
const float non_finite[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()};

}  // namespace

TEST_CASE("float unscale is bit-exact on every SIMD path, every length and alignment", "[unscale][simd]") {
  for (simd_path p : available_paths()) {
    path_guard guard(p);
    INFO("path " << to_string(p));
    const std::vector<float> source = finite_gradients(300 + 16, 7);
    std::size_t mismatches = 0;
    for (float scale : scales) {
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
    path_guard guard(p);
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
    path_guard guard(p);
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

TEST_CASE("bfloat16 and float16 unscale agree with the scalar rule on every SIMD path", "[unscale][simd]") {
  for (simd_path p : available_paths()) {
    path_guard guard(p);
    INFO("path " << to_string(p));
    const std::vector<float> source = finite_gradients(257, 11);
    std::size_t mismatches = 0;
    for (float scale : {65536.f, 3.f, 0x1p-20f}) {
      const float inv = inverse_scale(scale);
      std::vector<bfloat16> b;
      std::vector<float16> h;
      for (float x : source) {
        b.push_back(convert<bfloat16>(x, rounding::nearest_even));
        h.push_back(convert<float16>(x, rounding::nearest_even));
      }
      const std::vector<bfloat16> b0 = b;
      const std::vector<float16> h0 = h;
      unscale_and_check(b.data(), b.size(), inv);
      unscale_and_check(h.data(), h.size(), inv);
      for (std::size_t i = 0; i < source.size(); ++i) {
        const bfloat16 eb = convert<bfloat16>(static_cast<float>(b0[i]) * inv, rounding::nearest_even);
        const float16 eh = convert<float16>(static_cast<float>(h0[i]) * inv, rounding::nearest_even);
        const float rb = static_cast<float>(b[i]), reb = static_cast<float>(eb);
        const float rh = static_cast<float>(h[i]), reh = static_cast<float>(eh);
        if (!(bits_of(rb) == bits_of(reb) || (std::isnan(rb) && std::isnan(reb)))) ++mismatches;
        if (!(bits_of(rh) == bits_of(reh) || (std::isnan(rh) && std::isnan(reh)))) ++mismatches;
      }
    }
    CHECK(mismatches == 0);
  }
}
