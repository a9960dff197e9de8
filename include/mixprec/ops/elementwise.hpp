// Elementwise arithmetic of two matrices with broadcasting: add, sub, mul, div (category
// promote: the result has the widest input dtype, promote_types, under autocast or not).
//
// Shapes broadcast as in NumPy / PyTorch for two dimensions: each of rows and cols must be
// equal or 1 on one side (a 1 × cols bias row, a rows × 1 column, a 1 × 1 scalar).  Each
// result is the exact operation rounded once into the result dtype (computed in double, which
// makes the double rounding harmless: 53 >= 2·24 + 2, Figueroa, SIGNUM 1995).
#pragma once

#include <string>
#include <vector>

#include "operand.hpp"

namespace mixprec::ops {
namespace detail {

template <int = 0>
std::size_t broadcast_extent(const char* op, std::size_t a, std::size_t b, const matrix_view& x, const matrix_view& y) {
  if (a == b || b == 1) return a;
  if (a == 1) return b;
  throw_shape(op, "shapes " + shape_of(x) + " and " + shape_of(y) + " do not broadcast");
}

template <class F>
matrix broadcast_binary(const char* op, const operand& a, const operand& b, F f) {
  const std::size_t rows = broadcast_extent(op, a.rows(), b.rows(), a.view(), b.view());
  const std::size_t cols = broadcast_extent(op, a.cols(), b.cols(), a.view(), b.view());
  const dtype r = result_dtype(op, {&a, &b});
  const auto x = as_floats(a.view()), y = as_floats(b.view());
  std::vector<double> out(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    const std::size_t ia = a.rows() == 1 ? 0 : i, ib = b.rows() == 1 ? 0 : i;
    for (std::size_t j = 0; j < cols; ++j) {
      const std::size_t ja = a.cols() == 1 ? 0 : j, jb = b.cols() == 1 ? 0 : j;
      out[i * cols + j] = f(static_cast<double>(x[ia * a.cols() + ja]), static_cast<double>(y[ib * b.cols() + jb]));
    }
  }
  return round_into(out, rows, cols, r);
}

}  // namespace detail

template <int = 0>
matrix add(const operand& a, const operand& b) {
  return detail::broadcast_binary("add", a, b, [](double x, double y) { return x + y; });
}
template <int = 0>
matrix sub(const operand& a, const operand& b) {
  return detail::broadcast_binary("sub", a, b, [](double x, double y) { return x - y; });
}
template <int = 0>
matrix mul(const operand& a, const operand& b) {
  return detail::broadcast_binary("mul", a, b, [](double x, double y) { return x * y; });
}
template <int = 0>
matrix div(const operand& a, const operand& b) {
  return detail::broadcast_binary("div", a, b, [](double x, double y) { return x / y; });
}

}  // namespace mixprec::ops
