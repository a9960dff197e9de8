// Loss-scaling policies (DESIGN.md, "Loss scaling"): plain structs of options, each with the
// update rule it names.  loss_scaler<Policy> (loss_scaler.hpp) runs them.
//
//   static_scaling      a fixed scale
//   dynamic_scaling     PyTorch GradScaler, exactly
//   hysteresis_scaling  DeepSpeed DynamicLossScaler or Megatron-LM DynamicGradScaler, exactly
//   no_scaling          scale 1; non-finite gradients are still detected and the step skipped
//
// The Policy concept.  A policy is a copyable struct with
//
//   static constexpr const char* name;                  // identifies the rule in saved state
//   scale_state initial_state() const;                  // the state before the first update
//   void update(scale_state& state, bool found_inf) const;
//       // one iteration of the rule: found_inf says whether any gradient of the iteration was
//       // inf or NaN (on any process).  It may change scale and the two trackers, and reads
//       // iteration / last_overflow_iteration, which the scaler advances after it
//       // (detail::apply_update, update_rule.hpp).  It may throw (scale_floor_error); the
//       // scaler then keeps its previous state.
//
// and optionally
//
//   bool try_update(scale_state& state, bool found_inf) const;  // the same rule, refusing
//                                                               // (false, nothing changed)
//                                                               // where update() would throw
//
//   void validate() const;                              // throws invalid_argument on bad options
//   void validate_state(const scale_state&) const;      // throws invalid_argument on a state the
//                                                       // rule cannot reach (checked on load)
//   template <class F> void visit_options(F&& f);       // f("key", field) for each option
//                                                       // (float, double, int, bool or enum):
//                                                       // saved with the state, restored on load
//
// The device-resident scaler (cuda/loss_scaler.cuh) runs the rule on the GPU: there, update
// (or try_update) must be MIXPREC_HOST_DEVICE and must not throw, as the rules below are.
//
// A custom policy is a few lines (tests/scaling/loss_scaler_test.cpp has one).  The safety
// rails of scaler_options (min/max scale, what happens at the floor, a limit on consecutive
// skips) apply to every policy, custom ones included.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "../config.hpp"
#include "../detail/bits.hpp"
#include "../errors.hpp"
#include "../detail/text.hpp"
#include "errors.hpp"

namespace mixprec {

// Everything a rule remembers between iterations.  The scale is held in double because
// DeepSpeed keeps it in a Python float (a double); PyTorch's and Megatron-LM's rules round
// every new scale to float, as their float32 tensors do.
struct scale_state {
  double scale = 1;
  std::int64_t growth_tracker = 0;            // clean updates since the last growth or overflow
  std::int64_t hysteresis_tracker = 0;        // overflows still absorbed before a back-off
  std::int64_t iteration = 0;                 // updates applied so far (DeepSpeed's cur_iter)
  std::int64_t last_overflow_iteration = -1;  // iteration of the last overflow (DeepSpeed's last_overflow_iter)

  friend bool operator==(const scale_state& a, const scale_state& b) {
    return a.scale == b.scale && a.growth_tracker == b.growth_tracker && a.hysteresis_tracker == b.hysteresis_tracker &&
           a.iteration == b.iteration && a.last_overflow_iteration == b.last_overflow_iteration;
  }
  friend bool operator!=(const scale_state& a, const scale_state& b) { return !(a == b); }
};

namespace detail {

// The trackers and iteration counters of a state stay within ±2^62, so that the rules' sums and
// differences of two of them never overflow an int64.
constexpr std::int64_t state_counter_limit = std::int64_t{1} << 62;

inline void require_state(bool ok, const char* policy, const std::string& what) {
  if (!ok) throw invalid_argument(std::string(policy) + ": state has " + what);
}

// Whether x is a float32 value (NaN and ±inf included).  A finite double beyond float's range is
// not converted at all: that conversion is undefined behaviour in C++ ([conv.double]).
inline bool holds_float(double x) {
  if (std::isnan(x) || std::isinf(x)) return true;
  if (std::fabs(x) > static_cast<double>(std::numeric_limits<float>::max())) return false;
  return static_cast<double>(static_cast<float>(x)) == x;
}

// std::isfinite for the rules, which also run in device code.
MIXPREC_HOST_DEVICE inline bool is_finite(float x) noexcept {
  return (bit_cast<std::uint32_t>(x) & 0x7F80'0000u) != 0x7F80'0000u;
}

inline void require_option(bool ok, const char* policy, const char* what, double value, const char* limit) {
  if (!ok) {
    throw invalid_argument(std::string(policy) + ": " + what + " is " + number_text(value) + ", it must be " + limit);
  }
}

}  // namespace detail

// A fixed scale: the step is skipped on inf/NaN, the scale never moves.
struct static_scaling {
  static constexpr const char* name = "static_scaling";
  float scale = 1;

  scale_state initial_state() const {
    scale_state s;
    s.scale = scale;
    return s;
  }
  MIXPREC_HOST_DEVICE void update(scale_state&, bool) const noexcept {}
  void validate() const {
    detail::require_option(std::isfinite(scale) && scale > 0, name, "scale", scale, "finite and > 0");
  }
  void validate_state(const scale_state& s) const {
    detail::require_state(s.scale == static_cast<double>(scale), name,
                          "scale " + detail::number_text(s.scale) + ", the option says " + detail::number_text(scale));
    detail::require_state(s.growth_tracker == 0 && s.hysteresis_tracker == 0, name, "non-zero trackers");
  }
  template <class F>
  void visit_options(F&& f) {
    f("scale", scale);
  }
};

// The bf16 recipe: no scaling (unscale only checks, it never multiplies), but a non-finite
// gradient still skips the step.
struct no_scaling {
  static constexpr const char* name = "no_scaling";

  scale_state initial_state() const { return scale_state{}; }
  MIXPREC_HOST_DEVICE void update(scale_state&, bool) const noexcept {}
  void validate_state(const scale_state& s) const {
    detail::require_state(s.scale == 1, name, "scale " + detail::number_text(s.scale) + ", not 1");
    detail::require_state(s.growth_tracker == 0 && s.hysteresis_tracker == 0, name, "non-zero trackers");
  }
};

// PyTorch's GradScaler (torch/amp/grad_scaler.py, GradScaler.update), whose rule is
// _amp_update_scale_ (aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp,
// _amp_update_scale_cpu_kernel; aten/src/ATen/native/cuda/AmpKernels.cu,
// amp_update_scale_cuda_kernel).  The factors are double because the kernel takes them as
// double and multiplies the float scale by them in double before rounding to float.
struct dynamic_scaling {
  static constexpr const char* name = "dynamic_scaling";
  float init_scale = 65536;
  double growth_factor = 2;
  double backoff_factor = 0.5;
  int growth_interval = 2000;

  scale_state initial_state() const {
    scale_state s;
    s.scale = init_scale;
    return s;
  }

  MIXPREC_HOST_DEVICE void update(scale_state& s, bool found_inf) const noexcept {
    const auto current = static_cast<float>(s.scale);
    if (found_inf) {
      // Back off and restart the count of clean steps; nothing keeps the scale above zero.
      s.scale = static_cast<float>(static_cast<double>(current) * backoff_factor);
      s.growth_tracker = 0;
      return;
    }
    // The tracker counts this clean step before the comparison: growth after exactly
    // growth_interval consecutive clean updates, and only to a finite scale.
    const std::int64_t successful = s.growth_tracker + 1;
    if (successful == growth_interval) {
      const auto grown = static_cast<float>(static_cast<double>(current) * growth_factor);
      if (detail::is_finite(grown)) s.scale = grown;
      s.growth_tracker = 0;
    } else {
      s.growth_tracker = successful;
    }
  }

  // GradScaler.__init__ asserts growth_factor > 1 and backoff_factor < 1; mixprec also
  // rejects what would make the scale zero, negative or non-finite at once.
  void validate() const {
    detail::require_option(std::isfinite(init_scale) && init_scale > 0, name, "init_scale", init_scale,
                           "finite and > 0");
    detail::require_option(std::isfinite(growth_factor) && growth_factor > 1, name, "growth_factor", growth_factor,
                           "finite and > 1");
    detail::require_option(backoff_factor > 0 && backoff_factor < 1, name, "backoff_factor", backoff_factor,
                           "in (0, 1)");
    detail::require_option(growth_interval >= 1, name, "growth_interval", growth_interval, ">= 1");
  }

  // The scale is a float32 value >= 0 (a back-off can underflow to 0; growth never reaches
  // infinity), the tracker in [0, growth_interval).
  void validate_state(const scale_state& s) const {
    detail::require_state(std::isfinite(s.scale) && s.scale >= 0 && detail::holds_float(s.scale), name,
                          "scale " + detail::number_text(s.scale) + ", not a finite float >= 0");
    detail::require_state(s.growth_tracker >= 0 && s.growth_tracker < growth_interval, name,
                          "growth_tracker " + std::to_string(s.growth_tracker) + ", not in [0, growth_interval " +
                              std::to_string(growth_interval) + ")");
    detail::require_state(s.hysteresis_tracker == 0, name,
                          "hysteresis_tracker " + std::to_string(s.hysteresis_tracker));
  }

  template <class F>
  void visit_options(F&& f) {
    f("init_scale", init_scale);
    f("growth_factor", growth_factor);
    f("backoff_factor", backoff_factor);
    f("growth_interval", growth_interval);
  }
};

// Dynamic scaling with hysteresis: a number of overflows is absorbed before the scale backs
// off.  Two reference rule sets, chosen by `rules`:
//
//   deepspeed  DynamicLossScaler.update_scale (deepspeed/runtime/fp16/loss_scaler.py).
//              growth_interval is loss_scale_window, hysteresis is delayed_shift.  The scale is
//              a double there and here.  DeepSpeed divides by its one scale_factor on overflow;
//              this rule multiplies by backoff_factor, the same bits whenever backoff_factor is
//              exactly 1 / growth_factor (the default 0.5 and 2; any power of two).
//   megatron   DynamicGradScaler.update (megatron/core/optimizer/grad_scaler.py).  Its factors
//              and min_scale are float32 tensors: the arithmetic here is float, as there.
//
// Neither reference guards the scale against growing to infinity; scaler_options adds that,
// off by default so that these modes stay exact.
struct hysteresis_scaling {
  static constexpr const char* name = "hysteresis_scaling";
  enum class rule_set { deepspeed, megatron };
  rule_set rules = rule_set::megatron;
  float init_scale = 65536;
  float growth_factor = 2;
  float backoff_factor = 0.5;
  int growth_interval = 1000;  // DeepSpeed loss_scale_window
  int hysteresis = 2;          // DeepSpeed delayed_shift
  float min_scale = 1;
  bool consecutive_hysteresis = false;  // DeepSpeed only
  bool raise_at_min_scale = false;      // DeepSpeed's raise_error_at_min_scale

  scale_state initial_state() const {
    scale_state s;
    s.scale = init_scale;
    s.hysteresis_tracker = hysteresis;  // DeepSpeed cur_hysteresis = delayed_shift; Megatron _hysteresis_tracker
    return s;
  }

  // Throws scale_floor_error where DeepSpeed raises (raise_at_min_scale), changing nothing.
  void update(scale_state& s, bool found_inf) const {
    if (!try_update(s, found_inf)) {
      throw scale_floor_error(std::string(name) + " (deepspeed): overflow at loss scale " +
                              detail::number_text(s.scale) + ", which is already min_scale " +
                              detail::number_text(min_scale) + " (raise_at_min_scale is set)");
    }
  }
  // The rule without throwing: false (and nothing changed) where update() throws.
  MIXPREC_HOST_DEVICE bool try_update(scale_state& s, bool found_inf) const noexcept {
    if (rules == rule_set::deepspeed) return update_deepspeed(s, found_inf);
    update_megatron(s, found_inf);
    return true;
  }

  void validate() const {
    detail::require_option(rules == rule_set::deepspeed || rules == rule_set::megatron, name, "rules",
                           static_cast<double>(static_cast<int>(rules)), "deepspeed (0) or megatron (1)");
    detail::require_option(std::isfinite(init_scale) && init_scale > 0, name, "init_scale", init_scale,
                           "finite and > 0");
    detail::require_option(std::isfinite(growth_factor) && growth_factor > 1, name, "growth_factor", growth_factor,
                           "finite and > 1");
    detail::require_option(backoff_factor > 0 && backoff_factor < 1, name, "backoff_factor", backoff_factor,
                           "in (0, 1)");
    detail::require_option(growth_interval >= 1, name, "growth_interval", growth_interval, ">= 1");
    detail::require_option(hysteresis >= 1, name, "hysteresis", hysteresis, ">= 1");
    detail::require_option(std::isfinite(min_scale) && min_scale > 0, name, "min_scale", min_scale, "finite and > 0");
    // Megatron-LM asserts min_scale <= initial_scale; DeepSpeed would clamp at once.
    detail::require_option(min_scale <= init_scale, name, "min_scale", min_scale, "<= init_scale");
  }

  // Both rules keep the scale >= min_scale (it may reach infinity: neither guards growth).
  // deepspeed: hysteresis_tracker in [1, hysteresis], growth_tracker = clean updates since the
  // last overflow; megatron: a float32 scale, growth_tracker in [0, growth_interval),
  // hysteresis_tracker <= hysteresis (it goes below zero while overflows continue).
  void validate_state(const scale_state& s) const {
    detail::require_state(
        !std::isnan(s.scale) && s.scale >= static_cast<double>(min_scale), name,
        "scale " + detail::number_text(s.scale) + ", below min_scale " + detail::number_text(min_scale));
    detail::require_state(s.hysteresis_tracker <= hysteresis, name,
                          "hysteresis_tracker " + std::to_string(s.hysteresis_tracker) + ", above hysteresis " +
                              std::to_string(hysteresis));
    if (rules == rule_set::deepspeed) {
      detail::require_state(s.hysteresis_tracker >= 1, name,
                            "hysteresis_tracker " + std::to_string(s.hysteresis_tracker) + ", below 1 (deepspeed)");
      detail::require_state(s.growth_tracker == s.iteration - s.last_overflow_iteration - 1, name,
                            "growth_tracker " + std::to_string(s.growth_tracker) +
                                ", not the clean updates since the last overflow (deepspeed)");
    } else {
      detail::require_state(detail::holds_float(s.scale), name,
                            "scale " + detail::number_text(s.scale) + ", not a float32 value (megatron)");
      detail::require_state(s.growth_tracker >= 0 && s.growth_tracker < growth_interval, name,
                            "growth_tracker " + std::to_string(s.growth_tracker) + ", not in [0, growth_interval " +
                                std::to_string(growth_interval) + ")");
    }
  }

  template <class F>
  void visit_options(F&& f) {
    f("rules", rules);
    f("init_scale", init_scale);
    f("growth_factor", growth_factor);
    f("backoff_factor", backoff_factor);
    f("growth_interval", growth_interval);
    f("hysteresis", hysteresis);
    f("min_scale", min_scale);
    f("consecutive_hysteresis", consecutive_hysteresis);
    f("raise_at_min_scale", raise_at_min_scale);
  }

 private:
  // deepspeed/runtime/fp16/loss_scaler.py, DynamicLossScaler.update_scale.
  MIXPREC_HOST_DEVICE bool update_deepspeed(scale_state& s, bool found_inf) const noexcept {
    if (found_inf) {
      if (hysteresis == 1 || s.hysteresis_tracker == 1) {
        // DeepSpeed raises here, before anything changes (cur_iter is not advanced either).
        if (s.scale == static_cast<double>(min_scale) && raise_at_min_scale) return false;
        const double backed_off =
            s.scale *
            static_cast<double>(backoff_factor);  // std::max(backed_off, min_scale): not callable on the device
        s.scale = backed_off < static_cast<double>(min_scale) ? static_cast<double>(min_scale) : backed_off;
      } else {
        s.hysteresis_tracker -= 1;
      }
      s.growth_tracker = 0;
      return true;
    }
    if (consecutive_hysteresis) s.hysteresis_tracker = hysteresis;
    // Clean updates before this one since the last overflow; the first growth comes after
    // growth_interval + 1 clean updates (growth_interval of them from the start of training).
    const std::int64_t stable_interval = (s.iteration - s.last_overflow_iteration) - 1;
    if (stable_interval > 0 && stable_interval % growth_interval == 0) {
      if (!consecutive_hysteresis) s.hysteresis_tracker = hysteresis;
      s.scale *= static_cast<double>(growth_factor);
    }
    s.growth_tracker += 1;  // informational here: clean updates since the last overflow
    return true;
  }

  // megatron/core/optimizer/grad_scaler.py, DynamicGradScaler.update.
  MIXPREC_HOST_DEVICE void update_megatron(scale_state& s, bool found_inf) const noexcept {
    const auto current = static_cast<float>(s.scale);
    if (found_inf) {
      // Every overflow restarts the growth count and uses up hysteresis; once it is used up,
      // every further overflow backs off (the tracker keeps going down until a growth).
      s.growth_tracker = 0;
      s.hysteresis_tracker -= 1;
      if (s.hysteresis_tracker <= 0) {
        const float backed_off =
            current * backoff_factor;  // std::max(backed_off, min_scale): not callable on the device
        s.scale = backed_off < min_scale ? min_scale : backed_off;
      }
      return;
    }
    s.growth_tracker += 1;
    if (s.growth_tracker == growth_interval) {
      // Hysteresis refills only here, on growth.
      s.growth_tracker = 0;
      s.hysteresis_tracker = hysteresis;
      s.scale = current * growth_factor;
    }
  }
};

constexpr const char* to_string(hysteresis_scaling::rule_set r) noexcept {
  return r == hysteresis_scaling::rule_set::deepspeed ? "deepspeed" : "megatron";
}

namespace detail {

template <class Policy, class = void>
struct has_validate : std::false_type {};
template <class Policy>
struct has_validate<Policy, std::void_t<decltype(std::declval<const Policy&>().validate())>> : std::true_type {};

struct option_probe {
  template <class T>
  void operator()(const char*, T&) const {}
};
template <class Policy, class = void>
struct has_options : std::false_type {};
template <class Policy>
struct has_options<Policy, std::void_t<decltype(std::declval<Policy&>().visit_options(option_probe{}))>>
    : std::true_type {};

template <class Policy, class = void>
struct has_validate_state : std::false_type {};
template <class Policy>
struct has_validate_state<
    Policy, std::void_t<decltype(std::declval<const Policy&>().validate_state(std::declval<const scale_state&>()))>>
    : std::true_type {};

}  // namespace detail

template <class Policy>
void validate_policy(const Policy& policy) {
  if constexpr (detail::has_validate<Policy>::value) policy.validate();
}

// The checks every state passes (counters in range, the last overflow before now), then the
// policy's own.  Throws invalid_argument.
template <class Policy>
void validate_scale_state(const Policy& policy, const scale_state& s) {
  constexpr std::int64_t limit = detail::state_counter_limit;
  const auto in_range = [](std::int64_t v) { return v > -limit && v < limit; };
  detail::require_state(in_range(s.growth_tracker) && in_range(s.hysteresis_tracker) && in_range(s.iteration),
                        Policy::name, "a tracker or the iteration beyond +-2^62");
  detail::require_state(!std::isnan(s.scale) && s.scale >= 0, Policy::name, "scale " + detail::number_text(s.scale));
  detail::require_state(s.iteration >= 0, Policy::name, "iteration " + std::to_string(s.iteration));
  detail::require_state(s.last_overflow_iteration >= -1 && s.last_overflow_iteration < s.iteration, Policy::name,
                        "last_overflow_iteration " + std::to_string(s.last_overflow_iteration) +
                            " outside [-1, iteration " + std::to_string(s.iteration) + ")");
  if constexpr (detail::has_validate_state<Policy>::value) policy.validate_state(s);
}

}  // namespace mixprec
