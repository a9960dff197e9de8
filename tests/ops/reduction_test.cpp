// ops/reduction.hpp: sums, means and the mean squared error are float32 operations under
// autocast; their values are the exact sums rounded once (the double accumulation of at most
// a few hundred floats is exact to far better than half a float code here).
#include <mixprec/ops/reduction.hpp>

#include <catch2/catch.hpp>

#include <cmath>

#include "ops_reference.hpp"

using namespace mixprec;
using namespace ops_test;

TEST_CASE("sum, mean and sum along an axis", "[ops][reduction]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype in : input_dtypes) {
      INFO(scope.name << ", input " << to_string(in));
      const matrix x = random_matrix(in, 12, 7, 51, 5.0f);
      const dtype expected = scope.enabled ? dtype::float32 : in;
      long double total = 0;
      std::vector<long double> columns(7, 0), rows(12, 0);
      for (std::size_t i = 0; i < 12; ++i) {
        for (std::size_t j = 0; j < 7; ++j) {
          total += x.value(i, j);
          columns[j] += x.value(i, j);
          rows[i] += x.value(i, j);
        }
      }
      CHECK(codes_apart(expected, ops::sum(x), total) <= 1);
      CHECK(codes_apart(expected, ops::mean(x), total / 84) <= 1);
      const matrix by_column = ops::sum(x, 0), by_row = ops::sum(x, 1);
      REQUIRE(by_column.type() == expected);
      REQUIRE(by_column.rows() == 1);
      REQUIRE(by_row.cols() == 1);
      for (std::size_t j = 0; j < 7; ++j) CHECK(codes_apart(expected, by_column.value(0, j), columns[j]) <= 1);
      for (std::size_t i = 0; i < 12; ++i) CHECK(codes_apart(expected, by_row.value(i, 0), rows[i]) <= 1);
    }
  }
  CHECK_THROWS_AS(ops::sum(matrix(dtype::float32, 2, 2), 2), invalid_argument);
}

TEST_CASE("mse_loss and its gradient", "[ops][reduction]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype in : input_dtypes) {
      INFO(scope.name << ", input " << to_string(in));
      const matrix p = random_matrix(in, 5, 6, 61), t = random_matrix(in, 5, 6, 62);
      long double total = 0;
      for (std::size_t i = 0; i < 5; ++i) {
        for (std::size_t j = 0; j < 6; ++j) {
          const long double d = static_cast<long double>(p.value(i, j)) - t.value(i, j);
          total += d * d;
        }
      }
      CHECK(codes_apart(scope.enabled ? dtype::float32 : in, ops::mse_loss(p, t), total / 30) <= 1);
      const matrix g = ops::mse_loss_backward(p, t, 8.0f);
      REQUIRE(g.type() == in);
      for (std::size_t i = 0; i < 5; ++i) {
        for (std::size_t j = 0; j < 6; ++j) {
          const long double d = static_cast<long double>(p.value(i, j)) - t.value(i, j);
          CHECK(codes_apart(in, g.value(i, j), 8.0L * 2 * d / 30) <= 1);
        }
      }
    }
  }
  CHECK_THROWS_AS(ops::mse_loss(matrix(dtype::float32, 2, 2), matrix(dtype::float32, 2, 3)), invalid_argument);
}
