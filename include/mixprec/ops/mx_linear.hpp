// Linear layers on OCP MX operands (mx/): each operand of each of the layer's three matrix
// products is quantised in 32-element blocks along the product's inner dimension, each block with
// its own e8m0 scale (OCP MX v1.0), and multiplied by mx_gemm (exact products of the dequantised
// values, float sums).  Results and gradients are float32; the autocast scope plays no part.
//
//   matrix y = ops::mx_linear<float8_e4m3fn>(x, w, b);                          // MXFP8 forward
//   auto g = ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(dy, x, w, b);  // gradients in e5m2
//
//   y  = Q(x)·Q(wᵀ) + b           blocks along `in` for x's rows and for wᵀ's columns
//   dx = Q(dy)·Q(w)               blocks along `out`
//   dw = Q(dyᵀ)·Q(x)              blocks along the batch
// Each operand is quantised as it is stored (a transposed one with the other axis, which gives
// the same blocks) and mx_gemm reads it transposed where the product needs it.
//   db = Σ_rows dy                (float, not quantised)
// Q(·) in T for the forward's operands and in the backward's TGrad for dy; x and w in the
// backward in T.  No scale is carried between steps: MX chooses each block's scale from the
// block itself (mx_scale_rule::ocp unless given).  mx_linear_options::weight_scales = tile gives
// the weight one scale per 32 × 32 tile (Transformer Engine's 2D quantisation of weights,
// mx/quantize.hpp): its blocks along `in` (the forward's) and along `out` (the backward's dx)
// then share their scales, so both products see the same quantised weight.
// mx_linear_options::statistics collects TE's statistics of Q(x), Q(w) (the forward's) and
// Q(dy) (the dx product's): quantization_record.hpp.
#pragma once

#include <cstddef>

#include "../mx/mx.hpp"
#include "linear.hpp"
#include "operand.hpp"
#include "quantization_record.hpp"

namespace mixprec::ops {
namespace detail {

// x's MX quantisation with blocks along `axis`; float32 rows are read where they are, other
// dtypes and layouts through one float copy.  (A transposed operand of a product is quantised
// as stored, with the other axis: the same blocks.)
template <class T>
mx_matrix<T> quantize_mx(const matrix_view& x, mx_axis axis, mx_scale_rule rule,
                         mx_scale_sharing sharing = mx_scale_sharing::block) {
  if (x.type() == dtype::float32 && x.rows_contiguous() && x.rows() > 0 && x.row_stride() >= x.cols()) {
    return mx_quantize<T>(static_cast<const float*>(x.data()), x.rows(), x.cols(), x.row_stride(), axis, rule, sharing);
  }
  const auto values = as_floats(x);
  return mx_quantize<T>(values.data(), x.rows(), x.cols(), x.cols(), axis, rule, sharing);
}

// With a sink: the statistics of q, the MX quantisation of x (quantization_record.hpp).
template <class T>
void record_mx(statistics_sink* sink, layer_operand operand, const matrix_view& x, const mx_matrix<T>& q) {
  if (sink == nullptr) return;
  const scratch<float> values = as_floats(x);
  sink->push_back(operand_statistics{operand, mx_statistics(values.data(), x.cols(), q)});
}

}  // namespace detail

// The scale rule of every operand, how the weight's blocks share scales, and where the
// quantisations' statistics go (quantization_record.hpp; nullptr: not measured).
struct mx_linear_options {
  mx_scale_rule rule = mx_scale_rule::ocp;
  mx_scale_sharing weight_scales = mx_scale_sharing::block;  // tile: one scale per 32 × 32 tile
  statistics_sink* statistics = nullptr;
};

template <class T>
matrix mx_linear(const operand& x, const operand& weight, const operand& bias, const mx_linear_options& options) {
  const mx_scale_rule rule = options.rule;
  detail::check_product_shapes("mx_linear", x.view(), weight.view().transposed());
  const std::size_t rows = x.rows(), cols = weight.rows();
  matrix y(dtype::float32, rows, cols, mixprec::detail::no_fill_t{});  // the bias rows, or unread (beta = 0)
  if (!bias.view().empty()) detail::fill_bias_rows("mx_linear", bias.view(), rows, cols, y.data<float>());
  // wᵀ's blocks along `in` are w's rows' blocks: w quantised as stored, used transposed.
  const mx_matrix<T> xq = detail::quantize_mx<T>(x.view(), mx_axis::rows, rule);
  const mx_matrix<T> wq = detail::quantize_mx<T>(weight.view(), mx_axis::rows, rule, options.weight_scales);
  detail::record_mx(options.statistics, layer_operand::input, x.view(), xq);
  detail::record_mx(options.statistics, layer_operand::weight, weight.view(), wq);
  mx_gemm(transpose::no, transpose::yes, 1.0f, xq, wq, bias.view().empty() ? 0.0f : 1.0f, y.data<float>(), cols);
  return y;
}

template <class T>
matrix mx_linear(const operand& x, const operand& weight, const operand& bias = matrix_view(),
                 mx_scale_rule rule = mx_scale_rule::ocp) {
  mx_linear_options options;
  options.rule = rule;
  return mx_linear<T>(x, weight, bias, options);
}

template <class TGrad, class T>
linear_grads mx_linear_backward(const operand& grad_out, const operand& x, const operand& weight, const operand& bias,
                                const mx_linear_options& options) {
  const mx_scale_rule rule = options.rule;
  if (grad_out.rows() != x.rows() || grad_out.cols() != weight.rows() || x.cols() != weight.cols()) {
    detail::throw_shape("mx_linear_backward", "gradient " + detail::shape_of(grad_out.view()) + ", input " +
                                                  detail::shape_of(x.view()) + ", weight " +
                                                  detail::shape_of(weight.view()));
  }
  linear_grads g;
  g.input = matrix(dtype::float32, x.rows(), x.cols(), mixprec::detail::no_fill_t{});  // beta = 0: written, not read
  g.weight = matrix(dtype::float32, weight.rows(), weight.cols(), mixprec::detail::no_fill_t{});
  float* dx = g.input.data<float>();
  float* dw = g.weight.data<float>();
  const mx_matrix<TGrad> dy_rows = detail::quantize_mx<TGrad>(grad_out.view(), mx_axis::rows, rule);
  detail::record_mx(options.statistics, layer_operand::grad_output, grad_out.view(), dy_rows);
  const mx_matrix<T> w_columns = detail::quantize_mx<T>(weight.view(), mx_axis::columns, rule, options.weight_scales);
  mx_gemm(1.0f, dy_rows, w_columns, 0.0f, dx, x.cols());
  // dyᵀ's blocks along the batch are dy's columns' blocks: dy quantised as stored, used transposed.
  const mx_matrix<TGrad> dy_columns = detail::quantize_mx<TGrad>(grad_out.view(), mx_axis::columns, rule);
  const mx_matrix<T> x_columns = detail::quantize_mx<T>(x.view(), mx_axis::columns, rule);
  mx_gemm(transpose::yes, transpose::no, 1.0f, dy_columns, x_columns, 0.0f, dw, weight.cols());
  if (!bias.view().empty()) g.bias = detail::sum_along(grad_out.view(), 0, dtype::float32);
  return g;
}

template <class TGrad, class T>
linear_grads mx_linear_backward(const operand& grad_out, const operand& x, const operand& weight,
                                const operand& bias = matrix_view(), mx_scale_rule rule = mx_scale_rule::ocp) {
  mx_linear_options options;
  options.rule = rule;
  return mx_linear_backward<TGrad, T>(grad_out, x, weight, bias, options);
}

}  // namespace mixprec::ops
