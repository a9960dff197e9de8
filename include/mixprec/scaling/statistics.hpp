// What a loss_scaler has seen: step and skip counts, the current scale and trackers, and a
// bounded history of scale changes; exported as JSON (loss_scaler::get_amp_stats() and
// save_amp_stats(path)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "../detail/text.hpp"

namespace mixprec {

enum class scale_change_reason {
  growth,         // the policy grew the scale after enough clean steps
  backoff,        // the policy backed off after an overflow
  capped,         // growth stopped at scaler_options::max_scale
  floor_clamp,    // an overflow at the floor: held at scaler_options::min_scale
  floor_handler,  // an overflow at the floor: the scale the floor handler returned
  manual,         // update(new_scale)
};

constexpr const char* to_string(scale_change_reason r) noexcept {
  switch (r) {
    case scale_change_reason::growth:
      return "growth";
    case scale_change_reason::backoff:
      return "backoff";
    case scale_change_reason::capped:
      return "capped";
    case scale_change_reason::floor_clamp:
      return "floor_clamp";
    case scale_change_reason::floor_handler:
      return "floor_handler";
    case scale_change_reason::manual:
      return "manual";
  }
  return "invalid scale_change_reason";
}

struct scale_change {
  std::int64_t iteration = 0;  // the update that made the change (0 = the first)
  double from = 0, to = 0;
  scale_change_reason reason = scale_change_reason::growth;

  friend bool operator==(const scale_change& a, const scale_change& b) {
    return a.iteration == b.iteration && a.from == b.from && a.to == b.to && a.reason == b.reason;
  }
};

// Counters kept across iterations (and saved with the state).
struct scaler_counters {
  std::int64_t steps = 0;              // iterations completed by update()
  std::int64_t skipped_steps = 0;      // of those, iterations with an inf/NaN gradient (step skipped)
  std::int64_t overflow_count = 0;     // inf checks (one per optimizer and iteration) that found inf/NaN
  std::int64_t consecutive_skips = 0;  // skipped iterations in a row, up to the last update
  std::int64_t longest_skip_run = 0;   // the longest such run so far
  std::int64_t floor_hits = 0;         // overflows at the floor (see scaler_options::at_floor)

  friend bool operator==(const scaler_counters& a, const scaler_counters& b) {
    return a.steps == b.steps && a.skipped_steps == b.skipped_steps && a.overflow_count == b.overflow_count &&
           a.consecutive_skips == b.consecutive_skips && a.longest_skip_run == b.longest_skip_run &&
           a.floor_hits == b.floor_hits;
  }
};

struct scaler_statistics {
  std::string policy;  // the policy's name (and rule set)
  double scale = 0;
  std::int64_t growth_tracker = 0, hysteresis_tracker = 0, iteration = 0, last_overflow_iteration = -1;
  scaler_counters counters;
  std::deque<scale_change> history;  // oldest first; at most scaler_options::history_capacity
};

inline std::string to_json(const scaler_statistics& s) {
  using detail::json_number;
  using detail::number_text;
  std::string out = "{\"policy\": " + detail::json_string(s.policy) + ", \"scale\": " + json_number(s.scale) +
                    ", \"growth_tracker\": " + number_text(s.growth_tracker) +
                    ", \"hysteresis_tracker\": " + number_text(s.hysteresis_tracker) +
                    ", \"iteration\": " + number_text(s.iteration) +
                    ", \"last_overflow_iteration\": " + number_text(s.last_overflow_iteration) +
                    ", \"steps\": " + number_text(s.counters.steps) +
                    ", \"skipped_steps\": " + number_text(s.counters.skipped_steps) +
                    ", \"overflow_count\": " + number_text(s.counters.overflow_count) +
                    ", \"consecutive_skips\": " + number_text(s.counters.consecutive_skips) +
                    ", \"longest_skip_run\": " + number_text(s.counters.longest_skip_run) +
                    ", \"floor_hits\": " + number_text(s.counters.floor_hits) + ", \"history\": [";
  for (std::size_t i = 0; i < s.history.size(); ++i) {
    const scale_change& c = s.history[i];
    out += (i ? ", " : "") + std::string("{\"iteration\": ") + number_text(c.iteration) +
           ", \"from\": " + json_number(c.from) + ", \"to\": " + json_number(c.to) + ", \"reason\": \"" +
           to_string(c.reason) + "\"}";
  }
  return out + "]}";
}

}  // namespace mixprec
