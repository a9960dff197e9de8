// What a loss_scaler has seen: step and skip counts, the current scale and trackers, a bounded
// history of scale changes, and which gradients made checks fail (nonfinite.hpp); exported as
// JSON (loss_scaler::get_amp_stats() and save_amp_stats(path)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "../detail/text.hpp"
#include "nonfinite.hpp"

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

// A check that found inf/NaN in this process's gradients, and the first such element.
struct overflow_culprit {
  std::int64_t iteration = 0;  // the update that closed the iteration (as scale_change)
  std::size_t optimizer = 0;
  nonfinite_element element;  // view: the array's index in the list given to unscale()
  int rank = -1;              // the process, when the Agreement agrees on culprits; else -1

  friend bool operator==(const overflow_culprit& a, const overflow_culprit& b) {
    return a.iteration == b.iteration && a.optimizer == b.optimizer && a.element == b.element && a.rank == b.rank;
  }
};

// How many failed checks each (optimizer, array) was the culprit of.
struct culprit_count {
  std::size_t optimizer = 0, view = 0;
  std::int64_t count = 0;

  friend bool operator==(const culprit_count& a, const culprit_count& b) {
    return a.optimizer == b.optimizer && a.view == b.view && a.count == b.count;
  }
};

// Iterations at one power of two of the loss scale: scales s with 2^log2_scale <= s <
// 2^(log2_scale + 1) (std::ilogb).
struct scale_bin {
  int log2_scale = 0;
  std::int64_t count = 0;  // iterations

  friend bool operator==(const scale_bin& a, const scale_bin& b) {
    return a.log2_scale == b.log2_scale && a.count == b.count;
  }
};

struct scaler_statistics {
  std::string policy;  // the policy's name (and rule set)
  double scale = 0;
  std::int64_t growth_tracker = 0, hysteresis_tracker = 0, iteration = 0, last_overflow_iteration = -1;
  scaler_counters counters;
  std::deque<scale_change> history;  // oldest first; at most scaler_options::history_capacity
  // The culprits of the last failed checks (unscale() only: record_found_inf() and another
  // process's overflow name none), oldest first, at most history_capacity; and the count per
  // (optimizer, array) since the scaler started, ordered by optimizer, then array.  Neither is
  // part of the saved state.
  std::deque<overflow_culprit> culprits;
  std::vector<culprit_count> culprit_counts;
  // How many iterations (closed by update()) ran at each power of two of the scale, the scale
  // over time at a glance: non-empty bins, increasing (at most 256: the usable scales span
  // 2^-128 to 2^127).  Not part of the saved state either.
  std::vector<scale_bin> scale_histogram;
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
  out += "], \"culprits\": [";
  for (std::size_t i = 0; i < s.culprits.size(); ++i) {
    const overflow_culprit& c = s.culprits[i];
    out += (i ? ", " : "") + std::string("{\"iteration\": ") + number_text(c.iteration) +
           ", \"optimizer\": " + std::to_string(c.optimizer) + ", \"array\": " + std::to_string(c.element.view) +
           ", \"element\": " + std::to_string(c.element.element) + ", \"kind\": \"" + to_string(c.element.kind) +
           "\", \"rank\": " + std::to_string(c.rank) + "}";
  }
  out += "], \"culprit_counts\": [";
  for (std::size_t i = 0; i < s.culprit_counts.size(); ++i) {
    const culprit_count& c = s.culprit_counts[i];
    out += (i ? ", " : "") + std::string("{\"optimizer\": ") + std::to_string(c.optimizer) +
           ", \"array\": " + std::to_string(c.view) + ", \"count\": " + number_text(c.count) + "}";
  }
  out += "], \"scale_histogram\": [";
  for (std::size_t i = 0; i < s.scale_histogram.size(); ++i) {
    out += (i ? ", " : "") + std::string("{\"log2_scale\": ") + std::to_string(s.scale_histogram[i].log2_scale) +
           ", \"steps\": " + number_text(s.scale_histogram[i].count) + "}";
  }
  return out + "]}";
}

}  // namespace mixprec
