// Matrix products under autocast: matmul and linear (category lower_precision: inside an
// autocast scope they compute in and return the scope's dtype), and their backward.
//
//   matrix c = ops::matmul(a, b);                // a·b
//   matrix y = ops::linear(x, w, b);             // x·wᵀ + b: w is out × in, b is 1 × out (or empty)
//   auto g = ops::linear_backward(dy, x, w, b);  // g.input = dy·w, g.weight = dyᵀ·x, g.bias = Σ_rows dy
//
// The product is mixprec::gemm on operands cast to the result dtype r: exact products summed
// in float (order and bound: docs/gemm.md); the bias starts the float accumulator (gemm's
// beta = 1) and each sum is rounded once into r, as a fused addmm does.  The backward runs in
// the forward's precision (same autocast state): dy is rounded to r (autograd casts a gradient
// to its tensor's dtype), each product is rounded once to r, and each gradient is then
// converted to the dtype of the input it belongs to (exact for float32 inputs).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "../gemm/gemm.hpp"
#include "operand.hpp"
#include "reduction.hpp"

namespace mixprec::ops {

struct matmul_grads {
  matrix a, b;
};
struct linear_grads {
  matrix input, weight, bias;  // bias empty when the forward had none
};

namespace detail {

// How gemm reads a view: as stored rows (transpose::no), as the transpose of stored rows
// (transpose::yes, a column-major or transposed view), or, for any other strides, from a
// row-major copy.
struct gemm_layout {
  transpose op;
  std::size_t ld;
  const void* data;
  std::shared_ptr<const matrix> keep;
};
template <int = 0>
gemm_layout layout_for_gemm(const matrix_view& v) {
  if (v.col_stride() == 1 || v.cols() <= 1)
    return {transpose::no, std::max(v.row_stride(), v.cols()), v.data(), nullptr};
  if (v.row_stride() == 1 || v.rows() <= 1)
    return {transpose::yes, std::max(v.col_stride(), v.rows()), v.data(), nullptr};
  auto copy = std::make_shared<const matrix>(matrix::copy_of(v));
  return {transpose::no, v.cols(), copy->raw_data(), copy};
}

// c (a.rows × b.cols, row-major floats) = a·b + beta·c, for a and b of one dtype at any strides.
template <int = 0>
void gemm_into(const matrix_view& a, const matrix_view& b, float beta, float* c) {
  const gemm_layout la = layout_for_gemm(a), lb = layout_for_gemm(b);
  visit_dtype(a.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm(la.op, lb.op, a.rows(), b.cols(), a.cols(), 1.0f, static_cast<const T*>(la.data), la.ld,
         static_cast<const T*>(lb.data), lb.ld, beta, c, b.cols());
  });
}

template <int = 0>
void check_product_shapes(const char* op, const matrix_view& a, const matrix_view& b) {
  if (a.cols() != b.rows()) throw_shape(op, "inner dimensions differ: " + shape_of(a) + " times " + shape_of(b));
}

template <int = 0>
void check_bias(const char* op, const matrix_view& bias, std::size_t cols) {
  if (bias.rows() != 1 || bias.cols() != cols) {
    throw_shape(op, "bias is " + shape_of(bias) + ", expected 1×" + std::to_string(cols));
  }
}

// Every row of c (rows × cols floats) set to the bias (1 × cols, converted exactly to float):
// the accumulator a product with bias starts from (gemm's beta = 1).
template <int = 0>
void fill_bias_rows(const char* op, const matrix_view& bias, std::size_t rows, std::size_t cols, float* c) {
  check_bias(op, bias, cols);
  if (rows != 0) read_row_part(bias, 0, 0, cols, c);
  for (std::size_t i = 1; i < rows; ++i) std::copy(c, c + cols, c + i * cols);
}

// a·b (+ the bias rows) in float, rounded once into r.  A float32 result is the sum itself:
// gemm writes into the result; any other r stages the sums in a borrowed float buffer.
//
// The bias is added after the product, not loaded as gemm's C: with alpha = 1 and beta = 0 gemm
// returns each sum s itself, and s + bias in float is fma(1, s, bias), the value gemm's beta = 1
// gives (docs/gemm.md), so the bits are the same; what goes is a pass that writes the bias
// into every row and gemm's reading it back (5 % of a bf16 step, perf).  For r other than
// float32 the addition is fused with the rounding into r, a few rows at a time.
//
// A backward pass asks for its gradient in the dtype of the input it belongs to (`out`): a
// float32 master weight's gradient holds r's values as float32.  Rounding into r and widening
// to float32 then go block by block through a buffer on the stack, not through a whole r
// matrix converted afterwards (the same values: widening to float32 is exact).
template <int = 0>
matrix product(const char* op, const operand& a, const operand& b, const operand* bias, bool b_transposed, dtype r,
               dtype out) {
  if (out != r && out != dtype::float32) return product(op, a, b, bias, b_transposed, r, r).to(out);
  const cast_operand ca = cast_to(a, r);
  const cast_operand cb = b_transposed ? transposed(cast_to(b, r)) : cast_to(b, r);
  check_product_shapes(op, ca.view, cb.view);
  const std::size_t rows = ca.view.rows(), cols = cb.view.cols();
  scratch<float> bias_row(bias != nullptr ? cols : 0);
  if (bias != nullptr) {
    const cast_operand cbias = cast_to(*bias, r);
    check_bias(op, cbias.view, cols);
    read_row_part(cbias.view, 0, 0, cols, bias_row.data());
  }
  auto add_bias = [&](float* first_row, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      float* row = first_row + i * cols;
      for (std::size_t j = 0; j < cols; ++j) row[j] += bias_row[j];
    }
  };
  if (r == dtype::float32) {
    matrix result(r, rows, cols, mixprec::detail::no_fill_t{});  // gemm with beta = 0 writes every sum
    gemm_into(ca.view, cb.view, 0.0f, result.data<float>());
    if (bias != nullptr) add_bias(result.data<float>(), rows);
    return result;
  }
  scratch<float> sums(rows * cols);
  gemm_into(ca.view, cb.view, 0.0f, sums.data());
  const bool widened = out != r;                                 // r's values written as float32
  matrix result(out, rows, cols, mixprec::detail::no_fill_t{});  // every group of rows is written below
  const std::size_t group = cols == 0 ? rows : std::max<std::size_t>(1, block_elements / cols);
  for (std::size_t i = 0; i < rows; i += group) {
    const std::size_t count = std::min(group, rows - i);
    if (bias != nullptr) add_bias(sums.data() + i * cols, count);
    if (widened) {
      write_flat_through(sums.data() + i * cols, count * cols, r, result, i * cols);
    } else {
      write_flat(sums.data() + i * cols, count * cols, result, i * cols);
    }
  }
  return result;
}

}  // namespace detail

template <int = 0>
matrix matmul(const operand& a, const operand& b) {
  const dtype r = detail::result_dtype("matmul", {&a, &b});
  return detail::product("matmul", a, b, nullptr, false, r, r);
}

template <int = 0>
matrix linear(const operand& x, const operand& weight, const operand& bias = matrix_view()) {
  const dtype r = detail::result_dtype("linear", {&x, &weight, &bias});
  return detail::product("linear", x, weight, bias.view().empty() ? nullptr : &bias, true, r, r);
}

template <int = 0>
matmul_grads matmul_backward(const operand& grad_out, const operand& a, const operand& b) {
  const dtype r = detail::result_dtype("matmul", {&a, &b});
  const detail::cast_operand dy = detail::cast_to(grad_out, r);
  if (dy.view.rows() != a.rows() || dy.view.cols() != b.cols()) {
    detail::throw_shape("matmul_backward", "gradient is " + detail::shape_of(dy.view) + ", the product is " +
                                               std::to_string(a.rows()) + "×" + std::to_string(b.cols()));
  }
  const operand dy_operand(dy.view);
  matmul_grads g;
  // dA = dy·bᵀ, dB = aᵀ·dy, each rounded once to r, then into the input's dtype.
  g.a = detail::product("matmul_backward", dy_operand, b, nullptr, true, r, a.type());
  const detail::cast_operand ca = detail::cast_to(a, r);
  g.b = detail::product("matmul_backward", operand(ca.view.transposed()), dy_operand, nullptr, false, r, b.type());
  return g;
}

template <int = 0>
linear_grads linear_backward(const operand& grad_out, const operand& x, const operand& weight,
                             const operand& bias = matrix_view()) {
  const dtype r = detail::result_dtype("linear", {&x, &weight, &bias});
  const detail::cast_operand dy = detail::cast_to(grad_out, r);
  if (dy.view.rows() != x.rows() || dy.view.cols() != weight.rows()) {
    detail::throw_shape("linear_backward", "gradient is " + detail::shape_of(dy.view) + ", the output is " +
                                               std::to_string(x.rows()) + "×" + std::to_string(weight.rows()));
  }
  const operand dy_operand(dy.view);
  linear_grads g;
  // dX = dy·w (N×out · out×in), dW = dyᵀ·x (out×N · N×in), db = Σ_rows dy.
  g.input = detail::product("linear_backward", dy_operand, weight, nullptr, false, r, x.type());
  const detail::cast_operand cx = detail::cast_to(x, r);
  g.weight = detail::product("linear_backward", operand(dy.view.transposed()), operand(cx.view), nullptr, false, r,
                             weight.type());
  if (!bias.view().empty()) g.bias = detail::sum_along(dy.view, 0, r).to(bias.type());
  return g;
}

}  // namespace mixprec::ops
