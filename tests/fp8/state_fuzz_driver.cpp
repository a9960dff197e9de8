// Runs the delayed-scaling state fuzz target (state_fuzz_target.cpp) on generated inputs:
// states of scalers after random runs (recipes, passes, tensor counts, amaxes with 0, inf and NaN),
// mutated as tests/support/state_fuzz.hpp does.
//
//   fp8_state_fuzz_driver [iterations = 100000] [seed = 1] [--write-corpus DIR]
#include <mixprec/scaling/fp8/delayed_scaler.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "state_fuzz.hpp"

namespace {

using namespace mixprec;
using state_fuzz::bytes_t;

std::vector<bytes_t> seeds(std::mt19937_64& random) {
  std::vector<bytes_t> out;
  for (int i = 0; i < 40; ++i) {
    const unsigned selector = static_cast<unsigned>(random() % 32) & ~4u;  // whole states
    delayed_scaling recipe;
    recipe.amax_history_len = 1 + static_cast<int>(random() % 12);
    recipe.margin = static_cast<int>(random() % 5) - 2;
    recipe.format = static_cast<fp8_format>(random() % 3);
    recipe.amax_compute_algo = static_cast<amax_algorithm>(random() % ((selector & 2u) ? 3 : 2));
    recipe.amax_function = [](const float* history, std::size_t) { return history[0]; };
    delayed_scaler scaler(recipe, (selector & 1u) ? fp8_pass::backward : fp8_pass::forward, 1 + ((selector >> 3) & 3u));
    const auto steps = random() % 30;
    for (std::uint64_t s = 0; s < steps; ++s) {
      for (std::size_t t = 0; t < scaler.tensors(); ++t) {
        const auto kind = random() % 6;
        if (kind == 0) continue;
        scaler.record_amax(t, kind == 1   ? std::numeric_limits<float>::infinity()
                              : kind == 2 ? std::numeric_limits<float>::quiet_NaN()
                                          : std::ldexp(1.0f, static_cast<int>(random() % 200) - 100));
      }
      scaler.update();
    }
    bytes_t b = scaler.save_state();
    b.insert(b.begin(), static_cast<std::uint8_t>(selector));
    out.push_back(b);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) { return state_fuzz::run_driver(argc, argv, seeds, "fp8 state fuzz"); }
