// ops/mx_linear.hpp: each product quantises its operands in 32-element blocks along the inner
// dimension (checked bit for bit against mx_quantize + mx_gemm written out) and stays close to
// the float product (MXFP8: a relative error of a few percent).
#include <mixprec/ops/mx_linear.hpp>

#include <catch2/catch.hpp>

#include <vector>

#include "ops_reference.hpp"
#include "quantised_linear_checks.hpp"

using namespace mixprec;
using namespace ops_test;

TEST_CASE("mx_linear and its backward are mx_quantize + mx_gemm along the inner dimensions", "[ops][mx]") {
  const std::size_t batch = 40, in = 70, out = 33;
  const matrix x = random_matrix(dtype::float32, batch, in, 301), w = random_matrix(dtype::float32, out, in, 302, 0.2f);
  const matrix bias = random_matrix(dtype::float32, 1, out, 303),
               dy = random_matrix(dtype::float32, batch, out, 304, 1e-2f);

  const matrix y = ops::mx_linear<float8_e4m3fn>(x, w, bias);
  const std::vector<float> xf = floats_of(x), wt = floats_of(w, true);
  std::vector<float> expected(batch * out);
  for (std::size_t i = 0; i < batch; ++i) {
    for (std::size_t j = 0; j < out; ++j) expected[i * out + j] = bias.value(0, j);
  }
  mx_gemm(1.0f, mx_quantize<float8_e4m3fn>(xf.data(), batch, in, in, mx_axis::rows),
          mx_quantize<float8_e4m3fn>(wt.data(), in, out, out, mx_axis::columns), 1.0f, expected.data(), out);
  CHECK(same_floats(y, expected));

  const ops::linear_grads g = ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(dy, x, w, bias);
  const std::vector<float> dyf = floats_of(dy), dyt = floats_of(dy, true), wf = floats_of(w);
  std::vector<float> dx(batch * in), dw(out * in);
  mx_gemm(1.0f, mx_quantize<float8_e5m2>(dyf.data(), batch, out, out, mx_axis::rows),
          mx_quantize<float8_e4m3fn>(wf.data(), out, in, in, mx_axis::columns), 0.0f, dx.data(), in);
  mx_gemm(1.0f, mx_quantize<float8_e5m2>(dyt.data(), out, batch, batch, mx_axis::rows),
          mx_quantize<float8_e4m3fn>(xf.data(), batch, in, in, mx_axis::columns), 0.0f, dw.data(), in);
  CHECK(same_floats(g.input, dx));
  CHECK(same_floats(g.weight, dw));
  // Close to the float products: e4m3 keeps 4 significant bits, e5m2 3.
  check_near_float_linear(y, g, x, w, bias, dy, 0.05, 0.1);
}

TEST_CASE("mx_linear checks shapes", "[ops][mx]") {
  const matrix x(dtype::float32, 2, 3), w(dtype::float32, 4, 3);
  CHECK_THROWS_AS(ops::mx_linear<float8_e4m3fn>(x, matrix(dtype::float32, 4, 2)), invalid_argument);
  CHECK_THROWS_AS(ops::mx_linear<float8_e4m3fn>(x, w, matrix(dtype::float32, 1, 3)), invalid_argument);
  CHECK_THROWS_AS((ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(matrix(dtype::float32, 2, 3), x, w)),
                  invalid_argument);
}

TEST_CASE("mx_linear with 32 x 32 weight tiles: the forward and the backward see the same quantised weight",
          "[ops][mx]") {
  const std::size_t batch = 24, in = 70, out = 45;  // partial tiles on both of the weight's axes
  const matrix x = random_matrix(dtype::float32, batch, in, 311), w = random_matrix(dtype::float32, out, in, 312, 0.2f);
  const matrix dy = random_matrix(dtype::float32, batch, out, 314, 1e-2f);
  ops::mx_linear_options tiles;
  tiles.weight_scales = mx_scale_sharing::tile;

  const std::vector<float> xf = floats_of(x), wf = floats_of(w), dyf = floats_of(dy);
  const auto w_rows =
      mx_quantize<float8_e4m3fn>(wf.data(), out, in, in, mx_axis::rows, mx_scale_rule::ocp, mx_scale_sharing::tile);
  const auto w_columns =
      mx_quantize<float8_e4m3fn>(wf.data(), out, in, in, mx_axis::columns, mx_scale_rule::ocp, mx_scale_sharing::tile);
  std::size_t differing = 0, differing_by_blocks = 0;
  const auto w_rows_blocks = mx_quantize<float8_e4m3fn>(wf.data(), out, in, in, mx_axis::rows);
  const auto w_columns_blocks = mx_quantize<float8_e4m3fn>(wf.data(), out, in, in, mx_axis::columns);
  for (std::size_t r = 0; r < out; ++r) {
    for (std::size_t c = 0; c < in; ++c) {
      differing += w_rows.value(r, c) != w_columns.value(r, c);
      differing_by_blocks += w_rows_blocks.value(r, c) != w_columns_blocks.value(r, c);
    }
  }
  CHECK(differing == 0);           // one scale per tile: the same values along either axis
  CHECK(differing_by_blocks > 0);  // per 32-element block they differ (the test could fail)

  // The layer: the forward's weight operand and the backward's dx operand are the tiled ones.
  const matrix y = ops::mx_linear<float8_e4m3fn>(x, w, matrix_view(), tiles);
  std::vector<float> expected(batch * out);
  mx_gemm(transpose::no, transpose::yes, 1.0f, mx_quantize<float8_e4m3fn>(xf.data(), batch, in, in, mx_axis::rows),
          w_rows, 0.0f, expected.data(), out);
  CHECK(same_floats(y, expected));
  const ops::linear_grads g = ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(dy, x, w, matrix_view(), tiles);
  std::vector<float> dx(batch * in);
  mx_gemm(1.0f, mx_quantize<float8_e5m2>(dyf.data(), batch, out, out, mx_axis::rows), w_columns, 0.0f, dx.data(), in);
  CHECK(same_floats(g.input, dx));
  // dW's operands are the activations' and gradients' blocks, as without tiles.
  const ops::linear_grads plain = ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(dy, x, w);
  CHECK(same_floats(g.weight, floats_of(plain.weight)));
}
