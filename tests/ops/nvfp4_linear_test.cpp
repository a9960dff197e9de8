// ops/nvfp4_linear.hpp: each product quantises its operands in NVFP4 blocks along the inner
// dimension with TE's roles (x and dy 1×16, w 16×16, the wgrad copies Hadamard-transformed, dy
// rounded stochastically), checked bit for bit against nvfp4_quantize + nvfp4_gemm written out,
// and stays near the float product (e2m1 keeps 2 significant bits).
#include <mixprec/ops/nvfp4_linear.hpp>

#include <catch2/catch.hpp>

#include <vector>

#include "ops_reference.hpp"
#include "quantised_linear_checks.hpp"

using namespace mixprec;
using namespace ops_test;
namespace bs = mixprec::blockscale;

namespace {

// The rows × cols matrix v with zero rows appended up to `rows_to`.
std::vector<float> padded(const std::vector<float>& v, std::size_t rows, std::size_t cols, std::size_t rows_to) {
  std::vector<float> out(rows_to * cols, 0.0f);
  std::copy(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rows * cols), out.begin());
  return out;
}

ops::nvfp4_linear_options options(std::uint32_t step) {
  ops::nvfp4_linear_options o;
  o.gradient_rounding.seed = 0xABCD;
  o.gradient_rounding.tensor_id = 2;
  o.gradient_rounding.step = step;
  o.gradient_rounding.random_bits = 8;
  return o;
}

}  // namespace

TEST_CASE("nvfp4_linear and its backward are nvfp4_quantize + nvfp4_gemm with TE's roles", "[ops][nvfp4]") {
  // batch 40 is not a multiple of 16: the wgrad copies are quantised from 48 rows, 8 of them zero.
  const std::size_t batch = 40, in = 70, out = 33;
  const matrix x = random_matrix(dtype::float32, batch, in, 501), w = random_matrix(dtype::float32, out, in, 502, 0.2f);
  const matrix bias = random_matrix(dtype::float32, 1, out, 503),
               dy = random_matrix(dtype::float32, batch, out, 504, 1e-2f);
  for (const bool hadamard : {true, false}) {
    for (const bs::nvfp4_rule rule : {bs::nvfp4_rule::transformer_engine, bs::nvfp4_rule::torchao}) {
      INFO("hadamard " << hadamard << " rule " << static_cast<int>(rule));
      ops::nvfp4_linear_options o = options(7);
      o.hadamard = hadamard;
      o.rule = rule;
      const matrix y = ops::nvfp4_linear(x, w, bias, o);
      const std::vector<float> xf = floats_of(x), wf = floats_of(w), dyf = floats_of(dy);
      bs::nvfp4_options q;
      q.rule = rule;
      const bs::nvfp4_tensor xq = bs::nvfp4_quantize(xf.data(), batch, in, in, q);
      q.tile = bs::nvfp4_tile::square_16;
      q.columnwise = true;
      const bs::nvfp4_tensor wq = bs::nvfp4_quantize(wf.data(), out, in, in, q);
      std::vector<float> expected(batch * out);
      for (std::size_t i = 0; i < batch; ++i) {
        for (std::size_t j = 0; j < out; ++j) expected[i * out + j] = bias.value(0, j);
      }
      bs::nvfp4_gemm(1.0f, *xq.rowwise, wq.rowwise->transposed(), 1.0f, expected.data(), out);
      CHECK(same_floats(y, expected));

      const ops::linear_grads g = ops::nvfp4_linear_backward(dy, x, w, bias, o);
      bs::nvfp4_options qd;
      qd.rule = rule;
      qd.stochastic = o.gradient_rounding;
      const bs::nvfp4_tensor dyq = bs::nvfp4_quantize(dyf.data(), batch, out, out, qd);
      std::vector<float> dx(batch * in);
      bs::nvfp4_gemm(1.0f, *dyq.rowwise, *wq.columnwise, 0.0f, dx.data(), in);
      CHECK(same_floats(g.input, dx));
      const std::size_t rows = hadamard ? 48 : batch;
      const std::vector<float> dyp = padded(dyf, batch, out, rows), xp = padded(xf, batch, in, rows);
      qd.rowwise = false;
      qd.columnwise = true;
      qd.columnwise_rht.enabled = hadamard;
      const bs::nvfp4_tensor dyc = bs::nvfp4_quantize(dyp.data(), rows, out, out, qd);
      qd.stochastic = {};
      const bs::nvfp4_tensor xc = bs::nvfp4_quantize(xp.data(), rows, in, in, qd);
      CHECK(xc.columnwise->hadamard_transformed() == hadamard);
      std::vector<float> dw(out * in);
      bs::nvfp4_gemm(1.0f, dyc.columnwise->transposed(), *xc.columnwise, 0.0f, dw.data(), in);
      CHECK(same_floats(g.weight, dw));
      // Near the float products: e2m1 has 2 significant bits (a relative error of up to 1/6 per
      // element), averaged over the sums.
      check_near_float_linear(y, g, x, w, bias, dy, 0.15, 0.25);
    }
  }
}

TEST_CASE("nvfp4_linear_backward draws a new stream each step and none without gradient_rounding", "[ops][nvfp4]") {
  const std::size_t batch = 32, in = 48, out = 16;
  const matrix x = random_matrix(dtype::float32, batch, in, 505), w = random_matrix(dtype::float32, out, in, 506, 0.2f);
  const matrix dy = random_matrix(dtype::float32, batch, out, 507, 1e-2f);
  const ops::linear_grads a = ops::nvfp4_linear_backward(dy, x, w, matrix_view(), options(1));
  const ops::linear_grads again = ops::nvfp4_linear_backward(dy, x, w, matrix_view(), options(1));
  const ops::linear_grads b = ops::nvfp4_linear_backward(dy, x, w, matrix_view(), options(2));
  CHECK(relative_error(a.input, again.input) == 0);
  CHECK(relative_error(a.weight, again.weight) == 0);
  CHECK(relative_error(a.input, b.input) > 0);
  CHECK(relative_error(a.weight, b.weight) > 0);
  ops::nvfp4_linear_options nearest = options(1);
  nearest.gradient_rounding.enabled = false;
  const ops::linear_grads n1 = ops::nvfp4_linear_backward(dy, x, w, matrix_view(), nearest);
  nearest.gradient_rounding.step = 2;
  const ops::linear_grads n2 = ops::nvfp4_linear_backward(dy, x, w, matrix_view(), nearest);
  CHECK(relative_error(n1.input, n2.input) == 0);
  CHECK(relative_error(n1.input, a.input) > 0);
}

TEST_CASE("nvfp4_linear checks shapes and options", "[ops][nvfp4]") {
  const matrix x(dtype::float32, 2, 3), w(dtype::float32, 4, 3);
  CHECK_THROWS_AS(ops::nvfp4_linear(x, matrix(dtype::float32, 4, 2)), invalid_argument);
  CHECK_THROWS_AS(ops::nvfp4_linear(x, w, matrix(dtype::float32, 1, 3)), invalid_argument);
  CHECK_THROWS_AS(ops::nvfp4_linear_backward(matrix(dtype::float32, 2, 3), x, w), invalid_argument);
  ops::nvfp4_linear_options o;
  o.gradient_rounding.random_bits = 4;
  CHECK_THROWS_WITH(ops::nvfp4_linear_backward(matrix(dtype::float32, 2, 4), x, w, matrix_view(), o),
                    Catch::Contains("nvfp4_linear_backward: random_bits is 4; allowed: 8, 16 or 32"));
  // bfloat16 operands are read exactly; an empty batch gives empty results.
  const matrix y = ops::nvfp4_linear(matrix(dtype::bfloat16, 0, 3), w);
  CHECK(y.rows() == 0);
  CHECK(y.cols() == 4);
  const ops::linear_grads g = ops::nvfp4_linear_backward(matrix(dtype::float32, 0, 4), matrix(dtype::float32, 0, 3), w);
  CHECK(g.weight.rows() == 4);
  CHECK(g.weight.cols() == 3);
}
