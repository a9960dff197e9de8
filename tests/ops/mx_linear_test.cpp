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
