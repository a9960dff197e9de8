// Runs the scaler-state fuzz target (state_fuzz_target.cpp) on generated inputs, for compilers
// without libFuzzer: valid states of random scalers, mutated (bit flips, random and boundary
// bytes, boundary numbers written over 8-byte fields, truncations, extensions, repeated chunks),
// each fed whole and, through the framing selector, as a payload with a correct checksum.
//
//   state_fuzz_driver [iterations = 100000] [seed = 1] [--write-corpus DIR]
//
// --write-corpus writes the unmutated seeds as a libFuzzer corpus and exits.
#include <mixprec/scaling/loss_scaler.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "state_fuzz.hpp"

namespace {

using namespace mixprec;
using state_fuzz::bytes_t;

// A state of a scaler of the given policy after a random run with random options.
template <class Policy>
bytes_t random_state(const Policy& policy, std::mt19937_64& random) {
  scaler_options o;
  if (random() % 2) o.min_scale = 1.f;
  if (random() % 2) o.max_scale = 1e9f;
  o.at_floor = static_cast<floor_action>(random() % 2);  // clamp or throw_error
  o.max_consecutive_skips = static_cast<std::int64_t>(random() % 3) * 20;
  o.history_capacity = random() % 10;
  loss_scaler<Policy> scaler{policy, o};
  const auto steps = random() % 300;
  for (std::uint64_t i = 0; i < steps; ++i) {
    scaler.record_found_inf(random() % 5 == 0);
    try {
      scaler.update();
    } catch (const mixprec::error&) {
      scaler.update(o.min_scale > 0 ? o.min_scale : 1.f);
    }
  }
  return scaler.save_state();
}

std::vector<bytes_t> seeds(std::mt19937_64& random) {
  std::vector<bytes_t> out;
  for (int i = 0; i < 40; ++i) {
    dynamic_scaling d;
    d.growth_interval = 1 + static_cast<int>(random() % 20);
    bytes_t b = random_state(d, random);
    b.insert(b.begin(), 0);  // selector: dynamic_scaling, whole state
    out.push_back(b);
    hysteresis_scaling h;
    h.rules = random() % 2 ? hysteresis_scaling::rule_set::deepspeed : hysteresis_scaling::rule_set::megatron;
    h.growth_interval = 1 + static_cast<int>(random() % 20);
    h.consecutive_hysteresis = random() % 2;
    b = random_state(h, random);
    b.insert(b.begin(), 1);
    out.push_back(b);
  }
  bytes_t s = random_state(static_scaling{}, random);
  s.insert(s.begin(), 2);
  out.push_back(s);
  bytes_t n = random_state(no_scaling{}, random);
  n.insert(n.begin(), 3);
  out.push_back(n);
  return out;
}

}  // namespace

int main(int argc, char** argv) { return state_fuzz::run_driver(argc, argv, seeds, "state fuzz"); }
