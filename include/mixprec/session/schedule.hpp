// A recipe schedule: the recipes a precision_session changes to as training goes, and a
// fallback for a recipe that keeps overflowing (issue 21; docs/session.md, "Recipe schedules").
//
//   mixprec::precision_schedule s;
//   s.changes.push_back({mixprec::schedule_unit::epoch, 10, mixprec::parse_recipe("bf16")});
//   s.changes.push_back({mixprec::schedule_unit::epoch, 50, mixprec::parse_recipe("fp16")});
//   s.fallback_after_skips = 3;                       // 3 skipped steps in a row: go to bf16
//   s.fallback = mixprec::parse_recipe("bf16");
//   amp.set_schedule(s);
//
// A change applies at the start of the first train_step once its step count (train_step calls
// that returned) or epoch count (end_epoch calls) is reached; changes apply in list order, so a
// list gives each unit's changes in increasing order.  The fallback applies once, at the start of
// the step after the fallback_after_skips-th skipped step in a row.  What a switch carries over
// and what it starts afresh: precision_session::switch_recipe.
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "errors.hpp"
#include "recipe.hpp"
#include "recipe_fields.hpp"

namespace mixprec {

enum class schedule_unit { step, epoch };

constexpr const char* to_string(schedule_unit u) noexcept {
  return u == schedule_unit::step ? "step" : u == schedule_unit::epoch ? "epoch" : "invalid";
}

struct recipe_change {
  schedule_unit unit = schedule_unit::step;
  std::int64_t at = 0;  // steps run or epochs ended; 0 applies before the first step
  recipe next;
};

struct precision_schedule {
  std::vector<recipe_change> changes;
  std::int64_t fallback_after_skips = 0;  // 0: no fallback
  recipe fallback;

  bool empty() const noexcept { return changes.empty() && fallback_after_skips == 0; }
};

// One recipe switch a session made: before the step that followed `steps` steps, in the epoch
// that followed `epochs` epochs; the recipes' names; why ("schedule: epoch 10", "fallback: 3
// skipped steps in a row", or the reason given to switch_recipe).
struct recipe_switch {
  std::int64_t steps = 0;
  std::int64_t epochs = 0;
  std::string from, to;
  std::string reason;
};

// recipe_error for a schedule that cannot run: a change's recipe invalid, a negative count, a
// unit's changes out of order (the later one could never apply in time), a negative
// fallback_after_skips or an invalid fallback recipe.
template <int = 0>
void validate(const precision_schedule& s) {
  std::int64_t last[2] = {-1, -1};
  for (std::size_t i = 0; i < s.changes.size(); ++i) {
    const recipe_change& c = s.changes[i];
    const std::string which = "precision_schedule: changes[" + std::to_string(i) + "]";
    if (c.unit != schedule_unit::step && c.unit != schedule_unit::epoch) {
      throw recipe_error(which + ": unit " + std::to_string(static_cast<int>(c.unit)) + " is not step or epoch");
    }
    if (c.at < 0) throw recipe_error(which + ": at is " + std::to_string(c.at) + ", allowed: 0 or more");
    std::int64_t& previous = last[c.unit == schedule_unit::step ? 0 : 1];
    if (c.at < previous) {
      throw recipe_error(which + " at " + to_string(c.unit) + " " + std::to_string(c.at) + " follows a change at " +
                         to_string(c.unit) + " " + std::to_string(previous) +
                         "; list each unit's changes in increasing order");
    }
    previous = c.at;
    try {
      validate(c.next);
    } catch (const recipe_error& e) {
      throw recipe_error(which + ": " + e.what());
    }
  }
  if (s.fallback_after_skips < 0) {
    throw recipe_error("precision_schedule: fallback_after_skips is " + std::to_string(s.fallback_after_skips) +
                       ", allowed: 0 (no fallback) or more");
  }
  if (s.fallback_after_skips > 0) {
    try {
      validate(s.fallback);
    } catch (const recipe_error& e) {
      throw recipe_error(std::string("precision_schedule: fallback: ") + e.what());
    }
  }
}

// The schedule's identity in a checkpoint: every change and the fallback, with their settings.
template <int = 0>
std::string schedule_text(const precision_schedule& s) {
  std::string out;
  for (const recipe_change& c : s.changes) {
    out += std::string(to_string(c.unit)) + " " + std::to_string(c.at) + ": " + settings_text(c.next) + "; ";
  }
  if (s.fallback_after_skips > 0) {
    out += "fallback after " + std::to_string(s.fallback_after_skips) + ": " + settings_text(s.fallback);
  }
  return out;
}

}  // namespace mixprec
