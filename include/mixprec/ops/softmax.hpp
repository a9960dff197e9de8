// Softmax, log-softmax and softmax cross-entropy over the columns of each row (the class
// dimension of a batch of logits).  All are float32-category operations: under autocast their
// result is float32 whatever the input; without autocast it has the input's dtype (computed in
// double, rounded once).  fp32_softmax is float32 always: the "precision-sensitive operation"
// helper for code that must not depend on the scope.
//
//   softmax(x)_ij     = exp(x_ij - m_i) / Σ_k exp(x_ik - m_i),   m_i = max_k x_ik
//   log_softmax(x)_ij = x_ij - m_i - log Σ_k exp(x_ik - m_i)
//   cross_entropy(x, labels) = mean over counted rows i of (-log_softmax(x)_i,label_i)
//   cross_entropy_backward(x, labels, g)_ij = g · (softmax(x)_ij - [j = label_i]) / counted rows
//
// Rows whose label is ignore_index (-100, PyTorch's default) are not counted and get a zero
// gradient; a batch with no counted row has loss NaN, as PyTorch's mean reduction gives.  A
// label outside [0, classes) is an error.  The gradient is in the logits' dtype: under autocast
// the float32 gradient goes back through the cast to the logits' dtype, rounding once, which is
// where fp16 gradients underflow without loss scaling (pass the scale as g).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "operand.hpp"

namespace mixprec::ops {

constexpr int default_ignore_index = -100;

namespace detail {

// log Σ_k exp(row_k) and the row maximum, in double.
struct row_log_sum_exp {
  double max, log_sum;
};
template <int = 0>
row_log_sum_exp log_sum_exp(const float* row, std::size_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < n; ++k) m = std::isnan(row[k]) || row[k] > m ? static_cast<double>(row[k]) : m;
  if (std::isnan(m) || std::isinf(m)) return {m, m};  // NaN, +inf or an all -inf row: no finite shift
  double sum = 0;
  for (std::size_t k = 0; k < n; ++k) sum += std::exp(static_cast<double>(row[k]) - m);
  return {m, std::log(sum)};
}

// softmax (log_space = false) or log_softmax of each row, rounded into r.
template <int = 0>
matrix softmax_rows(const matrix_view& x, dtype r, bool log_space) {
  const auto xs = as_floats(x);
  std::vector<double> out(xs.size());
  for (std::size_t i = 0; i < x.rows(); ++i) {
    const float* row = xs.data() + i * x.cols();
    const row_log_sum_exp s = log_sum_exp(row, x.cols());
    for (std::size_t j = 0; j < x.cols(); ++j) {
      const double shifted = static_cast<double>(row[j]) - s.max;
      // +inf or NaN maximum: (inf - inf) or NaN; -inf maximum: every entry -inf, 0/0 in PyTorch.
      const double lse = std::isfinite(s.max) ? s.log_sum : std::numeric_limits<double>::quiet_NaN();
      out[i * x.cols() + j] = log_space ? shifted - lse : std::exp(shifted - lse);
    }
  }
  return round_into(out, x.rows(), x.cols(), r);
}

template <int = 0>
void check_labels(const char* op, const matrix_view& logits, const std::vector<int>& labels, int ignore_index) {
  if (labels.size() != logits.rows()) {
    throw_shape(op, std::to_string(labels.size()) + " labels for " + std::to_string(logits.rows()) + " rows of logits");
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const int label = labels[i];
    if (label != ignore_index && (label < 0 || static_cast<std::size_t>(label) >= logits.cols())) {
      throw invalid_argument(std::string("ops::") + op + ": label " + std::to_string(label) + " of row " +
                             std::to_string(i) + " is outside [0, " + std::to_string(logits.cols()) +
                             ") (and is not ignore_index " + std::to_string(ignore_index) + ")");
    }
  }
}

template <int = 0>
std::size_t counted_rows(const std::vector<int>& labels, int ignore_index) {
  std::size_t n = 0;
  for (int label : labels) n += label != ignore_index ? 1 : 0;
  return n;
}

}  // namespace detail

template <int = 0>
matrix softmax(const operand& x) {
  return detail::softmax_rows(x.view(), autocast_result_dtype("softmax", {x.type()}), false);
}
template <int = 0>
matrix log_softmax(const operand& x) {
  return detail::softmax_rows(x.view(), autocast_result_dtype("log_softmax", {x.type()}), true);
}
// float32 whatever the scope.
template <int = 0>
matrix fp32_softmax(const operand& x) {
  return detail::softmax_rows(x.view(), dtype::float32, false);
}

// The mean cross-entropy of the rows whose label is counted, as a float holding the value of
// the result dtype (float32 under autocast, else the logits' dtype).
template <int = 0>
float cross_entropy(const operand& logits, const std::vector<int>& labels, int ignore_index = default_ignore_index) {
  detail::check_labels("cross_entropy", logits.view(), labels, ignore_index);
  const dtype r = autocast_result_dtype("cross_entropy_loss", {logits.type()});
  const auto xs = detail::as_floats(logits.view());
  double total = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == ignore_index) continue;
    const float* row = xs.data() + i * logits.cols();
    const detail::row_log_sum_exp s = detail::log_sum_exp(row, logits.cols());
    total += s.max + s.log_sum - static_cast<double>(row[labels[i]]);
  }
  const std::size_t n = detail::counted_rows(labels, ignore_index);
  return detail::round_scalar(n == 0 ? std::numeric_limits<double>::quiet_NaN() : total / static_cast<double>(n), r);
}

// d loss / d logits for cross_entropy, times grad_loss (the loss scale in a scaled backward).
template <int = 0>
matrix cross_entropy_backward(const operand& logits, const std::vector<int>& labels, float grad_loss = 1.0f,
                              int ignore_index = default_ignore_index) {
  detail::check_labels("cross_entropy_backward", logits.view(), labels, ignore_index);
  const auto xs = detail::as_floats(logits.view());
  const std::size_t n = detail::counted_rows(labels, ignore_index), classes = logits.cols();
  std::vector<double> grad(xs.size(), 0.0);
  const double g = static_cast<double>(grad_loss) / static_cast<double>(n == 0 ? 1 : n);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == ignore_index) continue;
    const float* row = xs.data() + i * classes;
    const detail::row_log_sum_exp s = detail::log_sum_exp(row, classes);
    const double lse = std::isfinite(s.max) ? s.max + s.log_sum : std::numeric_limits<double>::quiet_NaN();
    for (std::size_t j = 0; j < classes; ++j) {
      const double p = std::exp(static_cast<double>(row[j]) - lse);
      grad[i * classes + j] = g * (p - (j == static_cast<std::size_t>(labels[i]) ? 1.0 : 0.0));
    }
  }
  return detail::round_into(grad, logits.rows(), classes, logits.type());
}

}  // namespace mixprec::ops
