// ops/softmax.hpp: softmax, log_softmax and cross-entropy are float32 operations under
// autocast and keep the input's dtype without it; values are the exact functions rounded once
// (within one code); the cross-entropy gradient is in the logits' dtype and scales with g.
#include <mixprec/ops/softmax.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ops_reference.hpp"

using namespace mixprec;
using namespace ops_test;

namespace {

struct exact_row {
  long double max, log_sum;
};
exact_row exact_log_sum_exp(const matrix& x, std::size_t i) {
  long double m = -INFINITY;
  for (std::size_t j = 0; j < x.cols(); ++j) m = std::max(m, static_cast<long double>(x.value(i, j)));
  long double s = 0;
  for (std::size_t j = 0; j < x.cols(); ++j) s += std::exp(static_cast<long double>(x.value(i, j)) - m);
  return {m, std::log(s)};
}

std::vector<int> labels_for(std::size_t rows, std::size_t classes) {
  std::vector<int> labels(rows);
  for (std::size_t i = 0; i < rows; ++i) labels[i] = static_cast<int>((i * 7 + 3) % classes);
  return labels;
}

}  // namespace

TEST_CASE("softmax and log_softmax: float32 under autocast, the input's dtype without; exact values",
          "[ops][softmax]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype in : input_dtypes) {
      INFO(scope.name << ", input " << to_string(in));
      const matrix x = random_matrix(in, 9, 10, 21, 4.0f);
      const dtype expected = scope.enabled ? dtype::float32 : in;
      const matrix p = ops::softmax(x), lp = ops::log_softmax(x), fp = ops::fp32_softmax(x);
      REQUIRE(p.type() == expected);
      REQUIRE(lp.type() == expected);
      REQUIRE(fp.type() == dtype::float32);
      for (std::size_t i = 0; i < x.rows(); ++i) {
        const exact_row r = exact_log_sum_exp(x, i);
        for (std::size_t j = 0; j < x.cols(); ++j) {
          const long double log_p = static_cast<long double>(x.value(i, j)) - r.max - r.log_sum;
          CHECK(codes_apart(expected, p.value(i, j), std::exp(log_p)) <= 1);
          CHECK(codes_apart(expected, lp.value(i, j), log_p) <= 1);
          CHECK(codes_apart(dtype::float32, fp.value(i, j), std::exp(log_p)) <= 1);
        }
      }
    }
  }
}

TEST_CASE("softmax of large logits does not overflow; rows with inf or NaN follow PyTorch", "[ops][softmax]") {
  const float values[] = {1000.0f,   999.0f, -1000.0f,  //
                          -INFINITY, 0.0f,   1.0f,      //
                          NAN,       0.0f,   1.0f,      //
                          INFINITY,  0.0f,   1.0f};
  const matrix p = ops::softmax(matrix_view(values, 4, 3));
  CHECK(std::abs(p.value(0, 0) - 0.7310586f) < 1e-6f);
  CHECK(p.value(0, 2) == 0.0f);
  CHECK(p.value(1, 0) == 0.0f);
  for (std::size_t j = 0; j < 3; ++j) {
    CHECK(std::isnan(p.value(2, j)));  // NaN anywhere: the whole row is NaN
    CHECK(std::isnan(p.value(3, j)));  // +inf: inf - inf
  }
}

TEST_CASE("cross_entropy is the mean of -log_softmax at the labels, float32 under autocast", "[ops][softmax]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype in : input_dtypes) {
      INFO(scope.name << ", input " << to_string(in));
      const matrix x = random_matrix(in, 16, 10, 5, 3.0f);
      const std::vector<int> labels = labels_for(16, 10);
      long double total = 0;
      for (std::size_t i = 0; i < 16; ++i) {
        const exact_row r = exact_log_sum_exp(x, i);
        total += r.max + r.log_sum - static_cast<long double>(x.value(i, static_cast<std::size_t>(labels[i])));
      }
      CHECK(codes_apart(scope.enabled ? dtype::float32 : in, ops::cross_entropy(x, labels), total / 16) <= 1);
    }
  }
}

TEST_CASE("cross_entropy_backward is g·(softmax - onehot)/n in the logits' dtype", "[ops][softmax]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype in : input_dtypes) {
      INFO(scope.name << ", input " << to_string(in));
      const matrix x = random_matrix(in, 8, 6, 9, 2.0f);
      const std::vector<int> labels = labels_for(8, 6);
      const float g = 1024.0f;
      const matrix d = ops::cross_entropy_backward(x, labels, g);
      REQUIRE(d.type() == in);
      for (std::size_t i = 0; i < 8; ++i) {
        const exact_row r = exact_log_sum_exp(x, i);
        for (std::size_t j = 0; j < 6; ++j) {
          const long double p = std::exp(static_cast<long double>(x.value(i, j)) - r.max - r.log_sum);
          const long double exact = g * (p - (static_cast<int>(j) == labels[i] ? 1 : 0)) / 8;
          CHECK(codes_apart(in, d.value(i, j), exact) <= 1);
        }
      }
    }
  }
}

TEST_CASE("rows labelled ignore_index are not counted and get no gradient", "[ops][softmax]") {
  const matrix x = random_matrix(dtype::float32, 4, 3, 2);
  const std::vector<int> some_ignored = {0, ops::default_ignore_index, 2, ops::default_ignore_index};
  const matrix kept_rows = matrix::copy_of(x);
  const float loss = ops::cross_entropy(x, some_ignored);
  const float only_counted =
      ops::cross_entropy(matrix_view(x.data<float>(), dtype::float32, 2, 3, 6, 1), std::vector<int>{0, 2});
  CHECK(loss == Approx(only_counted).epsilon(1e-6));
  const matrix d = ops::cross_entropy_backward(x, some_ignored);
  for (std::size_t j = 0; j < 3; ++j) {
    CHECK(d.value(1, j) == 0.0f);
    CHECK(d.value(3, j) == 0.0f);
  }
  CHECK(std::isnan(ops::cross_entropy(x, std::vector<int>(4, ops::default_ignore_index))));
}

TEST_CASE("labels out of range or of the wrong count are errors naming them", "[ops][softmax]") {
  const matrix x(dtype::float32, 3, 4);
  CHECK_THROWS_WITH(ops::cross_entropy(x, {0, 4, 1}), Catch::Contains("label 4 of row 1") && Catch::Contains("[0, 4)"));
  CHECK_THROWS_AS(ops::cross_entropy(x, {0, -1, 1}), invalid_argument);
  CHECK_THROWS_WITH(ops::cross_entropy_backward(x, {0, 1}), Catch::Contains("2 labels for 3 rows"));
}
