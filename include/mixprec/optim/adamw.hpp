// mixprec::optim::adamw: Adam with decoupled weight decay, bit for bit as PyTorch 1.13's
// torch.optim.AdamW (amsgrad=False, maximize=False, foreach=False, capturable=False) on the CPU.
//
// Per parameter, step t = 1, 2, ... (torch/optim/adamw.py, _single_tensor_adamw):
//   w = w * (1 - lr * weight_decay)
//   m = beta1 * m + (1 - beta1) * g                       (m.mul_(beta1).add_(g, alpha=1 - beta1))
//   v = beta2 * v + (1 - beta2) * g * g                   (v.mul_(beta2).addcmul_(g, g, value=1 - beta2))
//   denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//   w = w + (-(lr / (1 - beta1^t)) * m) / denom           (w.addcdiv_(m, denom, value=-step_size))
// The scalars are computed as Python computes them there, in double (the powers with the
// C library's pow, as CPython's float ** does), then rounded to float by the kernel; the arrays
// in float32 with the roundings listed in detail/kernels.hpp.  PyTorch keeps t in a float32
// tensor, which stops counting at 2^24 (2^24 + 1 rounds back to 2^24): so does the t used here,
// while the saved step count keeps counting.  (PyTorch 1.13 uses mul_ + add_ for m, not lerp_,
// which later versions use.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../errors.hpp"
#include "../scaling/state.hpp"
#include "detail/kernels.hpp"
#include "detail/parameter_state.hpp"

namespace mixprec::optim {

struct adamw_options {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;
};

class adamw {
 public:
  static constexpr char state_magic[8] = {'M', 'X', 'O', 'P', 'T', 'A', 'D', 'W'};
  static constexpr std::uint32_t state_version = 1;
  static constexpr std::int64_t step_limit = std::int64_t{1} << 62;  // of a saved step count

  // Throws invalid_argument naming the value and its allowed range.
  explicit adamw(const adamw_options& o = {}) : options_(o) {
    detail::require_non_negative(who, "lr", o.lr);
    detail::require_unit_open(who, "beta1", o.beta1);
    detail::require_unit_open(who, "beta2", o.beta2);
    detail::require_non_negative(who, "eps", o.eps);
    detail::require_non_negative(who, "weight_decay", o.weight_decay);
  }

  const adamw_options& options() const noexcept { return options_; }

  void set_lr(float lr) {
    detail::require_non_negative(who, "lr", lr);
    options_.lr = lr;
  }
  float lr() const noexcept { return options_.lr; }

  // Registers a parameter of n elements; returns its index.  Both moment buffers are allocated
  // here (zero, as PyTorch's first step creates them), so that step() never allocates.
  std::size_t add(std::size_t n) {
    detail::check_parameter_size(who, n);
    parameter p;
    p.size = n;
    p.exp_avg.assign(n, 0.0f);
    p.exp_avg_sq.assign(n, 0.0f);
    parameters_.push_back(std::move(p));
    return parameters_.size() - 1;
  }
  std::size_t size() const noexcept { return parameters_.size(); }

  // Steps taken by parameter i (PyTorch's state['step']); 0 for an index out of range.
  std::int64_t steps(std::size_t i) const noexcept { return i < parameters_.size() ? parameters_[i].step : 0; }

  // One update of parameter i: w[0, n) in place from g[0, n).
  void step(std::size_t i, float* w, const float* g, std::size_t n) {
    detail::check_step(who, i, parameters_.size(), w, g, n, i < parameters_.size() ? parameters_[i].size : 0);
    parameter& p = parameters_[i];
    const detail::adamw_scalars s = scalars(p.step + 1);
    detail::adamw_kernel(s, w, g, p.exp_avg.data(), p.exp_avg_sq.data(), n);
    ++p.step;
  }

  // Bytes of optimizer state: the two moment buffers.
  std::size_t state_bytes() const noexcept {
    std::size_t bytes = 0;
    for (const parameter& p : parameters_) bytes += 2 * p.size * sizeof(float);
    return bytes;
  }

  // Payload: str "adamw"; f32 lr, beta1, beta2, eps, weight_decay; u64 count; per parameter:
  // u64 size, i64 step, size f32 exp_avg, size f32 exp_avg_sq.
  void write(::mixprec::detail::state_writer& out) const {
    out.str(kind);
    for (const float x : {options_.lr, options_.beta1, options_.beta2, options_.eps, options_.weight_decay}) out.f32(x);
    out.put_unsigned(parameters_.size(), 8);
    for (const parameter& p : parameters_) {
      out.put_unsigned(p.size, 8);
      out.i64(p.step);
      detail::write_floats(out, p.exp_avg);
      detail::write_floats(out, p.exp_avg_sq);
    }
  }

  // Everything a state holds, checked against this optimizer.
  struct decoded {
    float lr = 0;
    std::vector<std::int64_t> steps;
    std::vector<std::vector<float>> exp_avg, exp_avg_sq;
  };

  // Reads a payload written by write(); throws scaler_state_error (state_reader::fail) if it is
  // another optimizer's, has other options (lr aside), another parameter count or size, a
  // negative step count, moments that are not finite (or a negative exp_avg_sq), or non-zero
  // moments before the first step.  Changes nothing.
  decoded decode(::mixprec::detail::state_reader& in) const {
    using ::mixprec::detail::state_reader;
    detail::read_kind(in, kind);
    decoded d;
    d.lr = detail::read_lr(in, who);
    detail::read_same_option(in, who, "beta1", options_.beta1);
    detail::read_same_option(in, who, "beta2", options_.beta2);
    detail::read_same_option(in, who, "eps", options_.eps);
    detail::read_same_option(in, who, "weight_decay", options_.weight_decay);
    detail::read_parameter_count(in, who, parameters_.size());
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      const std::size_t n = parameters_[i].size;
      detail::read_parameter_size(in, who, i, n);
      const std::int64_t step = in.i64("step");
      if (step < 0 || step >= step_limit) {
        state_reader::fail(std::string(who) + ": parameter " + std::to_string(i) + " has step count " +
                           std::to_string(step) + ", allowed range is [0, 2^62)");
      }
      const std::string index = std::to_string(i);
      std::vector<float> m = detail::read_floats(in, n, std::string(who) + ": exp_avg " + index, false);
      std::vector<float> v = detail::read_floats(in, n, std::string(who) + ": exp_avg_sq " + index, true);
      const auto nonzero = [](float x) { return x != 0.0f; };
      if (step == 0 && (std::any_of(m.begin(), m.end(), nonzero) || std::any_of(v.begin(), v.end(), nonzero))) {
        state_reader::fail(std::string(who) + ": parameter " + index + " has non-zero moments at step 0");
      }
      d.steps.push_back(step);
      d.exp_avg.push_back(std::move(m));
      d.exp_avg_sq.push_back(std::move(v));
    }
    return d;
  }

  // Applies a decoded state.  Copies into the buffers add() allocated: nothing allocates.
  // Throws invalid_argument (and changes nothing) if parameters were added since decode().
  void commit(const decoded& d) {
    if (d.steps.size() != parameters_.size()) {
      throw invalid_argument(std::string(who) + ": decoded state of " + std::to_string(d.steps.size()) +
                             " parameters, " + std::to_string(parameters_.size()) + " are registered now");
    }
    options_.lr = d.lr;
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      parameter& p = parameters_[i];
      p.step = d.steps[i];
      std::copy(d.exp_avg[i].begin(), d.exp_avg[i].end(), p.exp_avg.begin());
      std::copy(d.exp_avg_sq[i].begin(), d.exp_avg_sq[i].end(), p.exp_avg_sq.begin());
    }
  }

  // The standalone saved form: the library's frame (magic "MXOPTADW", version 1, CRC-32) around
  // write()'s payload.
  std::vector<std::uint8_t> save_state() const { return detail::framed_state(*this); }

  // All or nothing: throws scaler_state_error and changes nothing unless the whole state loads.
  void load_state(const std::uint8_t* data, std::size_t size) { detail::load_framed_state(*this, data, size, kind); }

 private:
  static constexpr const char* who = "mixprec::optim::adamw";
  static constexpr const char* kind = "adamw";

  struct parameter {
    std::size_t size = 0;
    std::int64_t step = 0;
    std::vector<float> exp_avg, exp_avg_sq;
  };

  // A value that is stored and read back: no compiler may fuse the product that made it into
  // a following addition (Python rounds 1 - lr * weight_decay twice; GCC's default
  // -ffp-contract=fast would otherwise fuse it where the target has FMA).
  static double rounded(double x) noexcept {
    volatile double stored = x;
    return stored;
  }

  // The scalars of step t as Python computes them in _single_tensor_adamw, rounded to float
  // where the kernels take them.
  detail::adamw_scalars scalars(std::int64_t t) const noexcept {
    const adamw_options& o = options_;
    const double lr = o.lr, beta1 = o.beta1, beta2 = o.beta2;
    // state['step'] is a float32 tensor: step_t += 1 saturates at 2^24.
    const double step = static_cast<double>(std::min<std::int64_t>(t, std::int64_t{1} << 24));
    const double bias_correction1 = 1.0 - std::pow(beta1, step);
    const double bias_correction2 = 1.0 - std::pow(beta2, step);
    const double step_size = lr / bias_correction1;
    detail::adamw_scalars s{};
    s.decay = static_cast<float>(1.0 - rounded(lr * static_cast<double>(o.weight_decay)));
    s.beta1 = o.beta1;
    s.one_minus_beta1 = static_cast<float>(1.0 - beta1);
    s.beta2 = o.beta2;
    s.one_minus_beta2 = static_cast<float>(1.0 - beta2);
    s.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
    s.eps = o.eps;
    s.neg_step_size = static_cast<float>(-step_size);
    return s;
  }

  adamw_options options_;
  std::vector<parameter> parameters_;
};

}  // namespace mixprec::optim
