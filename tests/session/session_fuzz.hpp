// The sessions the session-state fuzzer loads into (state_fuzz_target.cpp) and saves its seeds
// from (state_fuzz_driver.cpp): selector bits 0-1 choose one.
#pragma once

#include <mixprec/session/session.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace session_fuzz {

// 0: O2 (dynamic scaling, fp16 masters of 5 and 3 values); 1: fp16 with hysteresis scaling, no
// masters, a schedule (bf16 from step 3, O1 after 2 skipped steps in a row); 2: fp8 (bf16 masters
// of 4 values, one fp8 layer, amax history 4); 3: O3 (static 128), fp16 from step 2.
inline mixprec::precision_session make_session(unsigned kind) {
  using mixprec::parse_recipe;
  static const char* const recipes[] = {"recipe=O2, growth_interval=3",
                                        "recipe=fp16, scaling=hysteresis, growth_interval=2",
                                        "recipe=fp8, amax_history_len=4", "recipe=O3, static_scale=128"};
  mixprec::precision_session amp{parse_recipe(recipes[kind & 3u])};
  const std::vector<float> init = {0.5f, -1.25f, 3.0f, 0.001f, -7.5f};
  if (amp.has_master_weights()) {
    amp.masters().add(init.data(), (kind & 3u) == 2 ? 4 : 5);
    if ((kind & 3u) == 0) amp.masters().add(init.data(), 3);
  }
  if ((kind & 3u) == 2) amp.use_fp8_layers(1);
  mixprec::precision_schedule schedule;
  if ((kind & 3u) == 1) {
    schedule.changes.push_back({mixprec::schedule_unit::step, 3, parse_recipe("recipe=bf16")});
    schedule.fallback_after_skips = 2;
    schedule.fallback = parse_recipe("recipe=O1");
  } else if ((kind & 3u) == 3) {
    schedule.changes.push_back({mixprec::schedule_unit::step, 2, parse_recipe("recipe=fp16, growth_interval=2")});
  }
  amp.set_schedule(schedule);
  return amp;
}

// `steps` training steps with random gradients, some of them inf; the fp8 layer records amaxes.
inline void run_steps(mixprec::precision_session& amp, int steps, std::mt19937_64& random) {
  std::vector<float> grad(5, 0.0f);
  const std::vector<mixprec::gradient_view> grads = {mixprec::gradient_view(grad.data(), grad.size())};
  std::vector<mixprec::float8_e4m3fn> q(5);
  for (int t = 0; t < steps; ++t) {
    const bool overflow = random() % 4 == 0;
    const float g = static_cast<float>(random() % 1000) * 1e-3f;
    amp.train_step(
        [&] {
          if (amp.get_recipe().precision == mixprec::precision_mode::float8) {
            const float x[5] = {g, -g, 2 * g, 0.0f, 1.0f};
            amp.fp8().forward().quantize(0, x, 5, q.data());
          }
          return 1.0f;
        },
        [&](float scaled) {
          for (float& v : grad) v = overflow ? std::numeric_limits<float>::infinity() : scaled * g * 1e-6f;
        },
        grads,
        [&] {
          if (!amp.has_master_weights()) return;
          for (std::size_t p = 0; p < amp.masters().size(); ++p) {
            for (std::size_t i = 0; i < amp.masters().parameter_size(p); ++i) amp.masters().master(p)[i] -= grad[i];
          }
        });
    if (random() % 7 == 0) amp.toggle();
  }
}

}  // namespace session_fuzz
