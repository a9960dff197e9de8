// Options of a loss_scaler beyond its policy: the safety rails that every policy gets (bounds on
// the scale, what happens at the floor, a limit on consecutive skipped steps), the history
// length, and how gradients are unscaled.  The defaults change nothing: a scaler with default
// options follows its policy's reference rule exactly.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "../errors.hpp"
#include "../detail/text.hpp"
#include "unscale.hpp"
#include "update_rule.hpp"

namespace mixprec {

// What happens on an overflow when the scale is already at scaler_options::min_scale and the
// policy asks for less ("the scale spirals to zero": the inf is rarely fixed by a smaller
// scale; it is a NaN in the forward pass, a bad batch, a diverged model).
enum class floor_action {
  clamp,         // stay at min_scale and keep skipping; floor_hits counts it
  throw_error,   // throw scale_floor_error; the scaler keeps its state from before update()
  call_handler,  // call floor_handler, which returns the scale to go on with (or throws)
};

constexpr const char* to_string(floor_action a) noexcept {
  switch (a) {
    case floor_action::clamp:
      return "clamp";
    case floor_action::throw_error:
      return "throw_error";
    case floor_action::call_handler:
      return "call_handler";
  }
  return "invalid floor_action";
}

// What a floor handler is told.
struct floor_event {
  double scale = 0;                    // the scale now (at or below min_scale)
  double proposed_scale = 0;           // what the policy asked for
  double min_scale = 0;                // the floor
  std::int64_t iteration = 0;          // the update being applied
  std::int64_t consecutive_skips = 0;  // skipped iterations in a row, this one included
};

// The scales a loss scaler ever holds, whatever its policy or options ask for: unscale multiplies
// by inverse_scale(scale) = float(1 / double(scale)), which must be a finite, nonzero float, or
// every finite gradient would become ±inf, 0 or NaN while the check (made on the values before
// the multiply, as PyTorch does) reports them finite.  Below 2^-128 · (1 + 2^-21) the inverse
// rounds to infinity (1 / 2^-128 = 2^128 is past float's largest value, 2^128 - 2^104); above
// float's largest value the scale itself is infinite.  The rules of PyTorch, DeepSpeed and
// Megatron-LM are followed bit for bit inside this range; where they would leave it (a back-off
// to zero, growth to infinity), the scale stops at its edge (docs/decisions.md, "Scales whose
// inverse is not a finite float").
constexpr float smallest_usable_scale = 0x1.000008p-128f;  // 2^-128 + 2^-149, a subnormal
constexpr float largest_usable_scale = std::numeric_limits<float>::max();

// The most history entries a scaler keeps (and a saved state may hold).
constexpr std::size_t scaler_history_limit = std::size_t{1} << 16;

struct scaler_options {
  // Bounds on the scale.  0 and infinity: none beyond the policy's own (the reference rules).
  // With a finite max_scale growth stops there (and never reaches infinity); with min_scale > 0
  // a back-off stops there, and an overflow *at* min_scale is handled by at_floor.
  float min_scale = 0;
  float max_scale = std::numeric_limits<float>::infinity();
  floor_action at_floor = floor_action::clamp;
  std::function<float(const floor_event&)> floor_handler;  // needed by floor_action::call_handler
  // Throw skip_limit_error when this many iterations in a row have been skipped (0: no limit).
  std::int64_t max_consecutive_skips = 0;
  // Scale changes kept in the statistics (the oldest are dropped).
  std::size_t history_capacity = 64;
  // Rounding of bfloat16/float16 gradients after the multiply, and threads per unscale call.
  unscale_options unscale;
  // Called by update() with one line for each skipped iteration, after the new scale is set:
  // the iteration, the scale change and each failed check's first non-finite gradient
  // (nonfinite.hpp), e.g. "mixprec: skipped step at iteration 4, loss scale 32768 -> 16384;
  // optimizer 0: array 1, element 1 (+inf)".  Empty: no log.  Not saved with the state.
  std::function<void(const std::string&)> skip_log;
};

namespace detail {

// The bounds a scaler applies: its options' min_scale and max_scale within the usable range.
struct scale_bounds {
  float lowest, highest;
};
inline scale_bounds usable_bounds(const scaler_options& o) noexcept {
  return {std::max(o.min_scale, smallest_usable_scale), std::min(o.max_scale, largest_usable_scale)};
}
// The rails update() applies (update_rule.hpp), on the host and on the device alike.
inline update_limits update_limits_of(const scaler_options& o) noexcept {
  const scale_bounds b = usable_bounds(o);
  return {b.lowest, b.highest, o.max_consecutive_skips};
}
inline std::string bounds_text(const scaler_options& o) {
  const auto shortest = [](float x) {  // the float's own shortest text: "2.938737e-39", not its double's
    char buffer[32];
    return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, x).ptr);
  };
  return "[min_scale " + number_text(o.min_scale) + ", max_scale " + number_text(o.max_scale) + "] (within [" +
         shortest(smallest_usable_scale) + ", " + shortest(largest_usable_scale) +
         "], the scales whose inverse is a finite float)";
}
inline bool within_bounds(double scale, const scaler_options& o) noexcept {
  const scale_bounds b = usable_bounds(o);
  return scale >= static_cast<double>(b.lowest) && scale <= static_cast<double>(b.highest);
}

inline void validate_scaler_options(const scaler_options& o) {
  const auto fail = [](const std::string& what) { throw invalid_argument("scaler_options: " + what); };
  if (!(std::isfinite(o.min_scale) && o.min_scale >= 0)) {
    fail("min_scale is " + number_text(o.min_scale) + ", it must be finite and >= 0");
  }
  if (!(o.max_scale > 0)) fail("max_scale is " + number_text(o.max_scale) + ", it must be > 0 (infinity: no cap)");
  if (o.min_scale > o.max_scale) {
    fail("min_scale " + number_text(o.min_scale) + " is above max_scale " + number_text(o.max_scale));
  }
  if (o.at_floor != floor_action::clamp && o.at_floor != floor_action::throw_error &&
      o.at_floor != floor_action::call_handler) {
    fail("at_floor is " + std::to_string(static_cast<int>(o.at_floor)) + ", not a floor_action");
  }
  if (o.at_floor == floor_action::call_handler && !o.floor_handler) {
    fail("at_floor is call_handler but floor_handler is empty");
  }
  if (o.max_consecutive_skips < 0) {
    fail("max_consecutive_skips is " + std::to_string(o.max_consecutive_skips) + ", it must be >= 0 (0: no limit)");
  }
  if (o.history_capacity > scaler_history_limit) {
    fail("history_capacity is " + std::to_string(o.history_capacity) + ", the limit is " +
         std::to_string(scaler_history_limit));
  }
  const auto r = static_cast<int>(o.unscale.gradient_rounding);
  if (r < static_cast<int>(rounding::nearest_even) || r > static_cast<int>(last_rounding)) {
    fail("unscale.gradient_rounding is " + std::to_string(r) + ", not a rounding mode");
  }
}

}  // namespace detail
}  // namespace mixprec
