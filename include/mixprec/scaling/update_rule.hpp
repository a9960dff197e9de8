// One update of a loss scaler, as a pure function of its state: the counters, the skip limit, the
// policy's rule, the iteration bookkeeping, the bounds and the floor.  loss_scaler::update() (on
// the host) and the device-resident scaler's update kernel (cuda/loss_scaler.cuh) both call it,
// so that the two follow one implementation step for step.
//
// It is __host__ __device__ and decides without throwing: what needs a decision the device
// cannot make (throwing, calling a floor handler) comes back in update_result, and the caller
// acts on it (loss_scaler throws or calls the handler; the device scaler records an error code).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "../config.hpp"
#include "policies.hpp"
#include "statistics.hpp"

namespace mixprec::detail {

// The rails of scaler_options that the update applies itself.
struct update_limits {
  float min_scale = 0;
  float max_scale = std::numeric_limits<float>::infinity();
  std::int64_t max_consecutive_skips = 0;  // 0: no limit
};

enum class update_status : unsigned char {
  applied,         // the new state is in update_result (a floor clamp included)
  skip_limit,      // max_consecutive_skips reached: nothing may change
  policy_refused,  // the policy refused (hysteresis_scaling's raise_at_min_scale): nothing may change
  nan_scale,       // the policy produced a NaN scale: nothing may change
};

struct update_result {
  scale_state state;
  scaler_counters counters;
  double proposed_scale = 0;  // the scale before the floor rule (what a floor handler is told)
  scale_change_reason reason = scale_change_reason::backoff;
  bool at_floor = false;  // an overflow at min_scale: state.scale is min_scale (the clamp)
  update_status status = update_status::applied;
};

// The counters after one iteration that found inf/NaN (found) in `overflowed_checks` of its
// checks (one per optimizer).
MIXPREC_HOST_DEVICE constexpr scaler_counters count_step(scaler_counters c, bool found,
                                                         std::int64_t overflowed_checks) noexcept {
  ++c.steps;
  if (found) {
    ++c.skipped_steps;
    ++c.consecutive_skips;
    if (c.consecutive_skips > c.longest_skip_run) c.longest_skip_run = c.consecutive_skips;
  } else {
    c.consecutive_skips = 0;
  }
  c.overflow_count += overflowed_checks;
  return c;
}

// The policy's rule: try_update where the policy has one (it may refuse and change nothing),
// else update.  Host code; the device scaler has its own __device__ twin.
template <class Policy, class = void>
struct has_try_update : std::false_type {};
template <class Policy>
struct has_try_update<
    Policy, std::void_t<decltype(std::declval<const Policy&>().try_update(std::declval<scale_state&>(), true))>>
    : std::true_type {};

template <class Policy>
bool try_policy_update(const Policy& policy, scale_state& state, bool found_inf) {
  if constexpr (has_try_update<Policy>::value) {
    return policy.try_update(state, found_inf);
  } else {
    policy.update(state, found_inf);
    return true;
  }
}

// One update.  try_update(state, found_inf) -> bool applies the policy's rule.
MIXPREC_HOST_DEVICE_CALLS_CALLER_FUNCTION
template <class TryUpdate>
MIXPREC_HOST_DEVICE update_result apply_update(TryUpdate&& try_update, const scale_state& current,
                                               const scaler_counters& counters, bool found_inf,
                                               std::int64_t overflowed_checks, const update_limits& limits) {
  update_result r;
  r.state = current;
  r.counters = count_step(counters, found_inf, overflowed_checks);
  if (found_inf && limits.max_consecutive_skips > 0 && r.counters.consecutive_skips >= limits.max_consecutive_skips) {
    r.status = update_status::skip_limit;
    return r;
  }
  if (!try_update(r.state, found_inf)) {
    r.status = update_status::policy_refused;
    return r;
  }
  // The bookkeeping every rule shares (DeepSpeed's cur_iter and last_overflow_iter).
  if (found_inf) r.state.last_overflow_iteration = r.state.iteration;
  ++r.state.iteration;
  if (r.state.scale != r.state.scale) {
    r.status = update_status::nan_scale;
    return r;
  }
  r.reason = r.state.scale > current.scale ? scale_change_reason::growth : scale_change_reason::backoff;
  if (r.state.scale > static_cast<double>(limits.max_scale)) {
    r.state.scale = limits.max_scale;
    r.reason = scale_change_reason::capped;
  }
  r.proposed_scale = r.state.scale;
  if (r.state.scale < static_cast<double>(limits.min_scale)) {
    // A back-off that stops at the floor, or an overflow *at* the floor (floor_hits; the caller
    // may replace the clamp by its floor action).
    r.at_floor = found_inf && current.scale <= static_cast<double>(limits.min_scale);
    if (r.at_floor) {
      ++r.counters.floor_hits;
      r.reason = scale_change_reason::floor_clamp;
    }
    r.state.scale = limits.min_scale;
  }
  return r;
}

}  // namespace mixprec::detail
