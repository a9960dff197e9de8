// ops/normalization.hpp: layer_norm is a float32 operation under autocast, exact to one code,
// and its backward matches the derivative (checked against finite differences in long double).
#include <mixprec/ops/normalization.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ops_reference.hpp"

using namespace mixprec;
using namespace ops_test;

namespace {

// The exact layer norm of row i of x (long double), with optional affine parameters.
std::vector<long double> exact_layer_norm(const std::vector<long double>& row, const matrix* gamma, const matrix* beta,
                                          long double eps) {
  const auto n = static_cast<long double>(row.size());
  long double mean = 0, var = 0;
  for (long double v : row) mean += v;
  mean /= n;
  for (long double v : row) var += (v - mean) * (v - mean);
  var /= n;
  std::vector<long double> y(row.size());
  for (std::size_t j = 0; j < row.size(); ++j) {
    y[j] = (row[j] - mean) / std::sqrt(var + eps);
    if (gamma != nullptr) y[j] *= gamma->value(0, j);
    if (beta != nullptr) y[j] += beta->value(0, j);
  }
  return y;
}

std::vector<long double> row_of(const matrix& x, std::size_t i) {
  std::vector<long double> row(x.cols());
  for (std::size_t j = 0; j < x.cols(); ++j) row[j] = x.value(i, j);
  return row;
}

}  // namespace

TEST_CASE("layer_norm: float32 under autocast, the widest input's dtype without; exact values", "[ops][norm]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype in : input_dtypes) {
      INFO(scope.name << ", input " << to_string(in));
      const matrix x = random_matrix(in, 6, 24, 31, 2.0f, 0.5f);
      const matrix gamma = random_matrix(in, 1, 24, 32, 0.5f, 1.0f), beta = random_matrix(in, 1, 24, 33, 0.3f);
      const matrix y = ops::layer_norm(x, gamma, beta), plain = ops::layer_norm(x), fixed = ops::fp32_layer_norm(x);
      const dtype expected = scope.enabled ? dtype::float32 : in;
      REQUIRE(y.type() == expected);
      REQUIRE(plain.type() == expected);
      REQUIRE(fixed.type() == dtype::float32);
      for (std::size_t i = 0; i < x.rows(); ++i) {
        const auto with_affine = exact_layer_norm(row_of(x, i), &gamma, &beta, 1e-5L);
        const auto without = exact_layer_norm(row_of(x, i), nullptr, nullptr, 1e-5L);
        for (std::size_t j = 0; j < x.cols(); ++j) {
          CHECK(codes_apart(expected, y.value(i, j), with_affine[j]) <= 1);
          CHECK(codes_apart(expected, plain.value(i, j), without[j]) <= 1);
          CHECK(codes_apart(dtype::float32, fixed.value(i, j), without[j]) <= 1);
        }
      }
    }
  }
}

TEST_CASE("layer_norm_backward agrees with central differences of the exact forward", "[ops][norm]") {
  const matrix x = random_matrix(dtype::float32, 3, 8, 41, 1.5f);
  const matrix gamma = random_matrix(dtype::float32, 1, 8, 42, 0.5f, 1.0f),
               beta = random_matrix(dtype::float32, 1, 8, 43);
  const matrix dy = random_matrix(dtype::float32, 3, 8, 44);
  const ops::layer_norm_grads g = ops::layer_norm_backward(dy, x, gamma, beta);
  REQUIRE(g.input.type() == dtype::float32);
  REQUIRE(g.gamma.cols() == 8);
  // L = Σ dy · y: its derivative by x_ij is the gradient.
  const long double h = 1e-6L;
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 8; ++j) {
      auto row = row_of(x, i);
      row[j] += h;
      const auto up = exact_layer_norm(row, &gamma, &beta, 1e-5L);
      row[j] -= 2 * h;
      const auto down = exact_layer_norm(row, &gamma, &beta, 1e-5L);
      long double numeric = 0;
      for (std::size_t k = 0; k < 8; ++k) numeric += dy.value(i, k) * (up[k] - down[k]) / (2 * h);
      CHECK(std::abs(static_cast<long double>(g.input.value(i, j)) - numeric) <= 1e-5L * (1 + std::abs(numeric)));
    }
  }
  for (std::size_t j = 0; j < 8; ++j) {
    long double dbeta = 0;
    for (std::size_t i = 0; i < 3; ++i) dbeta += dy.value(i, j);
    CHECK(codes_apart(dtype::float32, g.beta.value(0, j), dbeta) <= 1);
  }
}

TEST_CASE("layer_norm rejects affine parameters of the wrong shape and negative eps", "[ops][norm]") {
  const matrix x(dtype::float32, 2, 4), wrong(dtype::float32, 1, 3);
  CHECK_THROWS_WITH(ops::layer_norm(x, wrong), Catch::Contains("gamma is 1×3, expected 1×4"));
  CHECK_THROWS_AS(ops::layer_norm(x, matrix_view(), matrix_view(), -1.0), invalid_argument);
  CHECK_THROWS_AS(ops::layer_norm(x, matrix_view(), matrix_view(), NAN), invalid_argument);
}
