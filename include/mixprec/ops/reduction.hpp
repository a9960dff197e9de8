// Reductions and the mean squared error (float32 category: under autocast the result is
// float32; without, it has the input's dtype).  Sums accumulate in double and are rounded
// once into the result dtype; scalar results come back as a float holding that value.
//
//   sum(x), mean(x)          over every element
//   sum(x, 0), sum(x, 1)     over rows (a 1 × cols result: the bias gradient of a batch) or
//                            over columns (rows × 1)
//   mse_loss(p, t)           mean of (p - t)²;  mse_loss_backward(p, t, g) = g · 2(p - t)/n,
//                            in p's dtype
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "operand.hpp"

namespace mixprec::ops {

template <int = 0>
float sum(const operand& x) {
  double total = 0;
  for (float v : detail::as_floats(x.view())) total += v;
  return detail::round_scalar(total, autocast_result_dtype("sum", {x.type()}));
}

template <int = 0>
float mean(const operand& x) {
  double total = 0;
  for (float v : detail::as_floats(x.view())) total += v;
  const double n = static_cast<double>(x.view().size());
  return detail::round_scalar(n == 0 ? std::numeric_limits<double>::quiet_NaN() : total / n,
                              autocast_result_dtype("mean", {x.type()}));
}

namespace detail {
// Sums along one axis, rounded once into r.
template <int = 0>
matrix sum_along(const matrix_view& x, int axis, dtype r) {
  if (axis != 0 && axis != 1) throw invalid_argument("ops::sum: axis " + std::to_string(axis) + " is not 0 or 1");
  const std::size_t rows = x.rows(), cols = x.cols();
  std::vector<double> out(axis == 0 ? cols : rows, 0.0);
  // Element (i, j) adds to out[j] (axis 0) or out[i] (axis 1), in row-major order as ever; a
  // block is split where it crosses a row end.
  for_each_block<1>({x}, [&](std::size_t offset, std::size_t n, const float* const* blocks) {
    const float* xs = blocks[0];
    std::size_t i = offset / cols, j = offset % cols;
    for (std::size_t k = 0; k < n;) {
      const std::size_t run = n - k < cols - j ? n - k : cols - j;
      if (axis == 0) {
        for (std::size_t t = 0; t < run; ++t) out[j + t] += xs[k + t];
      } else {
        double total = out[i];
        for (std::size_t t = 0; t < run; ++t) total += xs[k + t];
        out[i] = total;
      }
      k += run;
      j += run;
      if (j == cols) {
        j = 0;
        ++i;
      }
    }
  });
  return round_into(out, axis == 0 ? 1 : rows, axis == 0 ? cols : 1, r);
}
}  // namespace detail

// Sums along one axis: 0 sums each column over the rows (1 × cols), 1 each row (rows × 1).
template <int = 0>
matrix sum(const operand& x, int axis) {
  return detail::sum_along(x.view(), axis, autocast_result_dtype("sum", {x.type()}));
}

template <int = 0>
float mse_loss(const operand& prediction, const operand& target) {
  detail::require_same_shape("mse_loss", prediction.view(), target.view());
  const auto p = detail::as_floats(prediction.view()), t = detail::as_floats(target.view());
  double total = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double d = static_cast<double>(p[i]) - static_cast<double>(t[i]);
    total += d * d;
  }
  const double n = static_cast<double>(p.size());
  return detail::round_scalar(n == 0 ? std::numeric_limits<double>::quiet_NaN() : total / n,
                              detail::result_dtype("mse_loss", {&prediction, &target}));
}

template <int = 0>
matrix mse_loss_backward(const operand& prediction, const operand& target, float grad_loss = 1.0f) {
  detail::require_same_shape("mse_loss_backward", prediction.view(), target.view());
  const auto p = detail::as_floats(prediction.view()), t = detail::as_floats(target.view());
  std::vector<double> grad(p.size());
  const double g = 2.0 * static_cast<double>(grad_loss) / static_cast<double>(p.empty() ? 1 : p.size());
  for (std::size_t i = 0; i < p.size(); ++i) grad[i] = g * (static_cast<double>(p[i]) - static_cast<double>(t[i]));
  return detail::round_into(grad, prediction.rows(), prediction.cols(), prediction.type());
}

}  // namespace mixprec::ops
