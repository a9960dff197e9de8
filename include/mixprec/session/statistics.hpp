// What a training step returns and what a session counts per epoch, with the log lines that
// report them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace mixprec {

// The result of precision_session::train_step.
struct step_result {
  float loss = 0;                   // the mean of the micro-batch losses, unscaled
  std::optional<double> grad_norm;  // global L2 norm of the unscaled gradients, when max_grad_norm > 0
  bool skipped = false;             // an inf/NaN gradient: the optimizer step did not run
  float scale = 1;                  // the loss scale this step used (before the update)
};

struct epoch_statistics {
  std::int64_t steps = 0;
  std::int64_t skipped = 0;
  double seconds = 0;  // wall time inside train_step, forward and backward included

  double overflow_rate() const noexcept {
    return steps > 0 ? static_cast<double>(skipped) / static_cast<double>(steps) : 0.0;
  }
  double mean_step_seconds() const noexcept { return steps > 0 ? seconds / static_cast<double>(steps) : 0.0; }
};

namespace session_detail {

// "32768.0": the scale as the log lines print it (one decimal).
inline std::string scale_text(double scale) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1f", scale);
  return buffer;
}

inline std::string epoch_line(const epoch_statistics& e) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "[AMP Epoch] Steps: %lld, Skipped: %lld (%.2f%%), Mean step: %.3f ms",
                static_cast<long long>(e.steps), static_cast<long long>(e.skipped), 100.0 * e.overflow_rate(),
                1e3 * e.mean_step_seconds());
  return buffer;
}

}  // namespace session_detail
}  // namespace mixprec
