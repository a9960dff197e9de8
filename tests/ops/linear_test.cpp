// ops/linear.hpp: matmul and linear compute in the scope's dtype (lower_precision), bit for bit
// the sequence "cast each input once, mixprec::gemm, round once"; their values are within
// gemm's float-accumulation bound of the exact product of the cast inputs; the backward is the
// same sequence on the transposes; parameters are cast once per scope.
#include <mixprec/ops/linear.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops_reference.hpp"

using namespace mixprec;
using namespace ops_test;

namespace {

// The operations' documented sequence written out: op(a)·op(b) (+ bias) with every input cast
// to r, through gemm with float accumulation, rounded once into r.
matrix explicit_product(const matrix& a, bool ta, const matrix& b, bool tb, const matrix* bias, dtype r) {
  const matrix ca = a.to(r), cb = b.to(r);
  const std::size_t m = ta ? a.cols() : a.rows(), k = ta ? a.rows() : a.cols(), n = tb ? b.rows() : b.cols();
  std::vector<float> c(m * n, 0.0f);
  if (bias != nullptr) {
    const matrix cbias = bias->to(r);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] = cbias.value(0, j);
    }
  }
  visit_dtype(r, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm(ta ? transpose::yes : transpose::no, tb ? transpose::yes : transpose::no, m, n, k, 1.0f, ca.data<T>(),
         ca.cols(), cb.data<T>(), cb.cols(), bias != nullptr ? 1.0f : 0.0f, c.data(), n);
  });
  return convert(matrix_view(c.data(), m, n), r);
}

// |got - exact| within one code of r plus gemm's float accumulation bound (K + 2) u Σ|a||b|.
void check_against_exact(const matrix& got, const matrix& a, const matrix& b, const matrix* bias, dtype r) {
  const matrix ca = a.to(r), cb = b.to(r);
  for (std::size_t i = 0; i < got.rows(); ++i) {
    for (std::size_t j = 0; j < got.cols(); ++j) {
      long double exact = bias != nullptr ? bias->to(r).value(0, j) : 0.0L, magnitude = std::abs(exact);
      for (std::size_t k = 0; k < ca.cols(); ++k) {
        const long double p = static_cast<long double>(ca.value(i, k)) * cb.value(k, j);
        exact += p;
        magnitude += std::abs(p);
      }
      const long double accumulation = static_cast<long double>(ca.cols() + 2) * 0x1p-24L * magnitude;
      const long double code = std::ldexp(1.0L, std::ilogb(std::max(std::abs(exact), 1e-30L)) -
                                                    (r == dtype::float32 ? 23 : (r == dtype::bfloat16 ? 7 : 10)));
      CHECK(std::abs(static_cast<long double>(got.value(i, j)) - exact) <= code + accumulation);
    }
  }
}

matrix transposed_copy(const matrix& m) { return matrix::copy_of(m.view().transposed()); }

}  // namespace

TEST_CASE("matmul and linear: the scope's dtype under autocast, the widest input without", "[ops][linear]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    for (dtype in : input_dtypes) {
      INFO(scope.name << ", input " << to_string(in));
      const matrix x = random_matrix(in, 13, 37, 71), w = random_matrix(dtype::float32, 19, 37, 72, 0.2f);
      const matrix bias = random_matrix(dtype::float32, 1, 19, 73), b = random_matrix(in, 37, 11, 74);
      const dtype linear_type = scope.enabled ? scope.lower_precision : promote_types(in, dtype::float32);
      const dtype matmul_type = scope.enabled ? scope.lower_precision : in;
      const matrix y = ops::linear(x, w, bias), y_plain = ops::linear(x, w), c = ops::matmul(x, b);
      REQUIRE(y.type() == linear_type);
      REQUIRE(c.type() == matmul_type);
      CHECK(same_codes(y, explicit_product(x, false, w, true, &bias, linear_type)));
      CHECK(same_codes(y_plain, explicit_product(x, false, w, true, nullptr, linear_type)));
      CHECK(same_codes(c, explicit_product(x, false, b, false, nullptr, matmul_type)));
      check_against_exact(y, x, transposed_copy(w), &bias, linear_type);
      check_against_exact(c, x, b, nullptr, matmul_type);
    }
  }
}

TEST_CASE("column-major, transposed and strided inputs give the same codes as row-major ones", "[ops][linear]") {
  autocast_scope<bfloat16> amp;
  const matrix a = random_matrix(dtype::float32, 9, 14, 81), b = random_matrix(dtype::float32, 14, 6, 82);
  const matrix reference = ops::matmul(a, b);
  const matrix a_t = transposed_copy(a), b_t = transposed_copy(b);
  CHECK(same_codes(ops::matmul(a_t.view().transposed(), b_t.view().transposed()), reference));  // transpose::yes
  // Every other row of a taller matrix: neither stride is 1 in a useful way for both.
  matrix tall(dtype::float32, 18, 28);
  for (std::size_t i = 0; i < 9; ++i) {
    for (std::size_t j = 0; j < 14; ++j) tall.data<float>()[(2 * i) * 28 + 2 * j] = a.value(i, j);
  }
  const matrix_view strided(tall.raw_data(), dtype::float32, 9, 14, 56, 2);
  CHECK(same_codes(ops::matmul(strided, b), reference));
}

TEST_CASE("linear with a bias over many blocks: the bias added after the product gives gemm's beta = 1 bits",
          "[ops][linear]") {
  // The bias is added to each float sum after gemm (and, for a narrow r, a few rows at a time
  // before rounding): the same bits as starting gemm's accumulator from it, for outputs larger
  // than a block of the element-wise loop, including sums that cancel against the bias.
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    INFO(scope.name);
    const matrix x = random_matrix(dtype::float32, 70, 33, 71), w = random_matrix(dtype::float32, 45, 33, 72, 0.3f);
    const matrix bias = random_matrix(dtype::float32, 1, 45, 73, 4.0f);
    const dtype r = scope.enabled ? scope.lower_precision : dtype::float32;
    CHECK(same_codes(ops::linear(x, w, bias), explicit_product(x, false, w, true, &bias, r)));
    const matrix x_wide = random_matrix(dtype::float32, 3, 17, 74),
                 w_wide = random_matrix(dtype::float32, 1500, 17, 75);
    const matrix bias_wide = random_matrix(dtype::float32, 1, 1500, 76);
    CHECK(same_codes(ops::linear(x_wide, w_wide, bias_wide),
                     explicit_product(x_wide, false, w_wide, true, &bias_wide, r)));
    // The backward's gradients, rounded to r and widened to the float32 inputs' dtype block by
    // block: r's values, as converting a whole r result would give them.
    const matrix dy = random_matrix(dtype::float32, 70, 45, 77, 1e-3f), dy_r = dy.to(r);
    const ops::linear_grads g = ops::linear_backward(dy, x, w, bias);
    CHECK(same_codes(g.input, explicit_product(dy_r, false, w, false, nullptr, r).to(dtype::float32)));
    CHECK(same_codes(g.weight, explicit_product(dy_r, true, x, false, nullptr, r).to(dtype::float32)));
  }
}

TEST_CASE("linear_backward: dX = dy·w, dW = dyᵀ·x, db = Σ dy, in the forward's precision", "[ops][linear]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    INFO(scope.name);
    const matrix x = random_matrix(dtype::float32, 8, 12, 91), w = random_matrix(dtype::float32, 5, 12, 92, 0.3f);
    const matrix bias = random_matrix(dtype::float32, 1, 5, 93), dy = random_matrix(dtype::float32, 8, 5, 94, 1e-3f);
    const dtype r = scope.enabled ? scope.lower_precision : dtype::float32;
    const ops::linear_grads g = ops::linear_backward(dy, x, w, bias);
    REQUIRE(g.input.type() == dtype::float32);  // each gradient in its input's dtype
    REQUIRE(g.weight.type() == dtype::float32);
    REQUIRE(g.bias.type() == dtype::float32);
    const matrix dy_r = dy.to(r);  // the incoming gradient, rounded to the output's dtype
    CHECK(same_codes(g.input, explicit_product(dy_r, false, w, false, nullptr, r).to(dtype::float32)));
    CHECK(same_codes(g.weight, explicit_product(dy_r, true, x, false, nullptr, r).to(dtype::float32)));
    for (std::size_t j = 0; j < 5; ++j) {
      long double column = 0;
      for (std::size_t i = 0; i < 8; ++i) column += dy_r.value(i, j);
      CHECK(codes_apart(r, g.bias.value(0, j), column) <= 1);
    }
    const ops::matmul_grads mg = ops::matmul_backward(dy, x, transposed_copy(w));
    CHECK(same_codes(mg.a, g.input));
    CHECK(same_codes(mg.b, transposed_copy(g.weight)));
  }
}

TEST_CASE("a parameter's cast is made once per scope and used by forward and backward", "[ops][linear]") {
  const parameter w(random_matrix(dtype::float32, 16, 32, 101), "w");
  const matrix x = random_matrix(dtype::float32, 4, 32, 102);
  autocast_scope<float16> amp;
  const matrix y1 = ops::linear(x, w);
  const matrix y2 = ops::linear(x, w);
  (void)ops::linear_backward(y1, x, w);
  CHECK(same_codes(y1, y2));
  const autocast_cache_stats s = autocast_cache_statistics();
  CHECK(s.misses == 1);
  CHECK(s.hits == 2);
}

TEST_CASE("shape mismatches are errors that name the shapes", "[ops][linear]") {
  const matrix x(dtype::float32, 4, 3), w(dtype::float32, 5, 2), bias(dtype::float32, 1, 4);
  CHECK_THROWS_WITH(ops::linear(x, w), Catch::Contains("4×3") && Catch::Contains("2×5"));
  CHECK_THROWS_WITH(ops::linear(x, matrix(dtype::float32, 5, 3), bias), Catch::Contains("bias is 1×4, expected 1×5"));
  CHECK_THROWS_AS(ops::matmul(x, x), invalid_argument);
  CHECK_THROWS_AS(ops::linear_backward(matrix(dtype::float32, 4, 4), x, matrix(dtype::float32, 5, 3)),
                  invalid_argument);
}

TEST_CASE("a 0-row batch gives a 0-row result, as torch.nn.functional.linear does", "[ops][linear]") {
  for (const scope_case& scope : scope_cases) {
    dynamic_autocast_scope amp(scope.lower_precision);
    INFO(scope.name);
    const dtype r = scope.enabled ? scope.lower_precision : dtype::float32;
    const matrix x(dtype::float32, 0, 64), w = random_matrix(dtype::float32, 10, 64, 111, 0.2f);
    const matrix bias = random_matrix(dtype::float32, 1, 10, 112);
    for (const matrix& y : {ops::linear(x, w, bias), ops::linear(x, w), ops::matmul(x, transposed_copy(w))}) {
      CHECK(y.type() == r);
      CHECK(y.rows() == 0);
      CHECK(y.cols() == 10);
    }
    // The backward of an empty batch: an empty input gradient, zero weight and bias gradients
    // (sums over no rows), as autograd gives.
    const ops::linear_grads g = ops::linear_backward(matrix(dtype::float32, 0, 10), x, w, bias);
    CHECK(g.input.rows() == 0);
    CHECK(g.input.cols() == 64);
    REQUIRE(g.weight.rows() == 10);
    REQUIRE(g.weight.cols() == 64);
    REQUIRE(g.bias.cols() == 10);
    for (std::size_t i = 0; i < 10; ++i) {
      for (std::size_t j = 0; j < 64; ++j) CHECK(g.weight.value(i, j) == 0.0f);
      CHECK(g.bias.value(0, i) == 0.0f);
    }
  }
  // A wrong inner dimension with no rows names the real shapes (it said "0×0 times 64×10").
  CHECK_THROWS_WITH(ops::linear(matrix(dtype::float32, 0, 32), matrix(dtype::float32, 10, 64)),
                    Catch::Contains("inner dimensions differ: 0×32 times 64×10"));
  CHECK_THROWS_WITH(
      ops::linear_backward(matrix(dtype::float32, 0, 9), matrix(dtype::float32, 0, 64), matrix(dtype::float32, 10, 64)),
      Catch::Contains("gradient is 0×9, the output is 0×10"));
}
