// Scaler state as PyTorch, DeepSpeed and Megatron-LM keep it, for moving a run between them and
// mixprec.  Each struct has the framework's fields under its names; export_* reads a scaler,
// import_* checks the fields, converts them exactly (or refuses with scaler_state_error) and
// restores the scaler (counters and history start afresh).
//
//   torch_grad_scaler_state      GradScaler.state_dict() (torch/amp/grad_scaler.py): the five
//                                keys scale, growth_factor, backoff_factor, growth_interval,
//                                _growth_tracker                    <-> loss_scaler<dynamic_scaling>
//   deepspeed_loss_scaler_state  the attributes of DynamicLossScaler
//                                (deepspeed/runtime/fp16/loss_scaler.py) that update_scale reads
//                                          <-> loss_scaler<hysteresis_scaling>, rules = deepspeed
//   megatron_grad_scaler_state   DynamicGradScaler.state_dict() (megatron/core/optimizer/
//                                grad_scaler.py): scale, growth_tracker, hysteresis_tracker; the
//                                options come from Megatron's arguments, so the scaler's own
//                                policy options are kept  <-> loss_scaler<hysteresis_scaling>, rules = megatron
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "../detail/text.hpp"
#include "errors.hpp"
#include "loss_scaler.hpp"
#include "policies.hpp"

namespace mixprec {

struct torch_grad_scaler_state {
  double scale = 65536;                 // "scale": the float32 scale as a Python float
  double growth_factor = 2;             // "growth_factor"
  double backoff_factor = 0.5;          // "backoff_factor"
  std::int64_t growth_interval = 2000;  // "growth_interval"
  std::int64_t growth_tracker = 0;      // "_growth_tracker"
};

struct deepspeed_loss_scaler_state {
  double cur_scale = 65536;
  std::int64_t cur_iter = 0;
  std::int64_t last_overflow_iter = -1;
  double scale_factor = 2;  // growth_factor; an overflow divides by it
  std::int64_t scale_window = 1000;
  double min_scale = 1;
  std::int64_t delayed_shift = 2;
  std::int64_t cur_hysteresis = 2;
  bool consecutive_hysteresis = false;
  bool raise_error_at_min_scale = false;
};

struct megatron_grad_scaler_state {
  double scale = 65536;  // 'scale': a one-element float32 tensor
  std::int64_t growth_tracker = 0;
  std::int64_t hysteresis_tracker = 2;
};

namespace detail {

[[noreturn]] inline void refuse_import(const char* framework, const std::string& why) {
  throw scaler_state_error(std::string("cannot import ") + framework + " scaler state: " + why);
}

inline int import_int(const char* framework, const char* field, std::int64_t v) {
  if (v < 1 || v > std::numeric_limits<int>::max()) {
    refuse_import(framework, std::string(field) + " is " + std::to_string(v) + ", not in [1, 2^31 - 1]");
  }
  return static_cast<int>(v);
}

// A loss scale: a finite float32 value > 0 (rounded to float32 as the framework's tensor holds it).
inline float import_scale(const char* framework, const char* field, double v) {
  if (!(std::isfinite(v) && v > 0 && v <= static_cast<double>(std::numeric_limits<float>::max()))) {
    refuse_import(framework, std::string(field) + " is " + number_text(v) + ", not a finite float32 > 0");
  }
  return static_cast<float>(v);
}

inline float import_float(const char* framework, const char* field, double v) {
  if (!holds_float(v) || std::isnan(v)) {
    refuse_import(framework, std::string(field) + " is " + number_text(v) + ", not a float32 value");
  }
  return static_cast<float>(v);
}

template <class Policy, class Agreement>
void restore_imported(const char* framework, loss_scaler<Policy, Agreement>& scaler, const Policy& policy,
                      const scale_state& state) {
  try {
    scaler.restore(policy, state);
  } catch (const invalid_argument& e) {
    refuse_import(framework, e.what());
  }
}

}  // namespace detail

template <class Agreement>
torch_grad_scaler_state export_torch_state(const loss_scaler<dynamic_scaling, Agreement>& scaler) {
  const dynamic_scaling& p = scaler.policy();
  return {scaler.state().scale, p.growth_factor, p.backoff_factor, p.growth_interval, scaler.state().growth_tracker};
}

// GradScaler.load_state_dict fills the float32 scale tensor with "scale" (rounding it to
// float32) and takes the rest as they are; it also makes "scale" the init_scale.
template <class Agreement>
void import_torch_state(loss_scaler<dynamic_scaling, Agreement>& scaler, const torch_grad_scaler_state& in) {
  const char* framework = "PyTorch GradScaler";
  const float scale = detail::import_scale(framework, "scale", in.scale);
  dynamic_scaling p = scaler.policy();
  p.init_scale = scale;
  p.growth_factor = in.growth_factor;
  p.backoff_factor = in.backoff_factor;
  p.growth_interval = detail::import_int(framework, "growth_interval", in.growth_interval);
  scale_state s;
  s.scale = scale;
  s.growth_tracker = in.growth_tracker;  // validate_state: in [0, growth_interval)
  detail::restore_imported(framework, scaler, p, s);
}

template <class Agreement>
deepspeed_loss_scaler_state export_deepspeed_state(const loss_scaler<hysteresis_scaling, Agreement>& scaler) {
  const hysteresis_scaling& p = scaler.policy();
  if (p.rules != hysteresis_scaling::rule_set::deepspeed) {
    throw scaler_state_error("export_deepspeed_state: the scaler runs the megatron rule set");
  }
  if (static_cast<double>(p.backoff_factor) * static_cast<double>(p.growth_factor) != 1.0) {
    throw scaler_state_error("export_deepspeed_state: backoff_factor " + detail::number_text(p.backoff_factor) +
                             " is not 1 / growth_factor " + detail::number_text(p.growth_factor) +
                             "; DeepSpeed has one scale_factor");
  }
  const scale_state& s = scaler.state();
  return {s.scale,     s.iteration,  s.last_overflow_iteration, p.growth_factor,          p.growth_interval,
          p.min_scale, p.hysteresis, s.hysteresis_tracker,      p.consecutive_hysteresis, p.raise_at_min_scale};
}

template <class Agreement>
void import_deepspeed_state(loss_scaler<hysteresis_scaling, Agreement>& scaler, const deepspeed_loss_scaler_state& in) {
  const char* framework = "DeepSpeed DynamicLossScaler";
  hysteresis_scaling p = scaler.policy();
  p.rules = hysteresis_scaling::rule_set::deepspeed;
  p.growth_factor = detail::import_float(framework, "scale_factor", in.scale_factor);
  const double backoff = 1.0 / in.scale_factor;
  if (!(in.scale_factor > 1) || !detail::holds_float(backoff) || backoff * in.scale_factor != 1.0) {
    detail::refuse_import(framework, "scale_factor is " + detail::number_text(in.scale_factor) +
                                         ": mixprec backs off by multiplying with 1 / scale_factor, which must be a "
                                         "float32 value with an exact product (a power of two)");
  }
  p.backoff_factor = static_cast<float>(backoff);
  p.growth_interval = detail::import_int(framework, "scale_window", in.scale_window);
  p.hysteresis = detail::import_int(framework, "delayed_shift", in.delayed_shift);
  p.min_scale = detail::import_float(framework, "min_scale", in.min_scale);
  p.consecutive_hysteresis = in.consecutive_hysteresis;
  p.raise_at_min_scale = in.raise_error_at_min_scale;
  p.init_scale = detail::import_scale(framework, "cur_scale", in.cur_scale);  // a fresh start would begin here
  if (in.cur_scale < in.min_scale) {
    detail::refuse_import(framework, "cur_scale " + detail::number_text(in.cur_scale) + " is below min_scale " +
                                         detail::number_text(in.min_scale));
  }
  // The counters are checked before growth_tracker is computed from them (the difference of two
  // arbitrary int64 values can overflow).
  if (in.cur_iter < 0 || in.cur_iter >= detail::state_counter_limit) {
    detail::refuse_import(framework, "cur_iter is " + std::to_string(in.cur_iter) + ", not in [0, 2^62)");
  }
  if (in.last_overflow_iter < -1 || in.last_overflow_iter >= in.cur_iter) {
    detail::refuse_import(framework, "last_overflow_iter is " + std::to_string(in.last_overflow_iter) +
                                         ", not in [-1, cur_iter " + std::to_string(in.cur_iter) + ")");
  }
  scale_state s;
  s.scale = in.cur_scale;
  s.iteration = in.cur_iter;
  s.last_overflow_iteration = in.last_overflow_iter;
  s.hysteresis_tracker = in.cur_hysteresis;
  s.growth_tracker = in.cur_iter - in.last_overflow_iter - 1;
  detail::restore_imported(framework, scaler, p, s);
}

template <class Agreement>
megatron_grad_scaler_state export_megatron_state(const loss_scaler<hysteresis_scaling, Agreement>& scaler) {
  if (scaler.policy().rules != hysteresis_scaling::rule_set::megatron) {
    throw scaler_state_error("export_megatron_state: the scaler runs the deepspeed rule set");
  }
  const scale_state& s = scaler.state();
  return {s.scale, s.growth_tracker, s.hysteresis_tracker};
}

// The scaler's policy options stay (Megatron-LM keeps them in its arguments, not its state);
// the rule set must already be megatron.
template <class Agreement>
void import_megatron_state(loss_scaler<hysteresis_scaling, Agreement>& scaler, const megatron_grad_scaler_state& in) {
  const char* framework = "Megatron-LM DynamicGradScaler";
  if (scaler.policy().rules != hysteresis_scaling::rule_set::megatron) {
    detail::refuse_import(framework, "the scaler runs the deepspeed rule set; set rules = megatron first");
  }
  if (!std::isfinite(in.scale)) {
    detail::refuse_import(framework, "scale is " + detail::number_text(in.scale) +
                                         " (the scale grew past float32: the run cannot go on from it)");
  }
  scale_state s;
  s.scale = detail::import_float(framework, "scale", in.scale);
  s.growth_tracker = in.growth_tracker;
  s.hysteresis_tracker = in.hysteresis_tracker;
  detail::restore_imported(framework, scaler, scaler.policy(), s);
}

}  // namespace mixprec
