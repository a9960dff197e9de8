// Activations: relu and gelu, and their backward.  Neither is in PyTorch's autocast lists, so
// they fall through: the result has the input's dtype, under autocast or not.
//
//   relu(x) = max(x, 0)                                   (exact; NaN stays NaN; relu(-0) = +0)
//   gelu(x) = x·Φ(x) = x/2 · erfc(-x/√2)                 (the exact form, not the tanh one;
//                                                          erfc: no cancellation for x << 0)
//   relu_backward(dy, x) = dy where x > 0, else 0
//   gelu_backward(dy, x) = dy · (Φ(x) + x·φ(x)),  φ(x) = exp(-x²/2)/√(2π)
//
// The incoming gradient is first rounded to the forward result's dtype (x's), as autograd
// casts a gradient to its tensor's dtype; the result is rounded once into x's dtype.
#pragma once

#include <cmath>

#include "operand.hpp"

namespace mixprec::ops {

inline matrix relu(const operand& x) {
  return detail::map_elements(x.view(), autocast_result_dtype("relu", {x.type()}),
                              [](double v) { return v > 0 || std::isnan(v) ? v : 0.0; });
}

inline matrix gelu(const operand& x) {
  return detail::map_elements(x.view(), autocast_result_dtype("gelu", {x.type()}),
                              [](double v) { return 0.5 * v * std::erfc(-v * 0.70710678118654752440); });
}

namespace detail {

// dy and x of one shape; f(dy, x) per element, in double, rounded into x's dtype (dy rounded
// to it first).
template <class F>
matrix activation_backward(const char* op, const operand& grad_out, const operand& x, F f) {
  require_same_shape(op, grad_out.view(), x.view());
  const dtype r = autocast_result_dtype(op, {x.type()});
  const std::vector<float> dy = as_floats(cast_to(grad_out, r).view);
  const std::vector<float> xs = as_floats(x.view());
  std::vector<double> dx(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) dx[i] = f(static_cast<double>(dy[i]), static_cast<double>(xs[i]));
  return round_into(dx, x.rows(), x.cols(), x.type());
}

}  // namespace detail

inline matrix relu_backward(const operand& grad_out, const operand& x) {
  return detail::activation_backward("relu", grad_out, x, [](double dy, double v) { return v > 0 ? dy : 0.0; });
}

inline matrix gelu_backward(const operand& grad_out, const operand& x) {
  return detail::activation_backward("gelu", grad_out, x, [](double dy, double v) {
    const double cdf = 0.5 * std::erfc(-v * 0.70710678118654752440);
    const double pdf = std::exp(-0.5 * v * v) * 0.39894228040143267794;  // 1/√(2π)
    return dy * (cdf + v * pdf);
  });
}

}  // namespace mixprec::ops
