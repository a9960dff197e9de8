// ops/fp8_linear.hpp: fp8 layers under delayed scaling quantise each operand with its tensor's
// scale (HYBRID: e4m3 forward, e5m2 gradients), multiply the codes exactly and sum in float,
// record the amaxes, and after update() use TE's next scales.
#include <mixprec/ops/fp8_linear.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "ops_reference.hpp"

using namespace mixprec;
using namespace ops_test;

namespace {

// x's elements quantised with a scale into T and back: float(convert<T>(x · scale)) · scale_inv.
template <class T>
std::vector<long double> fake_quantized(const matrix& x, float scale, float scale_inv) {
  std::vector<long double> values;
  for (std::size_t i = 0; i < x.rows(); ++i) {
    for (std::size_t j = 0; j < x.cols(); ++j) {
      const T q = convert<T>(x.value(i, j) * scale, rounding::nearest_even, overflow::saturate);
      values.push_back(static_cast<long double>(static_cast<float>(q)) * scale_inv);
    }
  }
  return values;
}

// |got - Σ a·b (+ bias)| <= (K + 2) u Σ|a·b| + one float code of the result: gemm's float sum.
void check_product(const matrix& got, const std::vector<long double>& a, bool a_transposed, std::size_t a_cols,
                   const std::vector<long double>& b, bool b_transposed, std::size_t b_cols, std::size_t depth,
                   const matrix* bias) {
  for (std::size_t i = 0; i < got.rows(); ++i) {
    for (std::size_t j = 0; j < got.cols(); ++j) {
      long double exact = bias != nullptr ? bias->value(0, j) : 0.0L, magnitude = std::abs(exact);
      for (std::size_t k = 0; k < depth; ++k) {
        const long double p = (a_transposed ? a[k * a_cols + i] : a[i * a_cols + k]) *
                              (b_transposed ? b[j * b_cols + k] : b[k * b_cols + j]);
        exact += p;
        magnitude += std::abs(p);
      }
      const long double bound =
          static_cast<long double>(depth + 2) * 0x1p-24L * magnitude + 0x1p-23L * std::abs(exact) + 1e-30L;
      CHECK(std::abs(static_cast<long double>(got.value(i, j)) - exact) <= bound);
    }
  }
}

}  // namespace

TEST_CASE("fp8_linear forward and backward: quantised operands, exact products, float sums", "[ops][fp8]") {
  ops::fp8_training fp8(delayed_scaling{}, 2);
  const matrix x = random_matrix(dtype::float32, 6, 40, 201, 2.0f), w = random_matrix(dtype::float32, 9, 40, 202, 0.1f);
  const matrix bias = random_matrix(dtype::float32, 1, 9, 203), dy = random_matrix(dtype::float32, 6, 9, 204, 1e-3f);
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    const float sx = fp8.forward().scale(2), sw = fp8.forward().scale(3), sdy = fp8.backward().scale(1);
    const matrix y = ops::fp8_linear(x, w, bias, fp8, 1);
    REQUIRE(y.type() == dtype::float32);
    const auto xq = fake_quantized<float8_e4m3fn>(x, sx, fp8.forward().scale_inv(2));
    const auto wq = fake_quantized<float8_e4m3fn>(w, sw, fp8.forward().scale_inv(3));
    check_product(y, xq, false, 40, wq, true, 40, 40, &bias);
    const ops::linear_grads g = ops::fp8_linear_backward(dy, x, w, bias, fp8, 1);
    const auto dyq = fake_quantized<float8_e5m2>(dy, sdy, fp8.backward().scale_inv(1));  // HYBRID: e5m2
    check_product(g.input, dyq, false, 9, wq, false, 40, 9, nullptr);
    check_product(g.weight, dyq, true, 9, xq, false, 40, 6, nullptr);
    for (std::size_t j = 0; j < 9; ++j) {
      long double column = 0;
      for (std::size_t i = 0; i < 6; ++i) column += dy.value(i, j);
      CHECK(codes_apart(dtype::float32, g.bias.value(0, j), column) <= 1);
    }
    // The amaxes this step saw, and the next scales by TE's rule (margin 0): fp8_max / amax.
    float amax_x = 0, amax_dy = 0;
    for (std::size_t k = 0; k < x.size(); ++k) amax_x = std::max(amax_x, std::abs(x.data<float>()[k]));
    for (std::size_t k = 0; k < dy.size(); ++k) amax_dy = std::max(amax_dy, std::abs(dy.data<float>()[k]));
    CHECK(fp8.forward().amax_history(2)[0] == amax_x);
    CHECK(fp8.backward().amax_history(1)[0] == amax_dy);
    fp8.update();
    CHECK(fp8.forward().scale(2) == 448.0f / amax_x);
    CHECK(fp8.backward().scale(1) == 57344.0f / amax_dy);
    CHECK(fp8.forward().scale(0) == 1.0f);  // layer 0 saw no data: TE keeps its scale
  }
}

TEST_CASE("fp8_linear checks its layer index and shapes", "[ops][fp8]") {
  ops::fp8_training fp8(delayed_scaling{}, 1);
  const matrix x(dtype::float32, 2, 3), w(dtype::float32, 4, 3), bias(dtype::float32, 1, 4);
  CHECK_THROWS_WITH(ops::fp8_linear(x, w, bias, fp8, 1), Catch::Contains("layer 1 out of range"));
  CHECK_THROWS_AS(ops::fp8_linear(x, matrix(dtype::float32, 4, 2), bias, fp8, 0), invalid_argument);
  CHECK_THROWS_AS(ops::fp8_linear(x, w, matrix(dtype::float32, 1, 3), fp8, 0), invalid_argument);
  CHECK_THROWS_AS(ops::fp8_linear_backward(matrix(dtype::float32, 2, 3), x, w, bias, fp8, 0), invalid_argument);
}

TEST_CASE("a weight with a precision override takes its layer out of fp8", "[ops][fp8]") {
  // Megatron-LM's first and last layers in bf16: fp8_linear on an overridden weight is
  // ops::linear in the override's dtype, and the layer's fp8 tensors see nothing.
  ops::fp8_training fp8(delayed_scaling{}, 2);
  const matrix x = random_matrix(dtype::float32, 6, 40, 211, 2.0f), dy = random_matrix(dtype::float32, 6, 9, 214);
  parameter w(random_matrix(dtype::float32, 9, 40, 212, 0.1f), "fc1.weight"),
      bias(random_matrix(dtype::float32, 1, 9, 213), "fc1.bias");
  w.set_precision_override(dtype::bfloat16);
  const matrix y = ops::fp8_linear(x, w, bias, fp8, 1);
  const ops::linear_grads g = ops::fp8_linear_backward(dy, x, w, bias, fp8, 1);
  matrix y_bf16;
  ops::linear_grads g_bf16;
  {
    autocast_scope<bfloat16> bf16;
    const parameter copy_w(w.value()), plain_bias(bias.value());  // no override: the scope decides
    y_bf16 = ops::linear(x, copy_w, plain_bias);
    g_bf16 = ops::linear_backward(dy, x, copy_w, plain_bias);
  }
  REQUIRE(y.type() == dtype::bfloat16);
  CHECK(std::memcmp(y.raw_data(), y_bf16.raw_data(), y.bytes()) == 0);
  CHECK(std::memcmp(g.input.raw_data(), g_bf16.input.raw_data(), g.input.bytes()) == 0);
  CHECK(std::memcmp(g.weight.raw_data(), g_bf16.weight.raw_data(), g.weight.bytes()) == 0);
  CHECK(g.weight.type() == dtype::float32);  // the gradient of a float32 weight, bf16 products widened
  for (std::size_t t = 0; t < 4; ++t) CHECK(fp8.forward().amax_history(t)[0] == 0.0f);
  CHECK(fp8.backward().amax_history(1)[0] == 0.0f);
  // Without the override the same call is fp8.
  w.set_precision_override(std::nullopt);
  CHECK(ops::fp8_linear(x, w, bias, fp8, 1).type() == dtype::float32);
  CHECK(fp8.forward().amax_history(2)[0] > 0.0f);
}
