// scaling/fp8/current_scaling.hpp: the scale comes from the tensor's own amax by
// compute_scale_from_amax, and the data is quantised with it exactly as quantize_n does;
// quantize_measured adds TE's statistics, as the separate passes measure them.
#include <mixprec/bulk/quantize.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/scaling/fp8/current_scaling.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace mixprec;

template <class T>
void check_quantisation(const current_scaling& recipe, fp8_pass pass, const std::vector<float>& x) {
  std::vector<T> q(x.size()), expected(x.size());
  const fp8_quantized result = recipe.quantize(pass, x.data(), x.size(), q.data());
  float amax = 0.0f;
  bool nan = false;
  for (const float v : x) {
    nan = nan || std::isnan(v);
    amax = std::max(amax, std::fabs(v));
  }
  if (nan) {
    CHECK(std::isnan(result.amax));
  } else {
    CHECK(result.amax == amax);
  }
  const float fp8_max_value = static_cast<float>(std::numeric_limits<T>::max());
  CHECK(result.scale == compute_scale_from_amax(result.amax, fp8_max_value, recipe.power_2_scale, recipe.amax_epsilon,
                                                std::numeric_limits<float>::max()));
  CHECK(result.scale_inv == 1.0f / result.scale);
  quantize_n(x.data(), x.size(), expected.data(), result.scale, rounding::nearest_even, overflow::saturate);
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(q[i].bits() == expected[i].bits());

  // quantize_measured: the same codes and scales, with the statistics of the tensor and of the
  // quantisation as the separate passes measure them.
  std::vector<T> m(x.size());
  const quantized_with_statistics measured = recipe.quantize_measured(pass, x.data(), x.size(), m.data());
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(m[i].bits() == q[i].bits());
  CHECK(std::memcmp(&measured.quantized.amax, &result.amax, sizeof(float)) == 0);
  CHECK(measured.quantized.scale == result.scale);
  CHECK(measured.quantized.scale_inv == result.scale_inv);
  quantization_report separate;
  separate.tensor = statistics_of(x.data(), x.size());
  separate.quantization = quantization_statistics_of(x.data(), x.size(), q.data(), result.scale_inv);
  CHECK(to_json(quantization_report{measured.tensor, measured.quantization}) == to_json(separate));
}

}  // namespace

TEST_CASE("current scaling quantises with compute_scale_from_amax of the tensor's own amax", "[current_scaling]") {
  std::mt19937 random(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(3001);
  for (float& v : x) v = normal(random) * 1e-3f;
  for (const bool pow2 : {false, true}) {
    for (const float epsilon : {0.0f, 1.0f}) {
      current_scaling recipe;
      recipe.power_2_scale = pow2;
      recipe.amax_epsilon = epsilon;
      check_quantisation<float8_e4m3fn>(recipe, fp8_pass::forward, x);
      check_quantisation<float8_e5m2>(recipe, fp8_pass::backward, x);
    }
  }
  current_scaling recipe;
  std::vector<float> zeros(100, 0.0f);
  check_quantisation<float8_e4m3fn>(recipe, fp8_pass::forward, zeros);  // scale 1
  std::vector<float> tiny(100, 1e-44f);                                 // 448 / amax overflows: FLT_MAX
  check_quantisation<float8_e4m3fn>(recipe, fp8_pass::forward, tiny);
  x[7] = std::numeric_limits<float>::quiet_NaN();  // scale 1; mixprec reports the NaN (TE's fmaxf drops it)
  check_quantisation<float8_e4m3fn>(recipe, fp8_pass::forward, x);
  x[7] = std::numeric_limits<float>::infinity();
  check_quantisation<float8_e5m2>(recipe, fp8_pass::backward, x);
}

TEST_CASE("current scaling checks its options and the element type of the pass", "[current_scaling]") {
  current_scaling recipe;
  float x[3] = {1, 2, 3};
  float8_e5m2 q[3];
  CHECK_THROWS_WITH(recipe.quantize(fp8_pass::forward, x, 3, q), Catch::Contains("stores float8_e4m3fn"));
  CHECK_THROWS_WITH(recipe.quantize_measured(fp8_pass::forward, x, 3, q),
                    "current_scaling::quantize_measured<float8_e5m2>: the forward pass of format hybrid stores "
                    "float8_e4m3fn");
  recipe.amax_epsilon = -1.0f;
  float8_e4m3fn q4[3];
  CHECK_THROWS_WITH(recipe.quantize(fp8_pass::forward, x, 3, q4), Catch::Contains("amax_epsilon is -1"));
  CHECK(recipe.scale_for(fp8_pass::backward, 57344.0f) == 1.0f);
}
