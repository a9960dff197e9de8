// Clipping by global norm, for use between unscale() and step():
//
//   clip_result r = clip_grad_norm(views, count, max_norm);
//
// The L2 norm of all the (unscaled) gradients together is accumulated in double.  When it is
// finite and above max_norm, every gradient is multiplied by float(max_norm / (norm + epsilon))
// (in float, bfloat16/float16 rounded back as unscale does).  A non-finite norm leaves the
// gradients alone and is reported in the result: after an overflow the step is skipped anyway,
// and multiplying by NaN would only spread it.
//
// torch/nn/utils/clip_grad.py (clip_grad_norm_) computes max_norm / (total_norm + 1e-6) and
// always multiplies by it clamped to 1; epsilon = 1e-6 gives its coefficient, and multiplying by
// exactly 1 changes nothing, so only the non-finite case differs (PyTorch multiplies by NaN/0
// unless error_if_nonfinite is set).
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "../errors.hpp"
#include "../detail/text.hpp"
#include "unscale.hpp"

namespace mixprec {

struct clip_options {
  double epsilon = 0;  // added to the norm before dividing (1e-6: PyTorch's coefficient)
  rounding gradient_rounding = rounding::nearest_even;
  unsigned threads = 1;  // for the multiply, as unscale_options::threads
};

struct clip_result {
  double norm = 0;        // the global L2 norm before clipping (inf or NaN when a gradient is)
  bool finite = true;     // norm is finite
  bool clipped = false;   // the gradients were multiplied by coefficient
  float coefficient = 1;  // float(max_norm / (norm + epsilon)) when clipped, else 1
};

namespace detail {

// Sum of squares in double; eight partial sums in a fixed order, so the result is the same on
// every run and compiler.
template <class T>
double sum_of_squares(const T* g, std::size_t n) noexcept {
  double partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (std::size_t k = 0; k < 8; ++k) {
      const auto x = static_cast<double>(static_cast<float>(g[i + k]));
      partial[k] += x * x;
    }
  }
  for (std::size_t k = 0; i < n; ++i, ++k) {
    const auto x = static_cast<double>(static_cast<float>(g[i]));
    partial[k] += x * x;
  }
  return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
         ((partial[4] + partial[5]) + (partial[6] + partial[7]));
}

inline double sum_of_squares(const gradient_view& v) noexcept {
  switch (v.type()) {
    case dtype::float32:
      return sum_of_squares(static_cast<const float*>(v.data()), v.size());
    case dtype::bfloat16:
      return sum_of_squares(static_cast<const bfloat16*>(v.data()), v.size());
    case dtype::float16:
      return sum_of_squares(static_cast<const float16*>(v.data()), v.size());
    default:  // a gradient_view holds no other dtype
      break;
  }
  return 0;
}

}  // namespace detail

// The global L2 norm of the arrays (in double).
inline double global_norm(const gradient_view* arrays, std::size_t count) {
  detail::check_gradient_views("global_norm", arrays, count);
  double sum = 0;
  for (std::size_t a = 0; a < count; ++a) sum += detail::sum_of_squares(arrays[a]);
  return std::sqrt(sum);
}

template <int = 0>
clip_result clip_grad_norm(const gradient_view* arrays, std::size_t count, double max_norm,
                           const clip_options& options = {}) {
  if (!(std::isfinite(max_norm) && max_norm > 0)) {
    throw invalid_argument("clip_grad_norm: max_norm is " + detail::number_text(max_norm) +
                           ", it must be finite and > 0");
  }
  if (!(std::isfinite(options.epsilon) && options.epsilon >= 0)) {
    throw invalid_argument("clip_grad_norm: epsilon is " + detail::number_text(options.epsilon) +
                           ", it must be finite and >= 0");
  }
  clip_result r;
  r.norm = global_norm(arrays, count);
  r.finite = std::isfinite(r.norm);
  if (!r.finite || r.norm <= max_norm) return r;
  r.coefficient = static_cast<float>(max_norm / (r.norm + options.epsilon));
  r.clipped = true;
  unscale_options multiply;
  multiply.gradient_rounding = options.gradient_rounding;
  multiply.threads = options.threads;
  unscale_and_check(arrays, count, r.coefficient, multiply);
  return r;
}

template <int = 0>
clip_result clip_grad_norm(const std::vector<gradient_view>& arrays, double max_norm,
                           const clip_options& options = {}) {
  return clip_grad_norm(arrays.data(), arrays.size(), max_norm, options);
}
template <int = 0>
clip_result clip_grad_norm(std::initializer_list<gradient_view> arrays, double max_norm,
                           const clip_options& options = {}) {
  return clip_grad_norm(arrays.begin(), arrays.size(), max_norm, options);
}

}  // namespace mixprec
