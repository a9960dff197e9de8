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

namespace detail {

// relu and relu_backward select values; they compute nothing that needs rounding when the
// result has the input's dtype (the case unless a user's autocast policy says otherwise): the
// result is the selected input's code itself, +0 otherwise, and a NaN goes through the same
// conversion from double that the general path (map_elements) applies, so the bits are that
// path's bits (tests/ops/activation_test.cpp compares them on every dtype).  This skips the
// double buffer and the scalar rounding of every element, most of a relu's time.
template <class Select>
matrix select_elements(const matrix_view& x, const matrix_view& source, Select keep) {
  matrix result(x.type(), x.rows(), x.cols(), mixprec::detail::no_fill_t{});  // every block is written below
  const bool float_result = x.type() == dtype::float32;
  alignas(64) float staged[block_elements];
  auto select = [&](std::size_t offset, std::size_t n, const float* xs, const float* values) {
    float* selected = float_result ? result.data<float>() + offset : staged;
    // Branch-free, so that the compiler vectorises it (a branch per element and a short-circuit
    // NaN test kept it scalar: 30 % of a bf16 training step, forward and backward relu together;
    // so did a load of values[i] only where kept, which the compiler may not hoist).
    unsigned any_nan = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float value = values[i];
      const float kept = keep(xs[i]) ? value : 0.0f;
      selected[i] = kept;
      any_nan |= static_cast<unsigned>(kept != kept);
    }
    // Every kept value is one of the dtype's: the bulk conversion writes its code exactly.
    if (!float_result) write_flat(selected, n, result, offset);
    if (any_nan) {
      visit_dtype(x.type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* out = result.data<T>() + offset;
        for (std::size_t i = 0; i < n; ++i) {
          // Through a volatile double: the compiler, which assumes no signalling NaN, would fold
          // float → double → float to nothing, and the hardware conversion quiets a signalling
          // NaN as the general path's does.
          if (selected[i] != selected[i]) {
            const volatile double wide = static_cast<double>(selected[i]);
            out[i] = static_cast<T>(static_cast<double>(wide));
          }
        }
      });
    }
  };
  const bool same = x.data() == source.data() && x.type() == source.type() && x.row_stride() == source.row_stride() &&
                    x.col_stride() == source.col_stride();
  if (same) {  // relu: the values are the tested ones, decoded once
    for_each_block<1>({x}, [&](std::size_t offset, std::size_t n, const float* const* blocks) {
      select(offset, n, blocks[0], blocks[0]);
    });
  } else {
    for_each_block<2>({x, source}, [&](std::size_t offset, std::size_t n, const float* const* blocks) {
      select(offset, n, blocks[0], blocks[1]);
    });
  }
  return result;
}

}  // namespace detail

template <int = 0>
matrix relu(const operand& x) {
  const dtype r = autocast_result_dtype("relu", {x.type()});
  if (r == x.type()) {
    return detail::select_elements(x.view(), x.view(), [](float v) { return v > 0 || v != v; });
  }
  return detail::map_elements(x.view(), r, [](double v) { return v > 0 || std::isnan(v) ? v : 0.0; });
}

template <int = 0>
matrix gelu(const operand& x) {
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
  const cast_operand dy = cast_to(grad_out, r);
  std::vector<double> dx(x.view().size());
  for_each_block<2>({dy.view, x.view()}, [&](std::size_t offset, std::size_t n, const float* const* blocks) {
    for (std::size_t i = 0; i < n; ++i)
      dx[offset + i] = f(static_cast<double>(blocks[0][i]), static_cast<double>(blocks[1][i]));
  });
  return round_into(dx, x.rows(), x.cols(), x.type());
}

}  // namespace detail

template <int = 0>
matrix relu_backward(const operand& grad_out, const operand& x) {
  if (autocast_result_dtype("relu", {x.type()}) == x.type()) {
    detail::require_same_shape("relu", grad_out.view(), x.view());
    const detail::cast_operand dy = detail::cast_to(grad_out, x.type());  // exact in x's dtype now
    return detail::select_elements(x.view(), dy.view, [](float v) { return v > 0; });
  }
  return detail::activation_backward("relu", grad_out, x, [](double dy, double v) { return v > 0 ? dy : 0.0; });
}

template <int = 0>
matrix gelu_backward(const operand& grad_out, const operand& x) {
  return detail::activation_backward("gelu", grad_out, x, [](double dy, double v) {
    const double cdf = 0.5 * std::erfc(-v * 0.70710678118654752440);
    const double pdf = std::exp(-0.5 * v * v) * 0.39894228040143267794;  // 1/√(2π)
    return dy * (cdf + v * pdf);
  });
}

}  // namespace mixprec::ops
