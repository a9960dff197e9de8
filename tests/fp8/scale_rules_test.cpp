// scaling/fp8/scale_rules.hpp against plain transcriptions of Transformer Engine's rules, on
// special amaxes (0, -0, inf, NaN, subnormals, values near FLT_MIN, amaxes small enough that
// fp8_max / amax overflows, FLT_MAX) and on random float bit patterns; plus hand-worked values.
#include <mixprec/scaling/fp8/scale_rules.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "float_bits.hpp"

namespace {

using namespace mixprec;

// transformer_engine/common/recipe/recipe_common.cuh, compute_scale_from_amax, transcribed
// (__fdiv_rn is IEEE division, as '/' on the host).
float te_compute_scale_from_amax(float amax, float max_fp8, bool force_pow_2_scales, float epsilon,
                                 float value_for_inf) {
  if (amax < epsilon) amax = epsilon;
  float scale = 1.f;
  if (std::isinf(amax) || amax == 0.f || std::isnan(amax)) return scale;
  scale = max_fp8 / amax;
  if (std::isinf(scale)) scale = value_for_inf;
  if (force_pow_2_scales) scale = float_from_bits(bits_of(scale) & 0xFF800000u);
  return scale;
}

// delayed_scaling.cu, kernel_bulk, "Update scale", transcribed.
float te_delayed_scale(float amax, float previous_scale, float scaled_max) {
  float scale;
  if (std::isfinite(amax) && amax > 0) {
    scale = scaled_max / amax;
  } else {
    scale = previous_scale;
  }
  if (std::isinf(scale)) scale = std::numeric_limits<float>::max();
  return scale;
}

// transformer_engine/pytorch, _default_sf_compute, transcribed on scalars.
float te_default_sf_compute(float amax, float scale, float fp8_max, int margin) {
  float sf = (fp8_max / amax) / std::ldexp(1.0f, margin);
  sf = amax > 0.0f ? sf : scale;
  sf = std::isfinite(amax) ? sf : scale;
  sf = std::isinf(sf) ? std::numeric_limits<float>::max() : sf;
  return sf;
}

std::vector<float> special_amaxes() {
  const float big = std::numeric_limits<float>::max(), tiny = std::numeric_limits<float>::min();
  std::vector<float> v = {0.0f,
                          -0.0f,
                          std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::denorm_min(),
                          tiny,
                          tiny * 0.5f,
                          tiny * 3.0f,
                          448.0f / big,
                          std::nextafter(448.0f / big, 0.0f),
                          std::nextafter(448.0f / big, 1.0f),
                          57344.0f / big,
                          std::nextafter(57344.0f / big, 0.0f),
                          1e-30f,
                          1.0f,
                          448.0f,
                          57344.0f,
                          1e30f,
                          big,
                          -1.0f};
  return v;
}

}  // namespace

TEST_CASE("compute_scale_from_amax is recipe_common.cuh's rule on special and random amaxes", "[scale_rules]") {
  std::mt19937 random(7);
  std::vector<float> amaxes = special_amaxes();
  for (int i = 0; i < 200000; ++i) amaxes.push_back(float_from_bits(static_cast<std::uint32_t>(random())));
  std::size_t checked = 0;
  for (const float amax : amaxes) {
    for (const float max_fp8 : {448.0f, 57344.0f}) {
      for (const bool pow2 : {false, true}) {
        for (const float epsilon : {0.0f, 1e-12f, std::numeric_limits<float>::min(), 1.0f}) {
          const float expected =
              te_compute_scale_from_amax(amax, max_fp8, pow2, epsilon, std::numeric_limits<float>::max());
          const float got = compute_scale_from_amax(amax, max_fp8, pow2, epsilon, std::numeric_limits<float>::max());
          REQUIRE(bits_of(got) == bits_of(expected));
          ++checked;
        }
      }
    }
  }
  CHECK(checked == amaxes.size() * 16);
}

TEST_CASE("compute_scale_from_amax on worked values", "[scale_rules]") {
  const float big = std::numeric_limits<float>::max();
  CHECK(compute_scale_from_amax(448.0f, 448.0f, false, 0.0f, big) == 1.0f);
  CHECK(compute_scale_from_amax(3.0f, 448.0f, false, 0.0f, big) == 448.0f / 3.0f);
  CHECK(compute_scale_from_amax(3.0f, 448.0f, true, 0.0f, big) == 128.0f);  // 149.33 rounded down
  CHECK(compute_scale_from_amax(0.0f, 448.0f, false, 0.0f, big) == 1.0f);
  CHECK(compute_scale_from_amax(0.0f, 448.0f, false, 2.0f, big) == 224.0f);  // raised to epsilon
  CHECK(compute_scale_from_amax(std::numeric_limits<float>::quiet_NaN(), 448.0f, false, 2.0f, big) == 1.0f);
  CHECK(compute_scale_from_amax(1e-45f, 448.0f, false, 0.0f, big) == big);      // quotient overflows
  CHECK(compute_scale_from_amax(1e-45f, 448.0f, true, 0.0f, big) == 0x1p127f);  // FLT_MAX rounded down
  CHECK(compute_scale_from_amax(INFINITY, 448.0f, false, 0.0f, big) == 1.0f);
}

TEST_CASE("delayed_scale_from_amax is kernel_bulk's rule; the unfused rule is _default_sf_compute's", "[scale_rules]") {
  std::mt19937 random(11);
  std::vector<float> amaxes = special_amaxes();
  for (int i = 0; i < 200000; ++i) amaxes.push_back(float_from_bits(static_cast<std::uint32_t>(random())));
  for (const float amax : amaxes) {
    for (const float previous : {1.0f, 0.25f, std::numeric_limits<float>::max()}) {
      for (const int margin : {0, 1, 3, 6, -2, -100}) {
        for (const float fp8_max : {448.0f, 57344.0f}) {
          const float scaled_max = delayed_scaled_max(fp8_max, margin);
          REQUIRE(scaled_max == fp8_max * std::pow(2.f, static_cast<float>(-margin)));  // TE's host expression
          REQUIRE(bits_of(delayed_scale_from_amax(amax, previous, scaled_max)) ==
                  bits_of(te_delayed_scale(amax, previous, scaled_max)));
          REQUIRE(bits_of(delayed_scale_from_amax_unfused(amax, previous, fp8_max, std::ldexp(1.0f, margin))) ==
                  bits_of(te_default_sf_compute(amax, previous, fp8_max, margin)));
        }
      }
    }
  }
}

TEST_CASE("delayed scaling keeps the previous scale for 0, inf and NaN amaxes and gives FLT_MAX for tiny ones",
          "[scale_rules]") {
  const float big = std::numeric_limits<float>::max();
  for (const float amax : {0.0f, -0.0f, INFINITY, std::numeric_limits<float>::quiet_NaN(), -1.0f}) {
    CHECK(delayed_scale_from_amax(amax, 0.5f, 448.0f) == 0.5f);
    CHECK(delayed_scale_from_amax_unfused(amax, 0.5f, 448.0f, 1.0f) == 0.5f);
  }
  CHECK(delayed_scale_from_amax(1e-40f, 0.5f, 448.0f) == big);
  CHECK(delayed_scale_from_amax(224.0f, 0.5f, 448.0f) == 2.0f);
  // The two rules part where the quotient overflows before the margin brings it back: the fused
  // rule divides fp8_max × 2^-margin, the unfused one divides by 2^margin afterwards.
  const float amax = 448.0f / big * 0.75f;  // 448 / amax overflows, 224 / amax does not
  CHECK(delayed_scale_from_amax(amax, 0.5f, delayed_scaled_max(448.0f, 1)) < big);
  CHECK(delayed_scale_from_amax_unfused(amax, 0.5f, 448.0f, 2.0f) == big);
}
