// Delayed scaling, the fp8 recipe of Transformer Engine (TE) (transformer_engine/common/recipe/
// __init__.py, class DelayedScaling): each tensor is quantised with a scale chosen from the
// amaxes (largest magnitudes) it had in earlier steps, so the quantisation needs no pass over
// the data before it.  The options and their defaults are TE's:
//
//   margin             0      scale = (fp8_max / amax) / 2^margin
//   format             hybrid e4m3 forward, e5m2 backward (scaling/fp8/format.hpp)
//   amax_history_len   1024   amaxes remembered per tensor
//   amax_compute_algo  max    the amax the scale comes from: the largest in the history (max),
//                             this step's (most_recent), or amax_function(history, length)
//
// The history of one tensor is amax_history_len floats.  Slot 0 is the current step's: every
// quantisation of the tensor raises it to its amax, and the update at the end of the step
// rolls the history (slot i takes slot i + 1, the last slot takes slot 0) and clears slot 0.
// After an update slot L-1 holds the previous step's amax, slot L-2 the one before, ..., slot 1
// the oldest.  The exact rules (delayed_update_fused, delayed_update_unfused below) are TE's:
//
//   max / most_recent   TE's fused kernel (recipe/delayed_scaling.cu,
//                       amax_and_scale_update_impl::kernel_bulk, called through
//                       amax_and_scale_update_after_reduction): a tensor whose slot 0 is 0
//                       (it saw no data this step) neither rolls nor changes its scale;
//                       otherwise amax = fmaxf over the window (slot 0 and slots 1..L-1, so a
//                       NaN in it is ignored), scale = delayed_scale_from_amax(amax, ...)
//   amax_function       TE's Python path (transformer_engine/pytorch, _amax_and_scale_update:
//                       _compute_amax_and_update_history, _update_amax_history,
//                       _default_sf_compute), which TE takes for a callable: amax =
//                       amax_function(history), then the history always rolls, and the scale
//                       is delayed_scale_from_amax_unfused(amax, ...)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <string>

#include "../../errors.hpp"
#include "../../detail/text.hpp"
#include "format.hpp"
#include "scale_rules.hpp"

namespace mixprec {

enum class amax_algorithm { max, most_recent, custom };

constexpr const char* to_string(amax_algorithm a) noexcept {
  switch (a) {
    case amax_algorithm::max:
      return "max";
    case amax_algorithm::most_recent:
      return "most_recent";
    case amax_algorithm::custom:
      return "custom";
  }
  return "invalid amax_algorithm";
}

// Limits that keep every scale and its inverse finite and non-zero.  The scale is at least
// fp8_max × 2^-margin / FLT_MAX (amax <= FLT_MAX); requiring fp8_max × 2^-margin >= 4 = 2^2 keeps
// it at least 2^-126, so 1 / scale <= 2^126 (a smaller scale would make scale_inv infinite and
// dequantised zeros NaN).  That is margin <= 6 where e4m3 is used (448 × 2^-6 = 7), <= 13 for
// e5m2 alone.  margin >= -100 keeps fp8_max × 2^-margin below 2^116.  The history length bounds
// the size of a saved state.
constexpr int delayed_scaling_margin_min = -100;
constexpr float delayed_scaling_scaled_max_min = 4.0f;
constexpr int delayed_scaling_history_limit = 1 << 16;

struct delayed_scaling {
  static constexpr const char* name = "delayed_scaling";
  int margin = 0;
  fp8_format format = fp8_format::hybrid;
  int amax_history_len = 1024;
  amax_algorithm amax_compute_algo = amax_algorithm::max;
  // With amax_compute_algo == custom: the amax of one tensor from its history (length floats,
  // slot 0 = this step's).  Not saved with the state.
  std::function<float(const float* history, std::size_t length)> amax_function;

  void validate() const {
    const auto fail = [](const std::string& what) { throw invalid_argument(std::string(name) + ": " + what); };
    if (format != fp8_format::e4m3 && format != fp8_format::e5m2 && format != fp8_format::hybrid) {
      fail("format is " + std::to_string(static_cast<int>(format)) + ", not an fp8_format");
    }
    if (margin < delayed_scaling_margin_min || margin > -delayed_scaling_margin_min) {
      fail("margin is " + std::to_string(margin) + ", outside [" + std::to_string(delayed_scaling_margin_min) +
           ", 6] (13 with e5m2 alone)");
    }
    for (const fp8_pass pass : {fp8_pass::forward, fp8_pass::backward}) {
      if (scaled_max(pass) < delayed_scaling_scaled_max_min) {
        fail("margin is " + std::to_string(margin) + ": fp8_max × 2^-margin is " +
             detail::number_text(scaled_max(pass)) + " for " + to_string(element_of(format, pass)) +
             ", below 4, so 1 / scale could overflow (margin <= 6 with e4m3, <= 13 with e5m2 alone)");
      }
    }
    if (amax_history_len < 1 || amax_history_len > delayed_scaling_history_limit) {
      fail("amax_history_len is " + std::to_string(amax_history_len) + ", it must be in [1, " +
           std::to_string(delayed_scaling_history_limit) + "]");
    }
    if (amax_compute_algo != amax_algorithm::max && amax_compute_algo != amax_algorithm::most_recent &&
        amax_compute_algo != amax_algorithm::custom) {
      fail("amax_compute_algo is " + std::to_string(static_cast<int>(amax_compute_algo)) + ", not an amax_algorithm");
    }
    if (amax_compute_algo == amax_algorithm::custom && !amax_function) {
      fail("amax_compute_algo is custom but amax_function is empty");
    }
  }

  // The options saved with the state (the amax function is code, not data).
  template <class F>
  void visit_options(F&& f) {
    f("margin", margin);
    f("format", format);
    f("amax_history_len", amax_history_len);
    f("amax_compute_algo", amax_compute_algo);
  }

  // fp8_max × 2^-margin for the element type of a pass.
  float scaled_max(fp8_pass pass) const noexcept {
    return delayed_scaled_max(fp8_max(element_of(format, pass)), margin);
  }
};

namespace detail {

// TE's fused update of one tensor (kernel_bulk): rolls `history` unless slot 0 is 0 and returns
// the new scale.  The loop is the kernel's, one element per iteration instead of one per thread:
// element i takes slot i + 1 (slot 0 for the last), slot 0 becomes 0, and amax is the fmaxf
// of everything read, starting from 0 (so NaNs drop out, and amax stays 0 without a roll).
inline float delayed_update_fused(float* history, std::size_t length, amax_algorithm algorithm, float previous_scale,
                                  float scaled_max) noexcept {
  const float last_amax = history[0];
  float amax = 0.0f;
  if (last_amax != 0.0f) {
    for (std::size_t i = 0; i < length; ++i) {
      const float a = i < length - 1 ? history[i + 1] : last_amax;
      amax = std::fmax(amax, a);
      history[i] = i > 0 ? a : 0.0f;
    }
  }
  if (algorithm == amax_algorithm::most_recent) amax = last_amax;
  return delayed_scale_from_amax(amax, previous_scale, scaled_max);
}

// TE's Python update of one tensor (_amax_and_scale_update with a callable amax_compute_algo),
// given amax = amax_function(history) computed beforehand on the history as it stands:
// torch.roll(history, -1) and slot 0 = 0, always, then the scale.
inline float delayed_update_unfused(float* history, std::size_t length, float amax, const delayed_scaling& recipe,
                                    fp8_pass pass, float previous_scale) noexcept {
  std::rotate(history, history + 1, history + length);
  history[0] = 0.0f;
  return delayed_scale_from_amax_unfused(amax, previous_scale, fp8_max(element_of(recipe.format, pass)),
                                         static_cast<float>(power_of_two(recipe.margin)));
}

}  // namespace detail
}  // namespace mixprec
