// scaling/fp8/delayed_scaler.hpp: the quantise/dequantise convention, the element type of each
// pass, amax recording, the amax reduction hook, options checking and errors.
#include <mixprec/bulk/quantize.hpp>
#include <mixprec/scaling/fp8/delayed_scaler.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "random_floats.hpp"

namespace {

using namespace mixprec;

}  // namespace

TEST_CASE("quantize is q = convert(x * scale) saturating, with amax recorded and scale_inv = 1 / scale",
          "[delayed_scaler]") {
  delayed_scaler forward(delayed_scaling{}, fp8_pass::forward, 2);
  std::vector<float> x = gaussian(1000, 3.0f, 1);
  x[17] = 1e30f;  // far beyond e4m3's range once scaled: saturates
  x[18] = -std::numeric_limits<float>::infinity();
  std::vector<float8_e4m3fn> q(x.size());
  fp8_quantized first = forward.quantize(1, x.data(), x.size(), q.data());
  CHECK(first.scale == 1.0f);
  CHECK(first.amax == std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < x.size(); ++i) {
    REQUIRE(q[i].bits() == convert<float8_e4m3fn>(x[i] * 1.0f, rounding::nearest_even, overflow::saturate).bits());
  }
  CHECK(forward.amax_history(1)[0] == std::numeric_limits<float>::infinity());
  CHECK(forward.amax_history(0)[0] == 0.0f);

  // A second step with finite data: the scale comes from the history (max algorithm).
  forward.update();
  CHECK(forward.scale(1) == 1.0f);  // the window's amax is inf: the previous scale stays
  x[17] = 10.0f;
  x[18] = -20.0f;
  fp8_quantized second = forward.quantize(0, x.data(), x.size(), q.data());
  CHECK(second.amax == 20.0f);
  forward.update();
  CHECK(forward.scale(0) == 448.0f / 20.0f);
  CHECK(forward.scale_inv(0) == 1.0f / (448.0f / 20.0f));
  fp8_quantized third = forward.quantize(0, x.data(), x.size(), q.data());
  CHECK(third.scale == forward.scale(0));
  CHECK(third.scale_inv == forward.scale_inv(0));
  std::vector<float> y(x.size());
  dequantize_n(q.data(), q.size(), y.data(), third.scale_inv);
  for (std::size_t i = 0; i < x.size(); ++i) {
    REQUIRE(y[i] == static_cast<float>(q[i]) * third.scale_inv);
    // e4m3's relative spacing is 2^-3: half of it, plus the subnormal spacing near zero.
    REQUIRE(std::fabs(y[i] - x[i]) <= std::fabs(x[i]) * 0.0625f + 0x1p-10f * third.scale_inv);
  }
}

TEST_CASE("hybrid stores the forward pass in e4m3 and the backward pass in e5m2; the wrong type is refused",
          "[delayed_scaler]") {
  delayed_scaler forward(delayed_scaling{}, fp8_pass::forward, 1);
  delayed_scaler backward(delayed_scaling{}, fp8_pass::backward, 1);
  CHECK(forward.element() == fp8_element::e4m3);
  CHECK(backward.element() == fp8_element::e5m2);
  float x[4] = {1, 2, 3, 60000};
  float8_e5m2 q5[4];
  float8_e4m3fn q4[4];
  CHECK_THROWS_AS(forward.quantize(0, x, 4, q5), invalid_argument);
  CHECK_THROWS_WITH(forward.quantize(0, x, 4, q5), Catch::Contains("float8_e4m3fn") && Catch::Contains("forward"));
  CHECK_THROWS_AS(backward.quantize(0, x, 4, q4), invalid_argument);
  backward.quantize(0, x, 4, q5);
  backward.update();
  CHECK(backward.scale(0) == 57344.0f / 60000.0f);
  delayed_scaling e4m3_only;
  e4m3_only.format = fp8_format::e4m3;
  CHECK(delayed_scaler(e4m3_only, fp8_pass::backward, 1).element() == fp8_element::e4m3);
}

TEST_CASE("record_amax keeps the largest magnitude; NaN wins", "[delayed_scaler]") {
  delayed_scaler s(delayed_scaling{}, fp8_pass::forward, 1);
  s.record_amax(0, 3.0f);
  s.record_amax(0, -5.0f);  // a magnitude
  s.record_amax(0, 4.0f);
  CHECK(s.amax_history(0)[0] == 5.0f);
  s.record_amax(0, std::numeric_limits<float>::infinity());
  s.record_amax(0, -std::numeric_limits<float>::quiet_NaN());
  s.record_amax(0, 1.0f);
  CHECK(std::isnan(s.amax_history(0)[0]));
  CHECK(!std::signbit(s.amax_history(0)[0]));
}

TEST_CASE("update(reduce) feeds the reduced amaxes to the rule, and a throwing reduction changes nothing",
          "[delayed_scaler]") {
  delayed_scaler s(delayed_scaling{}, fp8_pass::forward, 3);
  s.record_amax(0, 2.0f);
  s.record_amax(2, 1.0f);
  std::size_t seen = 0;
  s.update([&](float* amax, std::size_t count) {
    seen = count;
    CHECK(amax[0] == 2.0f);
    CHECK(amax[1] == 0.0f);
    amax[0] = 4.0f;  // another process saw more
    amax[1] = 7.0f;  // this tensor ran only elsewhere
  });
  CHECK(seen == 3);
  CHECK(s.scale(0) == 112.0f);
  CHECK(s.scale(1) == 64.0f);
  CHECK(s.scale(2) == 448.0f);
  CHECK(s.iteration() == 1);
  s.record_amax(0, 1.0f);
  const std::vector<std::uint8_t> before = s.save_state();
  CHECK_THROWS_AS(s.update([](float*, std::size_t) { throw std::runtime_error("collective failed"); }),
                  std::runtime_error);
  CHECK(s.save_state() == before);
}

TEST_CASE("an amax function that throws leaves the scaler as it was", "[delayed_scaler]") {
  delayed_scaling recipe;
  recipe.amax_compute_algo = amax_algorithm::custom;
  int calls = 0;
  recipe.amax_function = [&calls](const float* history, std::size_t) {
    if (++calls == 2) throw std::runtime_error("second tensor");
    return history[0];
  };
  delayed_scaler s(recipe, fp8_pass::forward, 3);
  s.record_amax(0, 2.0f);
  const std::vector<std::uint8_t> before = s.save_state();
  CHECK_THROWS_AS(s.update(), std::runtime_error);
  CHECK(s.save_state() == before);
  s.update();  // calls 3 to 5
  CHECK(s.scale(0) == 224.0f);
}

TEST_CASE("options and indices are checked with messages that name the value and the limit", "[delayed_scaler]") {
  delayed_scaling bad;
  bad.margin = 7;  // 448 × 2^-7 = 3.5 < 4
  CHECK_THROWS_WITH(delayed_scaler(bad, fp8_pass::forward, 1),
                    Catch::Contains("margin is 7") && Catch::Contains("3.5"));
  bad.format = fp8_format::e5m2;  // 57344 × 2^-7 = 448: allowed for e5m2 alone
  CHECK_NOTHROW(delayed_scaler(bad, fp8_pass::forward, 1));
  bad.margin = -101;
  CHECK_THROWS_WITH(delayed_scaler(bad, fp8_pass::forward, 1), Catch::Contains("-101") && Catch::Contains("-100"));
  bad.margin = 1 << 30;
  CHECK_THROWS_WITH(delayed_scaler(bad, fp8_pass::forward, 1), Catch::Contains("outside"));
  delayed_scaling history;
  history.amax_history_len = 0;
  CHECK_THROWS_WITH(delayed_scaler(history, fp8_pass::forward, 1), Catch::Contains("amax_history_len is 0"));
  history.amax_history_len = (1 << 16) + 1;
  CHECK_THROWS_AS(delayed_scaler(history, fp8_pass::forward, 1), invalid_argument);
  delayed_scaling custom;
  custom.amax_compute_algo = amax_algorithm::custom;
  CHECK_THROWS_WITH(delayed_scaler(custom, fp8_pass::forward, 1), Catch::Contains("amax_function is empty"));
  CHECK_THROWS_AS(delayed_scaler(delayed_scaling{}, fp8_pass::forward, std::size_t{1} << 20), invalid_argument);
  delayed_scaler s(delayed_scaling{}, fp8_pass::forward, 2);
  CHECK_THROWS_WITH(s.scale(2), Catch::Contains("tensor 2 out of range") && Catch::Contains("2"));
  CHECK_THROWS_AS(s.record_amax(5, 1.0f), invalid_argument);
}

TEST_CASE("most_recent ignores older amaxes; the default algorithm takes the window's max", "[delayed_scaler]") {
  delayed_scaling recent;
  recent.amax_compute_algo = amax_algorithm::most_recent;
  delayed_scaler a(recent, fp8_pass::forward, 1), b(delayed_scaling{}, fp8_pass::forward, 1);
  for (delayed_scaler* s : {&a, &b}) {
    s->record_amax(0, 8.0f);
    s->update();
    s->record_amax(0, 2.0f);
    s->update();
  }
  CHECK(a.scale(0) == 224.0f);
  CHECK(b.scale(0) == 56.0f);
}
