// The state a device-resident loss scaler keeps in GPU memory, and the one update step its update
// kernel runs (cuda/loss_scaler.cuh).  Plain __host__ __device__ C++: the step is
// detail::apply_update (scaling/update_rule.hpp), the code loss_scaler::update() runs on the
// host, plus what the device does instead of throwing; tests/cuda/device_scaler_step_test.cpp
// runs it on the CPU against the host loss_scaler.
#pragma once

#include <cstdint>
#include <string>

#include "../../scaling/errors.hpp"
#include "../../scaling/update_rule.hpp"

namespace mixprec::gpu {

// What stopped a device scaler (it then freezes: later updates change nothing until the host
// reads the error with device_loss_scaler::check(), which throws what loss_scaler throws).
enum class device_scaler_error : std::uint32_t {
  none = 0,
  skip_limit = 1,      // scaler_options::max_consecutive_skips reached (skip_limit_error)
  policy_refused = 2,  // hysteresis_scaling's raise_at_min_scale (scale_floor_error)
  nan_scale = 3,       // the policy produced a NaN scale (scaling_error)
  floor_reached = 4,   // an overflow at min_scale with floor_action::throw_error (scale_floor_error)
};

namespace detail {

// In device memory.  scale and inv_scale are what kernels read: the float scale and
// float(1.0 / double(scale)), as loss_scaler::get_scale() and get_inv_scale().
struct device_scaler_state {
  float scale;
  float inv_scale;
  scale_state state;
  scaler_counters counters;
  device_scaler_error error;
  std::int64_t error_iteration;  // state.iteration when the error was recorded
};

struct device_update_options {
  mixprec::detail::update_limits limits;
  bool throw_at_floor;  // floor_action::throw_error (else clamp)
};

MIXPREC_HOST_DEVICE inline void publish_scale(device_scaler_state& d) noexcept {
  d.scale = static_cast<float>(d.state.scale);
  d.inv_scale = static_cast<float>(1.0 / static_cast<double>(d.scale));
}

// One update: reads the optimizers' found_inf flags (float, non-zero: inf/NaN seen), applies
// the rule and the rails, publishes the new scale and clears the flags for the next iteration.
// After an error nothing changes (the flags stay, to show what the failing iteration saw).
MIXPREC_HOST_DEVICE_CALLS_CALLER_FUNCTION
template <class TryUpdate>
MIXPREC_HOST_DEVICE void device_update_step(TryUpdate&& try_update, device_scaler_state& d, float* found_inf,
                                            int optimizers, const device_update_options& options) {
  if (d.error != device_scaler_error::none) return;
  bool found = false;
  std::int64_t overflowed = 0;
  for (int i = 0; i < optimizers; ++i) {
    if (found_inf[i] != 0.0f) {
      found = true;
      ++overflowed;
    }
  }
  const mixprec::detail::update_result r =
      mixprec::detail::apply_update(try_update, d.state, d.counters, found, overflowed, options.limits);
  device_scaler_error error = device_scaler_error::none;
  switch (r.status) {
    case mixprec::detail::update_status::skip_limit:
      error = device_scaler_error::skip_limit;
      break;
    case mixprec::detail::update_status::policy_refused:
      error = device_scaler_error::policy_refused;
      break;
    case mixprec::detail::update_status::nan_scale:
      error = device_scaler_error::nan_scale;
      break;
    case mixprec::detail::update_status::applied:
      if (r.at_floor && options.throw_at_floor) error = device_scaler_error::floor_reached;
      break;
  }
  if (error != device_scaler_error::none) {
    d.error = error;
    d.error_iteration = d.state.iteration;
    return;
  }
  d.state = r.state;
  d.counters = r.counters;
  publish_scale(d);
  for (int i = 0; i < optimizers; ++i) found_inf[i] = 0.0f;
}

// The exception loss_scaler::update() throws for the same event, with its message and where the
// device stopped.  Host code (device_loss_scaler::check()).
inline void throw_device_scaler_error(const device_scaler_state& d, const device_update_options& options,
                                      const char* policy_name) {
  using mixprec::detail::number_text;
  const std::string where = " (device scaler, stopped at iteration " + std::to_string(d.error_iteration) + ")";
  switch (d.error) {
    case device_scaler_error::none:
      return;
    case device_scaler_error::skip_limit:
      throw skip_limit_error(std::to_string(d.counters.consecutive_skips + 1) +
                             " consecutive skipped steps reached scaler_options::max_consecutive_skips = " +
                             std::to_string(options.limits.max_consecutive_skips) + " at loss scale " +
                             number_text(d.state.scale) + where);
    case device_scaler_error::policy_refused:
      throw scale_floor_error(std::string(policy_name) + ": overflow at loss scale " + number_text(d.state.scale) +
                              ", which is already the policy's min_scale (raise_at_min_scale is set)" + where);
    case device_scaler_error::nan_scale:
      throw scaling_error(std::string(policy_name) + ": the policy turned scale " + number_text(d.state.scale) +
                          " into NaN" + where);
    case device_scaler_error::floor_reached:
      throw scale_floor_error("overflow at the floor: loss scale " + number_text(d.state.scale) +
                              " is already at the floor " + number_text(options.limits.min_scale) +
                              " (floor_action::throw_error)" + where);
  }
  throw scaling_error("device scaler: unknown error code " + std::to_string(static_cast<std::uint32_t>(d.error)) +
                      where);
}

}  // namespace detail
}  // namespace mixprec::gpu
