// ops/activation.hpp: relu and gelu fall through (result in the input's dtype under every
// scope), and every value is the exact function rounded once (within one code: the double
// evaluation can land on the other side of a rounding boundary only by its own tiny error).
#include <mixprec/ops/activation.hpp>

#include <catch2/catch.hpp>

#include <cmath>

#include "ops_reference.hpp"

using namespace mixprec;
using namespace ops_test;

namespace {
long double gelu_exact(long double x) { return 0.5L * x * std::erfc(-x / std::sqrt(2.0L)); }
long double gelu_derivative_exact(long double x) {
  const long double pi = 3.141592653589793238462643383279502884L;
  return 0.5L * std::erfc(-x / std::sqrt(2.0L)) + x * std::exp(-0.5L * x * x) / std::sqrt(2.0L * pi);
}
}  // namespace

TEST_CASE("relu and gelu keep the input's dtype under every scope and match the exact function", "[ops]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype in : input_dtypes) {
      INFO(scope.name << ", input " << to_string(in));
      const matrix x = random_matrix(in, 7, 33, 11, 3.0f);
      const matrix r = ops::relu(x), g = ops::gelu(x);
      REQUIRE(r.type() == in);
      REQUIRE(g.type() == in);
      for (std::size_t i = 0; i < x.rows(); ++i) {
        for (std::size_t j = 0; j < x.cols(); ++j) {
          const float v = x.value(i, j);
          CHECK(r.value(i, j) == (v > 0 ? v : 0.0f));
          CHECK(codes_apart(in, g.value(i, j), gelu_exact(v)) <= 1);
        }
      }
    }
  }
}

TEST_CASE("relu keeps NaN and maps -0 and -inf to +0; gelu(NaN) is NaN", "[ops]") {
  const float values[] = {NAN, -0.0f, -INFINITY, INFINITY};
  const matrix_view x(values, 1, 4);
  const matrix r = ops::relu(x), g = ops::gelu(x);
  CHECK(std::isnan(r.value(0, 0)));
  CHECK((r.value(0, 1) == 0.0f && !std::signbit(r.value(0, 1))));
  CHECK(r.value(0, 2) == 0.0f);
  CHECK(r.value(0, 3) == INFINITY);
  CHECK(std::isnan(g.value(0, 0)));
}

TEST_CASE("the backward of relu and gelu: the gradient in the input's dtype, dy rounded to it first", "[ops]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype in : input_dtypes) {
      INFO(scope.name << ", input " << to_string(in));
      const matrix x = random_matrix(in, 5, 17, 3, 2.0f);
      const matrix dy = random_matrix(dtype::float32, 5, 17, 4);
      const matrix dr = ops::relu_backward(dy, x), dg = ops::gelu_backward(dy, x);
      REQUIRE(dr.type() == in);
      REQUIRE(dg.type() == in);
      const matrix dy_in = dy.to(in);  // autograd's cast of the gradient to the output's dtype
      for (std::size_t i = 0; i < x.rows(); ++i) {
        for (std::size_t j = 0; j < x.cols(); ++j) {
          const float v = x.value(i, j), g = dy_in.value(i, j);
          CHECK(dr.value(i, j) == (v > 0 ? g : 0.0f));
          CHECK(codes_apart(in, dg.value(i, j), g * gelu_derivative_exact(v)) <= 1);
        }
      }
    }
  }
}

TEST_CASE("backward with shapes that differ is an error naming both", "[ops]") {
  const matrix x(dtype::float32, 2, 3), dy(dtype::float32, 3, 2);
  CHECK_THROWS_WITH(ops::relu_backward(dy, x), Catch::Contains("3×2") && Catch::Contains("2×3"));
}
