// blockscale/rowwise.hpp and torchao_recipes.hpp: torchao's amax_to_scale on known answers worked
// out from the formula (float64 quotient, 1e-12 floor, float32 log2 / floor / exp2), axis-wise and
// tensor-wise quantisation bit for bit against a transcription of tensor_to_amax, amax_to_scale
// and to_fp8_saturated, dequantisation by division, and the recipes' per-operand casts as
// Float8LinearConfig.from_recipe_name sets them.
#include <mixprec/blockscale/torchao_recipes.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "float_bits.hpp"
#include "random_floats.hpp"

namespace {

using namespace mixprec;
using namespace mixprec::blockscale;

constexpr float inf = std::numeric_limits<float>::infinity();
const float qnan = std::numeric_limits<float>::quiet_NaN();

// torchao, transcribed: amax in float (NaN wins), scale in double then float, pow2 through float32
// log2 (correctly rounded), floor and exp2, then clamp and convert.
template <class T>
std::vector<std::uint8_t> oracle_quantize(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                                          const torchao_scaling& s, std::vector<float>& scales) {
  const double fp8_max = std::is_same<T, float8_e4m3fn>::value ? 448.0 : 57344.0;
  const std::size_t lines =
      s.granularity == scaling_granularity::tensorwise ? 1 : (s.axis == scale_axis::rows ? rows : cols);
  const auto line_of = [&](std::size_t r, std::size_t c) {
    return s.granularity == scaling_granularity::tensorwise ? 0 : (s.axis == scale_axis::rows ? r : c);
  };
  std::vector<float> amax(lines, 0.0f);
  std::vector<bool> poisoned(lines, false);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const float a = std::fabs(x[r * cols + c]);
      if (std::isnan(a)) poisoned[line_of(r, c)] = true;
      amax[line_of(r, c)] = std::fmax(amax[line_of(r, c)], a);
    }
  }
  scales.assign(lines, 0.0f);
  for (std::size_t k = 0; k < lines; ++k) {
    const double a = poisoned[k] ? std::nan("") : static_cast<double>(amax[k]);
    float res = static_cast<float>(fp8_max / (std::isnan(a) ? a : std::max(a, 1e-12)));
    if (s.round_scales_to_power_of_2)
      res = std::exp2(std::floor(static_cast<float>(std::log2(static_cast<double>(res)))));
    scales[k] = res;
  }
  std::vector<std::uint8_t> codes(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      float v = x[r * cols + c] * scales[line_of(r, c)];
      if (!std::isnan(v)) v = std::min(std::max(v, static_cast<float>(-fp8_max)), static_cast<float>(fp8_max));
      codes[r * cols + c] =
          static_cast<std::uint8_t>(convert<T>(v, rounding::nearest_even, overflow::non_finite).bits());
    }
  }
  return codes;
}

}  // namespace

TEST_CASE("torchao amax_to_scale on known answers", "[blockscale][rowwise]") {
  // amax 0 (and anything below 1e-12) → float(448 / 1e-12) = 447999985582080; pow2 → 2^48.
  CHECK(torchao_scale_from_amax(0.0f, 448.0f, false) == 447999985582080.0f);
  CHECK(torchao_scale_from_amax(1e-13f, 448.0f, false) == 447999985582080.0f);
  CHECK(torchao_scale_from_amax(0.0f, 448.0f, true) == 0x1p48f);
  CHECK(torchao_scale_from_amax(0.0f, 57344.0f, false) == static_cast<float>(57344.0 / 1e-12));
  // At and around the maxima.
  CHECK(torchao_scale_from_amax(448.0f, 448.0f, false) == 1.0f);
  CHECK(torchao_scale_from_amax(449.0f, 448.0f, true) == 0.5f);
  CHECK(torchao_scale_from_amax(57344.0f, 57344.0f, true) == 1.0f);
  // The quotient is rounded once, from double: 448 / 3 to float.
  CHECK(torchao_scale_from_amax(3.0f, 448.0f, false) == static_cast<float>(448.0 / 3.0));
  // inf → 0 (pow2 keeps 0); NaN → NaN.
  CHECK(torchao_scale_from_amax(inf, 448.0f, false) == 0.0f);
  CHECK(torchao_scale_from_amax(inf, 448.0f, true) == 0.0f);
  CHECK(std::isnan(torchao_scale_from_amax(qnan, 448.0f, true)));
  // A subnormal amax is floored like 0.
  CHECK(torchao_scale_from_amax(1e-45f, 448.0f, false) == 447999985582080.0f);
}

TEST_CASE("torchao's power of two is exp2(floor(float32 log2)): just below 2^k it rounds up for |k| >= 2",
          "[blockscale][rowwise]") {
  CHECK(torchao_power_of_two(16.0f) == 16.0f);
  CHECK(torchao_power_of_two(std::nextafter(32.0f, 0.0f)) == 16.0f * 2.0f);  // log2 = 5 − 8.6e-8 → 5
  CHECK(torchao_power_of_two(std::nextafter(16.0f, 0.0f)) == 16.0f);         // log2 = 4 − 8.6e-8 rounds to 4
  CHECK(torchao_power_of_two(std::nextafter(2.0f, 0.0f)) == 1.0f);           // 1 − 8.6e-8 is a float's distance
  CHECK(torchao_power_of_two(std::nextafter(1.0f, 0.0f)) == 0.5f);
  CHECK(torchao_power_of_two(std::nextafter(16.0f, 32.0f)) == 16.0f);
  CHECK(torchao_power_of_two(3.0f) == 2.0f);
  CHECK(torchao_power_of_two(0.75f) == 0.5f);
  // Elsewhere the exponent's power of two 2^e; 2^(e+1) only within 2^-18 below it.
  for (float s = 0x1p-120f; s < 0x1p60f; s *= 1.013f) {
    const int e = std::ilogb(s);
    const float p = torchao_power_of_two(s);
    INFO("scale " << s);
    REQUIRE((p == std::ldexp(1.0f, e) || (p == std::ldexp(1.0f, e + 1) && s > std::ldexp(1.0f - 0x1p-18f, e + 1))));
  }
}

TEST_CASE("torchao axis-wise and tensor-wise quantisation equal the transcription bit for bit",
          "[blockscale][rowwise]") {
  const std::size_t rows = 130, cols = 257;
  std::vector<float> x = gaussian(rows * cols, 1.0f, 21);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) x[r * cols + c] = std::ldexp(x[r * cols + c], static_cast<int>(c % 30) - 15);
  }
  x[2 * cols + 7] = qnan;
  x[5 * cols + 9] = -inf;
  for (std::size_t c = 0; c < cols; ++c) x[9 * cols + c] = 0.0f;  // a zero row
  for (auto granularity : {scaling_granularity::tensorwise, scaling_granularity::axiswise}) {
    for (auto axis : {scale_axis::rows, scale_axis::columns}) {
      for (bool pow2 : {false, true}) {
        const torchao_scaling s{granularity, axis, pow2};
        INFO(to_string(granularity) << " " << to_string(axis) << " pow2 " << pow2);
        std::vector<float> expected_scales;
        const auto expected = oracle_quantize<float8_e4m3fn>(x, rows, cols, s, expected_scales);
        std::vector<float8_e4m3fn> q(rows * cols);
        const std::vector<float> scales = torchao_quantize(x.data(), rows, cols, cols, s, q.data(), cols);
        REQUIRE(scales.size() == expected_scales.size());
        for (std::size_t k = 0; k < scales.size(); ++k) REQUIRE(bits_of(scales[k]) == bits_of(expected_scales[k]));
        for (std::size_t i = 0; i < q.size(); ++i) REQUIRE(q[i].bits() == expected[i]);
        // Dequantised by division.
        std::vector<float> out(rows * cols);
        torchao_dequantize(q.data(), rows, cols, cols, s, scales.data(), out.data(), cols);
        for (std::size_t i = 0; i < out.size(); ++i) {
          const float by_division =
              static_cast<float>(q[i]) / scales[s.granularity == scaling_granularity::tensorwise
                                                    ? 0
                                                    : (axis == scale_axis::rows ? i / cols : i % cols)];
          REQUIRE(bits_of(out[i]) == bits_of(by_division));
        }
      }
    }
  }
}

TEST_CASE("torchao row-wise special rows: NaN and inf affect only their own row", "[blockscale][rowwise]") {
  std::vector<float> x = {1.0f, 2.0f, 224.0f, qnan, 3.0f, -inf, 0.0f, 0.0f, 0.0f};
  std::vector<float8_e4m3fn> q(9);
  const auto s =
      torchao_quantize(x.data(), 3, 3, 3, {scaling_granularity::axiswise, scale_axis::rows, true}, q.data(), 3);
  CHECK(s[0] == 2.0f);  // 448 / 224
  CHECK(static_cast<float>(q[2]) == 448.0f);
  CHECK(std::isnan(s[1]));
  CHECK(std::isnan(static_cast<float>(q[4])));
  CHECK(s[2] == 0x1p48f);
  CHECK(q[8].bits() == 0);
  // The inf row: scale 0, so 0 codes and NaN for the inf.
  std::vector<float> y = {3.0f, -inf};
  std::vector<float8_e5m2> qy(2);
  const auto sy =
      torchao_quantize(y.data(), 1, 2, 2, {scaling_granularity::axiswise, scale_axis::rows, false}, qy.data(), 2);
  CHECK(sy[0] == 0.0f);
  CHECK(qy[0].bits() == 0);
  CHECK(std::isnan(static_cast<float>(qy[1])));
  // bfloat16 input reads exactly.
  std::vector<bfloat16> xb = {bfloat16(1.5f), bfloat16(-448.0f)};
  std::vector<float8_e4m3fn> qb(2);
  const auto sb = torchao_quantize(xb.data(), 1, 2, 2, {}, qb.data(), 2);
  CHECK(sb[0] == 1.0f);
  CHECK(static_cast<float>(qb[0]) == 1.5f);
}

TEST_CASE("torchao recipes give each GEMM operand torchao's cast", "[blockscale][rowwise]") {
  const auto t = linear_cast_config_for(torchao_recipe::tensorwise);
  CHECK(t.input.granularity == scaling_granularity::tensorwise);
  CHECK(t.weight.element == fp8_element::e4m3);
  CHECK(t.grad_output.element == fp8_element::e5m2);
  CHECK(t.grad_output_for_grad_weight.element == fp8_element::e5m2);
  CHECK_FALSE(t.round_scales_to_power_of_2);
  CHECK(t.fast_accum_output);
  CHECK_FALSE(t.fast_accum_grad_input);

  const auto r = linear_cast_config_for(torchao_recipe::rowwise);
  for (const operand_cast* c : {&r.input, &r.weight, &r.grad_output, &r.weight_for_grad_input,
                                &r.grad_output_for_grad_weight, &r.input_for_grad_weight}) {
    CHECK(c->granularity == scaling_granularity::axiswise);
    CHECK(c->element == fp8_element::e4m3);
    CHECK_FALSE(c->high_precision);
  }
  CHECK(r.input.axis == scale_axis::rows);                           // input, dim -1
  CHECK(r.weight.axis == scale_axis::columns);                       // weightᵀ, dim 0
  CHECK(r.grad_output.axis == scale_axis::rows);                     // grad_output, dim -1
  CHECK(r.weight_for_grad_input.axis == scale_axis::rows);           // weightᵀ, dim -1
  CHECK(r.grad_output_for_grad_weight.axis == scale_axis::columns);  // grad_output, dim 0
  CHECK(r.input_for_grad_weight.axis == scale_axis::columns);        // input, dim 0
  CHECK(r.round_scales_to_power_of_2);
  CHECK(r.scaling_of(r.input).round_scales_to_power_of_2);

  const auto g = linear_cast_config_for(torchao_recipe::rowwise_with_gw_hp);
  CHECK(g.input.granularity == scaling_granularity::axiswise);
  CHECK(g.grad_output.element == fp8_element::e4m3);
  CHECK(g.weight_for_grad_input.granularity == scaling_granularity::tensorwise);
  CHECK(g.grad_output_for_grad_weight.high_precision);
  CHECK(g.input_for_grad_weight.high_precision);
  CHECK(g.round_scales_to_power_of_2);
  for (const auto& c : {t, r, g}) CHECK_NOTHROW(c.validate());
}

TEST_CASE("torchao functions refuse bad arguments with the value and the limit", "[blockscale][rowwise]") {
  CHECK_THROWS_WITH(linear_cast_config_for(static_cast<torchao_recipe>(9)),
                    Catch::Contains("recipe is 9, not a torchao_recipe"));
  auto c = linear_cast_config_for(torchao_recipe::rowwise);
  c.weight.high_precision = true;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("incompatible operand precision for output"));
  c = linear_cast_config_for(torchao_recipe::tensorwise);
  c.grad_output_for_grad_weight.element = fp8_element::e4m3;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("grad_output is cast to float8_e5m2 and to float8_e4m3fn"));
  std::vector<float> x(4, 1.0f);
  std::vector<float8_e4m3fn> q(4);
  torchao_scaling bad{static_cast<scaling_granularity>(3)};
  CHECK_THROWS_WITH(torchao_quantize(x.data(), 2, 2, 2, bad, q.data(), 2),
                    Catch::Contains("granularity is 3, not a scaling_granularity"));
  bad = {scaling_granularity::axiswise, static_cast<scale_axis>(4)};
  CHECK_THROWS_WITH(torchao_quantize(x.data(), 2, 2, 2, bad, q.data(), 2),
                    Catch::Contains("axis is 4, not a scale_axis"));
  CHECK_THROWS_WITH(torchao_quantize(x.data(), 2, 2, 2, {}, static_cast<float8_e4m3fn*>(nullptr), 2),
                    Catch::Contains("null output pointer for 2 × 2 elements"));
  CHECK_THROWS_WITH(torchao_quantize(x.data(), 2, 2, 1, {}, q.data(), 2),
                    Catch::Contains("leading dimension 1 is smaller than the 2 columns"));
  CHECK_THROWS_WITH(torchao_dequantize(q.data(), 2, 2, 2, {}, nullptr, x.data(), 2),
                    Catch::Contains("null scales pointer for 1 scales"));
  // Empty: no scales read, nothing written.
  const auto none =
      torchao_quantize(static_cast<const float*>(nullptr), 0, 3, 3, {scaling_granularity::axiswise, scale_axis::rows},
                       static_cast<float8_e4m3fn*>(nullptr), 3);
  CHECK(none.empty());
}
