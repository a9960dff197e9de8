// Linear layers in fp8 with Transformer Engine's delayed scaling (scaling/fp8/): the three
// matrix products of a layer take fp8 operands with per-tensor scales, accumulate in float, and
// return float32, as TE's Linear does with fp8 GEMMs (transformer_engine/pytorch/module/linear.py).
//
//   mixprec::ops::fp8_training fp8{mixprec::delayed_scaling{}, 3};   // 3 layers, HYBRID by default
//   matrix y = ops::fp8_linear(x, w, b, fp8, 0);                      // forward of layer 0
//   auto g = ops::fp8_linear_backward(dy, x, w, b, fp8, 0);           // its backward
//   fp8.update();                                                     // end of step: new scales
//
// Per layer l the forward scaler holds two tensors, the input (2l) and the weight (2l + 1), the
// backward scaler one, the output gradient (l).  Each product quantises its operands with the
// tensor's current scale (q = convert(x · scale), saturating; the amax recorded for the next
// scales) and calls gemm with scale_a, scale_b = the inverse scales, so that
//   y  = (x_q · s_x⁻¹)(w_q · s_w⁻¹)ᵀ + b       forward element (e4m3 under HYBRID)
//   dx = (dy_q · s_dy⁻¹)(w_q · s_w⁻¹)          dy in the backward element (e5m2 under HYBRID)
//   dw = (dy_q · s_dy⁻¹)ᵀ(x_q · s_x⁻¹),   db = Σ_rows dy (float, not quantised, as TE)
// Every product of two fp8 values is exact and sums in float (gemm); the scales apply to the
// float sum (gemm_options, docs/gemm.md).  The inputs are re-quantised in the backward with the
// scales the forward used (the same codes: update() runs only after the step), which is what TE
// keeps from the forward.  Results and gradients are float32; the autocast scope plays no part.
//
// A weight with a precision override (parameter.hpp; a recipe's override rules, for example
// Megatron-LM's first and last layers in bf16) takes the layer out of fp8: fp8_linear and its
// backward are then ops::linear and ops::linear_backward in the override's dtype, and the
// layer's fp8 tensors are left alone (no amax recorded, their scales unchanged by update()).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../gemm/gemm.hpp"
#include "../scaling/fp8/delayed_scaler.hpp"
#include "linear.hpp"
#include "operand.hpp"

namespace mixprec::ops {

// The delayed-scaling state of a model's fp8 layers: one scaler per pass.
class fp8_training {
 public:
  fp8_training(const delayed_scaling& recipe, std::size_t layers)
      : layers_(layers),
        forward_(recipe, fp8_pass::forward, 2 * layers),
        backward_(recipe, fp8_pass::backward, layers) {}

  std::size_t layers() const noexcept { return layers_; }
  delayed_scaler& forward() noexcept { return forward_; }
  delayed_scaler& backward() noexcept { return backward_; }
  const delayed_scaler& forward() const noexcept { return forward_; }
  const delayed_scaler& backward() const noexcept { return backward_; }

  // Ends the step: both passes' histories roll and their scales follow TE's rule.
  void update() {
    forward_.update();
    backward_.update();
  }

  // The same after agreeing on this step's amaxes across processes: reduce_max(float* amax,
  // std::size_t count) replaces each value by its maximum over the processes (collective), and
  // is called once, with the forward tensors' amaxes then the backward's.  If it throws,
  // nothing has changed.
  template <class ReduceMax>
  void update(ReduceMax&& reduce_max) {
    const std::size_t forward_tensors = 2 * layers_;
    std::vector<float> backward_amax;  // the backward pass's share of the one reduction
    forward_.update([&](float* amax, std::size_t count) {
      std::vector<float> all(amax, amax + count);
      for (std::size_t t = 0; t < layers_; ++t) all.push_back(backward_.amax_history(t)[0]);
      reduce_max(all.data(), all.size());
      std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(forward_tensors), amax);
      backward_amax.assign(all.begin() + static_cast<std::ptrdiff_t>(forward_tensors), all.end());
    });
    backward_.update([&](float* amax, std::size_t) { std::copy(backward_amax.begin(), backward_amax.end(), amax); });
  }

  std::size_t checked_layer(std::size_t layer) const {
    if (layer >= layers_) {
      throw invalid_argument("fp8_training: layer " + std::to_string(layer) + " out of range, there are " +
                             std::to_string(layers_));
    }
    return layer;
  }

 private:
  std::size_t layers_;
  delayed_scaler forward_, backward_;
};

namespace detail {

template <int = 0>
bool has_precision_override(const operand& x) {
  return x.source_parameter() != nullptr && x.source_parameter()->precision_override().has_value();
}

// An operand quantised by one tensor of a scaler: its codes (row-major, as the operand's shape,
// in the scaler's element type, in a buffer borrowed from the thread's pool) and the inverse
// scale that dequantises them.
struct fp8_operand {
  scratch<std::uint8_t> codes;
  fp8_element element = fp8_element::e4m3;
  float scale_inv = 1;
  std::size_t rows = 0, cols = 0;
};

template <int = 0>
fp8_operand quantize_fp8(delayed_scaler& scaler, std::size_t tensor, const matrix_view& x) {
  fp8_operand q{scratch<std::uint8_t>(x.size()), scaler.element(), 1.0f, x.rows(), x.cols()};
  auto quantize = [&](const float* values) {
    if (q.element == fp8_element::e4m3) {
      q.scale_inv =
          scaler.quantize(tensor, values, x.size(), reinterpret_cast<float8_e4m3fn*>(q.codes.data())).scale_inv;
    } else {
      q.scale_inv = scaler.quantize(tensor, values, x.size(), reinterpret_cast<float8_e5m2*>(q.codes.data())).scale_inv;
    }
  };
  if (x.type() == dtype::float32 && is_flat(x)) {
    quantize(static_cast<const float*>(x.data()));  // the values themselves: no float copy
  } else {
    quantize(as_floats(x).data());
  }
  return q;
}

// Calls f(pointer) with the operand's codes in their element type.
template <class F>
void with_codes(const fp8_operand& q, F f) {
  if (q.element == fp8_element::e4m3) {
    f(reinterpret_cast<const float8_e4m3fn*>(q.codes.data()));
  } else {
    f(reinterpret_cast<const float8_e5m2*>(q.codes.data()));
  }
}

// c (m × n floats, row-major) = op(a)·op(b)·s_a⁻¹·s_b⁻¹ + beta·c.
template <int = 0>
void fp8_product(const fp8_operand& a, transpose ta, const fp8_operand& b, transpose tb, float beta, float* c) {
  const std::size_t m = ta == transpose::no ? a.rows : a.cols, k = ta == transpose::no ? a.cols : a.rows;
  const std::size_t n = tb == transpose::no ? b.cols : b.rows;
  gemm_options options;
  options.scale_a = a.scale_inv;
  options.scale_b = b.scale_inv;
  with_codes(a, [&](const auto* pa) {
    with_codes(b, [&](const auto* pb) { gemm(ta, tb, m, n, k, 1.0f, pa, a.cols, pb, b.cols, beta, c, n, options); });
  });
}

}  // namespace detail

template <int = 0>
matrix fp8_linear(const operand& x, const operand& weight, const operand& bias, fp8_training& fp8, std::size_t layer) {
  const std::size_t l = fp8.checked_layer(layer);
  if (detail::has_precision_override(weight)) return linear(x, weight, bias);
  detail::check_product_shapes("fp8_linear", x.view(), weight.view().transposed());
  const std::size_t rows = x.rows(), cols = weight.rows();
  matrix y(dtype::float32, rows, cols, mixprec::detail::no_fill_t{});  // the bias rows, or unread (beta = 0)
  if (!bias.view().empty()) detail::fill_bias_rows("fp8_linear", bias.view(), rows, cols, y.data<float>());
  const detail::fp8_operand xq = detail::quantize_fp8(fp8.forward(), 2 * l, x.view());
  const detail::fp8_operand wq = detail::quantize_fp8(fp8.forward(), 2 * l + 1, weight.view());
  detail::fp8_product(xq, transpose::no, wq, transpose::yes, bias.view().empty() ? 0.0f : 1.0f, y.data<float>());
  return y;
}

template <int = 0>
linear_grads fp8_linear_backward(const operand& grad_out, const operand& x, const operand& weight, const operand& bias,
                                 fp8_training& fp8, std::size_t layer) {
  const std::size_t l = fp8.checked_layer(layer);
  if (detail::has_precision_override(weight)) return linear_backward(grad_out, x, weight, bias);
  if (grad_out.rows() != x.rows() || grad_out.cols() != weight.rows()) {
    detail::throw_shape("fp8_linear_backward", "gradient is " + detail::shape_of(grad_out.view()) + ", the output is " +
                                                   std::to_string(x.rows()) + "×" + std::to_string(weight.rows()));
  }
  const detail::fp8_operand dyq = detail::quantize_fp8(fp8.backward(), l, grad_out.view());
  const detail::fp8_operand xq = detail::quantize_fp8(fp8.forward(), 2 * l, x.view());
  const detail::fp8_operand wq = detail::quantize_fp8(fp8.forward(), 2 * l + 1, weight.view());
  linear_grads g;
  g.input = matrix(dtype::float32, x.rows(), x.cols(), mixprec::detail::no_fill_t{});  // beta = 0: written, not read
  g.weight = matrix(dtype::float32, weight.rows(), weight.cols(), mixprec::detail::no_fill_t{});
  detail::fp8_product(dyq, transpose::no, wq, transpose::no, 0.0f, g.input.data<float>());
  detail::fp8_product(dyq, transpose::yes, xq, transpose::no, 0.0f, g.weight.data<float>());
  if (!bias.view().empty()) g.bias = detail::sum_along(grad_out.view(), 0, dtype::float32);
  return g;
}

}  // namespace mixprec::ops
