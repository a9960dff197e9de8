// What a training step returns, what a session counts per epoch and over the run, with the log
// lines and the JSON that report them.
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "../detail/text.hpp"
#include "../scaling/all_reduce_options.hpp"
#include "../scaling/nonfinite.hpp"

namespace mixprec {

// The result of precision_session::train_step.
struct step_result {
  float loss = 0;                   // the mean of the micro-batch losses, unscaled
  std::optional<double> grad_norm;  // global L2 norm of the unscaled gradients, when max_grad_norm > 0
  bool skipped = false;             // an inf/NaN gradient: the optimizer step did not run
  float scale = 1;                  // the loss scale this step used (before the update)
  // A skipped step's first inf/NaN gradient in this process (scaling/nonfinite.hpp): view is the
  // index in the gradient list (for registered parameters, their order of registration), and
  // parameter that parameter's name (registered parameters only).  Empty when the step ran, or
  // when the overflow was another process's.
  std::optional<nonfinite_element> culprit;
  std::string parameter;
  // With record_gradient_amax(true): each gradient's amax after the unscale, in the order of
  // the gradient list (registered parameters: their order of registration), from the unscale's
  // own pass (loss_scaler::unscale_with_amax): +inf / NaN for an array that held one.  Empty
  // when off, and when a process group's all-reduce found a non-finite gradient (no unscale ran).
  std::vector<float> gradient_amax;
  // With a process group (precision_session::use_process_group): what the step's gradient
  // all-reduce did; found_inf there means some rank's gradient or the reduced sum was not finite
  // (the step is skipped on every rank, with no culprit named here).  Zeros without a group.
  all_reduce_result communicated;
};

struct epoch_statistics {
  std::int64_t steps = 0;
  std::int64_t skipped = 0;
  double seconds = 0;  // wall time inside train_step, forward and backward included
  // Steps after which the loss scale differed from the one they used (growth, backoff, a floor
  // or handler that moved it): every change a scaler makes happens in a train_step that returns.
  std::int64_t scale_changes = 0;

  double overflow_rate() const noexcept {
    return steps > 0 ? static_cast<double>(skipped) / static_cast<double>(steps) : 0.0;
  }
  double mean_step_seconds() const noexcept { return steps > 0 ? seconds / static_cast<double>(steps) : 0.0; }
};

// precision_session::statistics(): the whole run, under the keys that DeepSpeed and PyTorch AMP
// users read.  Activation memory is not here: activations live in the user's forward pass, which
// the session calls but does not see into.
struct session_statistics {
  std::int64_t total_steps = 0;    // train_step calls that returned
  std::int64_t skipped_steps = 0;  // of those, steps skipped for an inf/NaN gradient
  // Steps whose gradients had inf/NaN, from the scalers' own counters (the recipe's and the
  // disabled session's): unlike skipped_steps it includes a step that then threw (a skip limit).
  std::int64_t overflow_count = 0;
  double current_scale = 1;          // the loss scale of the next step (get_scale())
  double overflow_ratio = 0;         // skipped_steps / total_steps; 0 before the first step
  double avg_step_time = 0;          // seconds, mean wall time inside train_step
  std::int64_t scaler_updates = 0;   // steps after which the loss scale changed
  std::size_t master_bytes = 0;      // fp32 master weights (0 without master weights)
  std::size_t working_bytes = 0;     // parameters held in fp16/bf16: working copies, a cast model
  std::size_t gradient_bytes = 0;    // the session's fp32 gradient buffers (add_parameter)
  std::size_t optimizer_bytes = 0;   // the optimizer state (momentum, Adam moments, Kahan compensations)
  std::int64_t recipe_switches = 0;  // recipe changes made (schedule.hpp; precision_session::switches())
};

// {"total_steps": 10, "skipped_steps": 2, ...}: one flat object, the fields in order.
template <int = 0>
std::string to_json(const session_statistics& s) {
  using detail::json_number;
  using detail::number_text;
  return "{\"total_steps\": " + number_text(s.total_steps) + ", \"skipped_steps\": " + number_text(s.skipped_steps) +
         ", \"overflow_count\": " + number_text(s.overflow_count) +
         ", \"current_scale\": " + json_number(s.current_scale) +
         ", \"overflow_ratio\": " + json_number(s.overflow_ratio) +
         ", \"avg_step_time\": " + json_number(s.avg_step_time) +
         ", \"scaler_updates\": " + number_text(s.scaler_updates) +
         ", \"master_bytes\": " + std::to_string(s.master_bytes) +
         ", \"working_bytes\": " + std::to_string(s.working_bytes) +
         ", \"gradient_bytes\": " + std::to_string(s.gradient_bytes) +
         ", \"optimizer_bytes\": " + std::to_string(s.optimizer_bytes) +
         ", \"recipe_switches\": " + number_text(s.recipe_switches) + "}";
}

namespace detail {

// "32768.0": the scale as the log lines print it (one decimal).
template <int = 0>
std::string scale_text(double scale) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1f", scale);
  return buffer;
}

// "[AMP Skip] Step 12 skipped, loss scale 65536.0 -> 32768.0: first non-finite gradient in
// 'fc2.weight', element 517 (+inf)": the session's log line for a skipped step (steps count
// from 1 over the run).
template <int = 0>
std::string skip_line(std::int64_t step, const step_result& r, double next_scale) {
  std::string line = "[AMP Skip] Step " + std::to_string(step) + " skipped, loss scale " + scale_text(r.scale) +
                     " -> " + scale_text(next_scale) + ": ";
  if (!r.culprit) return line + "the inf/NaN gradient was found by another process or a check made elsewhere";
  return line + "first non-finite gradient in " +
         (r.parameter.empty() ? "array " + std::to_string(r.culprit->view) : "'" + r.parameter + "'") + ", element " +
         std::to_string(r.culprit->element) + " (" + to_string(r.culprit->kind) + ")";
}

template <int = 0>
std::string epoch_line(const epoch_statistics& e) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "[AMP Epoch] Steps: %lld, Skipped: %lld (%.2f%%), Mean step: %.3f ms",
                static_cast<long long>(e.steps), static_cast<long long>(e.skipped), 100.0 * e.overflow_rate(),
                1e3 * e.mean_step_seconds());
  return buffer;
}

}  // namespace detail
}  // namespace mixprec
