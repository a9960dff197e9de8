// ops/fp8_block_linear.hpp: each product quantises its operands in fp8 blocks along the inner
// dimension, 1×128 for activations and gradients and 128×128 for the weight (checked bit for bit
// against fp8_block_quantize + fp8_block_gemm written out), and stays close to the float product.
#include <mixprec/ops/fp8_block_linear.hpp>

#include <catch2/catch.hpp>

#include <vector>

#include "ops_reference.hpp"
#include "quantised_linear_checks.hpp"

using namespace mixprec;
using namespace ops_test;
namespace bs = mixprec::blockscale;

namespace {

template <class T>
bs::fp8_block_matrix<T> quantized(const std::vector<float>& v, std::size_t rows, std::size_t cols,
                                  bs::fp8_block_kind kind, bs::fp8_block_rule rule,
                                  const block_stochastic_rounding& sr = {}) {
  bs::fp8_block_options o;
  o.kind = kind;
  o.rule = rule;
  o.stochastic = sr;
  return bs::fp8_block_quantize<T>(v.data(), rows, cols, cols, o);
}

}  // namespace

TEST_CASE("fp8_block_linear and its backward are fp8_block_quantize + fp8_block_gemm along the inner dimensions",
          "[ops][fp8_block]") {
  // in = 200 and batch = 150 cross a 128 boundary, so that two K chunks and edge blocks take part.
  const std::size_t batch = 150, in = 200, out = 130;
  const matrix x = random_matrix(dtype::float32, batch, in, 401), w = random_matrix(dtype::float32, out, in, 402, 0.1f);
  const matrix bias = random_matrix(dtype::float32, 1, out, 403),
               dy = random_matrix(dtype::float32, batch, out, 404, 1e-3f);
  const auto row = bs::fp8_block_kind::row_1x128, tile = bs::fp8_block_kind::tile_128x128;
  for (const bs::fp8_block_rule rule : {bs::fp8_block_rule::transformer_engine, bs::fp8_block_rule::deepseek_v3}) {
    INFO("rule " << static_cast<int>(rule));
    ops::fp8_block_linear_options o;
    o.rule = rule;
    const matrix y = ops::fp8_block_linear(x, w, bias, o);
    const std::vector<float> xf = floats_of(x), xt = floats_of(x, true), wf = floats_of(w), wt = floats_of(w, true);
    std::vector<float> expected(batch * out);
    bs::fp8_block_gemm(quantized<float8_e4m3fn>(xf, batch, in, row, rule),
                       quantized<float8_e4m3fn>(wf, out, in, tile, rule), expected.data(), out);
    for (std::size_t i = 0; i < batch; ++i) {
      for (std::size_t j = 0; j < out; ++j) expected[i * out + j] += bias.value(0, j);
    }
    CHECK(same_floats(y, expected));

    const ops::linear_grads g = ops::fp8_block_linear_backward(dy, x, w, bias, o);
    const std::vector<float> dyf = floats_of(dy), dyt = floats_of(dy, true);
    std::vector<float> dx(batch * in), dw(out * in);
    bs::fp8_block_gemm(quantized<float8_e4m3fn>(dyf, batch, out, row, rule),
                       quantized<float8_e4m3fn>(wt, in, out, tile, rule), dx.data(), in);
    bs::fp8_block_gemm(quantized<float8_e4m3fn>(dyt, out, batch, row, rule),
                       quantized<float8_e4m3fn>(xt, in, batch, row, rule), dw.data(), in);
    CHECK(same_floats(g.input, dx));
    CHECK(same_floats(g.weight, dw));
    // Close to the float products: e4m3 keeps 4 significant bits.
    check_near_float_linear(y, g, x, w, bias, dy, 0.05, 0.05);
  }
}

TEST_CASE("fp8_block_linear: wᵀ's 128×128 tiles hold w's codes and scales, transposed", "[ops][fp8_block]") {
  const std::size_t out = 130, in = 200;
  const matrix w = random_matrix(dtype::float32, out, in, 405, 0.1f);
  const std::vector<float> wf = floats_of(w), wt = floats_of(w, true);
  const auto a =
      quantized<float8_e4m3fn>(wf, out, in, bs::fp8_block_kind::tile_128x128, bs::fp8_block_rule::transformer_engine);
  const auto b =
      quantized<float8_e4m3fn>(wt, in, out, bs::fp8_block_kind::tile_128x128, bs::fp8_block_rule::transformer_engine);
  std::size_t differ = 0;
  for (std::size_t r = 0; r < out; ++r) {
    for (std::size_t c = 0; c < in; ++c) {
      differ += a.element(r, c).bits() != b.element(c, r).bits();
      differ += a.scale_inv_at(r, c) != b.scale_inv_at(c, r);
    }
  }
  CHECK(differ == 0);
}

TEST_CASE("fp8_block_linear_backward rounds the gradient stochastically when asked, two streams", "[ops][fp8_block]") {
  const std::size_t batch = 64, in = 96, out = 48;
  const matrix x = random_matrix(dtype::float32, batch, in, 406), w = random_matrix(dtype::float32, out, in, 407, 0.1f);
  const matrix dy = random_matrix(dtype::float32, batch, out, 408, 1e-3f);
  ops::fp8_block_linear_options o;
  o.gradient_rounding.enabled = true;
  o.gradient_rounding.seed = 99;
  o.gradient_rounding.tensor_id = 4;
  o.gradient_rounding.step = 17;
  o.gradient_rounding.random_bits = 8;
  const ops::linear_grads g = ops::fp8_block_linear_backward(dy, x, w, matrix_view(), o);
  block_stochastic_rounding transposed = o.gradient_rounding;
  transposed.tensor_id = 5;
  const auto row = bs::fp8_block_kind::row_1x128, tile = bs::fp8_block_kind::tile_128x128;
  const auto rule = bs::fp8_block_rule::transformer_engine;
  const std::vector<float> dyf = floats_of(dy), dyt = floats_of(dy, true), wt = floats_of(w, true),
                           xt = floats_of(x, true);
  std::vector<float> dx(batch * in), dw(out * in);
  bs::fp8_block_gemm(quantized<float8_e4m3fn>(dyf, batch, out, row, rule, o.gradient_rounding),
                     quantized<float8_e4m3fn>(wt, in, out, tile, rule), dx.data(), in);
  bs::fp8_block_gemm(quantized<float8_e4m3fn>(dyt, out, batch, row, rule, transposed),
                     quantized<float8_e4m3fn>(xt, in, batch, row, rule), dw.data(), in);
  CHECK(same_floats(g.input, dx));
  CHECK(same_floats(g.weight, dw));
  CHECK(g.bias.empty());
  const ops::linear_grads nearest = ops::fp8_block_linear_backward(dy, x, w);
  CHECK(relative_error(g.input, nearest.input) > 0);
  CHECK(relative_error(g.input, ops::linear_backward(dy, x, w).input) < 0.1);
}

TEST_CASE("fp8_block_linear checks shapes and options", "[ops][fp8_block]") {
  const matrix x(dtype::float32, 2, 3), w(dtype::float32, 4, 3);
  CHECK_THROWS_AS(ops::fp8_block_linear(x, matrix(dtype::float32, 4, 2)), invalid_argument);
  CHECK_THROWS_AS(ops::fp8_block_linear(x, w, matrix(dtype::float32, 1, 3)), invalid_argument);
  CHECK_THROWS_AS(ops::fp8_block_linear_backward(matrix(dtype::float32, 2, 3), x, w), invalid_argument);
  ops::fp8_block_linear_options o;
  o.gradient_rounding.enabled = true;
  o.gradient_rounding.random_bits = 4;
  CHECK_THROWS_WITH(ops::fp8_block_linear_backward(matrix(dtype::float32, 2, 4), x, w, matrix_view(), o),
                    Catch::Contains("random_bits is 4; allowed: 8, 16 or 32"));
  // bfloat16 operands are read exactly; an empty batch gives empty results.
  const matrix y = ops::fp8_block_linear(matrix(dtype::bfloat16, 0, 3), w);
  CHECK(y.rows() == 0);
  CHECK(y.cols() == 4);
}
