// ops/activation.hpp: relu and gelu fall through (result in the input's dtype under every
// scope), and every value is the exact function rounded once (within one code: the double
// evaluation can land on the other side of a rounding boundary only by its own tiny error).
#include <mixprec/ops/activation.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

TEST_CASE("relu and relu_backward on codes give the bits of the general double path, specials included", "[ops]") {
  // Every code of the narrow dtypes (and float specials), as x and as dy, also through a
  // transposed (strided) view: the selection fast path against map_elements / activation_backward.
  for (dtype in : all_dtypes) {
    INFO(to_string(in));
    const std::size_t codes = visit_dtype(in, [](auto tag) -> std::size_t {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same<T, float>::value) {
        return 64;
      } else {
        return std::size_t{1} << mixprec::format_traits<mixprec::detail::format_of_t<T>>::total_bits;
      }
    });
    const std::size_t cols = 64, rows = (codes + cols - 1) / cols;
    matrix x(in, rows, cols), dy(in, rows, cols);
    visit_dtype(in, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* px = x.data<T>();
      T* pdy = dy.data<T>();
      for (std::size_t i = 0; i < rows * cols; ++i) {
        if constexpr (std::is_same<T, float>::value) {
          const std::uint32_t specials[] = {0x7FC00001u, 0xFFC00000u, 0x7F800001u, 0x80000000u,
                                            0x00000001u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu};
          px[i] = mixprec::detail::bit_cast<float>(specials[i % 8] ^ static_cast<std::uint32_t>(i / 8));
          pdy[i] = mixprec::detail::bit_cast<float>(specials[(i + 3) % 8] ^ static_cast<std::uint32_t>(i / 8));
        } else {
          using bits_type = decltype(T{}.bits());
          px[i] = T::from_bits(static_cast<bits_type>(i % codes));
          pdy[i] = T::from_bits(static_cast<bits_type>((i * 7 + 5) % codes));
        }
      }
    });
    for (const bool strided : {false, true}) {
      const matrix_view xv = strided ? x.view().transposed() : x.view();
      const matrix_view dyv = strided ? dy.view().transposed() : dy.view();
      const matrix fast = ops::relu(xv);
      const matrix general =
          ops::detail::map_elements(xv, in, [](double v) { return v > 0 || std::isnan(v) ? v : 0.0; });
      CHECK(std::memcmp(fast.raw_data(), general.raw_data(), general.bytes()) == 0);
      const matrix fast_back = ops::relu_backward(dyv, xv);
      const matrix general_back =
          ops::detail::activation_backward("relu", dyv, xv, [](double d, double v) { return v > 0 ? d : 0.0; });
      CHECK(std::memcmp(fast_back.raw_data(), general_back.raw_data(), general_back.bytes()) == 0);
    }
  }
}
