// Layer normalisation over the columns of each row (float32 category: under autocast the
// result is float32; fp32_layer_norm is float32 always), and its backward.
//
//   y_ij = (x_ij - μ_i) / √(σ²_i + eps) · γ_j + β_j,   μ, σ² the mean and biased variance of row i
//
// γ (gamma) and β (beta) are 1 × cols, or empty for none (torch's elementwise_affine=False).
// Statistics and the result are computed in double and rounded once into the result dtype.
#pragma once

#include <cmath>
#include <vector>

#include "operand.hpp"

namespace mixprec::ops {

struct layer_norm_grads {
  matrix input, gamma, beta;  // gamma and beta empty when the forward had none
};

namespace detail {

template <int = 0>
void check_affine(const char* op, const matrix_view& x, const matrix_view& p, const char* name) {
  if (!p.empty() && (p.rows() != 1 || p.cols() != x.cols())) {
    throw_shape(op, std::string(name) + " is " + shape_of(p) + ", expected 1×" + std::to_string(x.cols()));
  }
}

// Mean and 1/√(variance + eps) of each row.
struct row_statistics {
  std::vector<double> mean, inv_std;
};
template <int = 0>
row_statistics layer_statistics(const float* xs, std::size_t rows, std::size_t cols, double eps) {
  row_statistics s{std::vector<double>(rows), std::vector<double>(rows)};
  for (std::size_t i = 0; i < rows; ++i) {
    const float* row = xs + i * cols;
    double sum = 0, squares = 0;
    for (std::size_t j = 0; j < cols; ++j) sum += row[j];
    const double mean = sum / static_cast<double>(cols);
    for (std::size_t j = 0; j < cols; ++j) squares += (row[j] - mean) * (row[j] - mean);
    s.mean[i] = mean;
    s.inv_std[i] = 1.0 / std::sqrt(squares / static_cast<double>(cols) + eps);
  }
  return s;
}

template <int = 0>
matrix layer_norm_into(const operand& x, const operand& gamma, const operand& beta, double eps, dtype r) {
  check_affine("layer_norm", x.view(), gamma.view(), "gamma");
  check_affine("layer_norm", x.view(), beta.view(), "beta");
  if (!(eps >= 0)) throw invalid_argument("ops::layer_norm: eps " + std::to_string(eps) + " is not >= 0");
  const std::size_t rows = x.rows(), cols = x.cols();
  const auto xs = as_floats(x.view()), g = as_floats(gamma.view()), b = as_floats(beta.view());
  const row_statistics s = layer_statistics(xs.data(), rows, cols, eps);
  std::vector<double> y(xs.size());
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      double v = (xs[i * cols + j] - s.mean[i]) * s.inv_std[i];
      if (!g.empty()) v *= g[j];
      if (!b.empty()) v += b[j];
      y[i * cols + j] = v;
    }
  }
  return round_into(y, rows, cols, r);
}

}  // namespace detail

template <int = 0>
matrix layer_norm(const operand& x, const operand& gamma = matrix_view(), const operand& beta = matrix_view(),
                  double eps = 1e-5) {
  return detail::layer_norm_into(x, gamma, beta, eps, detail::result_dtype("layer_norm", {&x, &gamma, &beta}));
}

// float32 whatever the scope.
template <int = 0>
matrix fp32_layer_norm(const operand& x, const operand& gamma = matrix_view(), const operand& beta = matrix_view(),
                       double eps = 1e-5) {
  return detail::layer_norm_into(x, gamma, beta, eps, dtype::float32);
}

// Gradients of layer_norm(x, gamma, beta, eps) for the incoming gradient grad_out (rounded
// first to the forward result's dtype): dx̂ = dy·γ,
//   dx = inv_std/n · (n·dx̂ - Σ_j dx̂ - x̂·Σ_j dx̂·x̂),   dγ = Σ_i dy·x̂,   dβ = Σ_i dy.
template <int = 0>
layer_norm_grads layer_norm_backward(const operand& grad_out, const operand& x, const operand& gamma = matrix_view(),
                                     const operand& beta = matrix_view(), double eps = 1e-5) {
  detail::require_same_shape("layer_norm_backward", grad_out.view(), x.view());
  detail::check_affine("layer_norm_backward", x.view(), gamma.view(), "gamma");
  detail::check_affine("layer_norm_backward", x.view(), beta.view(), "beta");
  const dtype r = detail::result_dtype("layer_norm", {&x, &gamma, &beta});
  const std::size_t rows = x.rows(), cols = x.cols();
  const auto xs = detail::as_floats(x.view()), g = detail::as_floats(gamma.view());
  const auto dy = detail::as_floats(detail::cast_to(grad_out, r).view);
  const detail::row_statistics s = detail::layer_statistics(xs.data(), rows, cols, eps);
  std::vector<double> dx(xs.size()), dgamma(cols, 0.0), dbeta(cols, 0.0), dxhat(cols), xhat(cols);
  for (std::size_t i = 0; i < rows; ++i) {
    double sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      const std::size_t k = i * cols + j;
      xhat[j] = (xs[k] - s.mean[i]) * s.inv_std[i];
      dxhat[j] = dy[k] * (g.empty() ? 1.0 : static_cast<double>(g[j]));
      sum_dxhat += dxhat[j];
      sum_dxhat_xhat += dxhat[j] * xhat[j];
      dgamma[j] += dy[k] * xhat[j];
      dbeta[j] += dy[k];
    }
    const double n = static_cast<double>(cols);
    for (std::size_t j = 0; j < cols; ++j) {
      dx[i * cols + j] = s.inv_std[i] / n * (n * dxhat[j] - sum_dxhat - xhat[j] * sum_dxhat_xhat);
    }
  }
  layer_norm_grads grads;
  grads.input = detail::round_into(dx, rows, cols, x.type());
  if (!gamma.view().empty()) grads.gamma = detail::round_into(dgamma, 1, cols, gamma.type());
  if (!beta.view().empty()) grads.beta = detail::round_into(dbeta, 1, cols, beta.type());
  return grads;
}

}  // namespace mixprec::ops
