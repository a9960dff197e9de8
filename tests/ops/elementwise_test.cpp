// ops/elementwise.hpp: mixed inputs promote to the widest dtype under every scope; each
// result is the exact operation rounded once (bit-exact against the scalar rounding).
#include <mixprec/ops/elementwise.hpp>

#include <catch2/catch.hpp>

#include <cmath>

#include "ops_reference.hpp"

using namespace mixprec;
using namespace ops_test;

TEST_CASE("add/sub/mul/div promote to the widest input and round once, under every scope", "[ops]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype a_type : input_dtypes) {
      for (dtype b_type : input_dtypes) {
        INFO(scope.name << ", " << to_string(a_type) << " and " << to_string(b_type));
        const matrix a = random_matrix(a_type, 4, 9, 1, 10.0f), b = random_matrix(b_type, 4, 9, 2, 10.0f);
        const dtype expected = promote_types(a_type, b_type);
        const matrix sum = ops::add(a, b), difference = ops::sub(a, b), product = ops::mul(a, b),
                     quotient = ops::div(a, b);
        REQUIRE(sum.type() == expected);
        REQUIRE(quotient.type() == expected);
        for (std::size_t i = 0; i < 4; ++i) {
          for (std::size_t j = 0; j < 9; ++j) {
            const long double x = a.value(i, j), y = b.value(i, j);
            // Exact: the sum and product of two floats fit in long double's 64 bits only
            // sometimes, so the reference is exact to within far less than half a code.
            CHECK(codes_apart(expected, sum.value(i, j), x + y) == 0);
            CHECK(codes_apart(expected, difference.value(i, j), x - y) == 0);
            CHECK(codes_apart(expected, product.value(i, j), x * y) == 0);
            CHECK(codes_apart(expected, quotient.value(i, j), x / y) <= 1);
          }
        }
      }
    }
  }
}

TEST_CASE("shapes broadcast like NumPy in two dimensions; others are errors", "[ops]") {
  const matrix a = random_matrix(dtype::float32, 3, 4, 5);
  const matrix row = random_matrix(dtype::bfloat16, 1, 4, 6), column = random_matrix(dtype::float32, 3, 1, 7);
  const matrix scalar = random_matrix(dtype::float16, 1, 1, 8);
  const matrix by_row = ops::add(a, row), by_column = ops::mul(column, a), by_scalar = ops::sub(a, scalar);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      CHECK(by_row.value(i, j) == a.value(i, j) + row.value(0, j));
      CHECK(by_column.value(i, j) == column.value(i, 0) * a.value(i, j));
      CHECK(by_scalar.value(i, j) == a.value(i, j) - scalar.value(0, 0));
    }
  }
  CHECK_THROWS_WITH(ops::add(a, matrix(dtype::float32, 2, 4)), Catch::Contains("do not broadcast"));
}
