// Runs the session-state fuzz target (state_fuzz_target.cpp) on generated inputs, for compilers
// without libFuzzer: states of the four fuzz sessions (session_fuzz.hpp) after random training
// runs, mutated as tests/support/state_fuzz.hpp does.
//
//   session_state_fuzz_driver [iterations = 100000] [seed = 1] [--write-corpus DIR]
#include <cstdint>
#include <random>
#include <vector>

#include "session_fuzz.hpp"
#include "state_fuzz.hpp"

namespace {

std::vector<state_fuzz::bytes_t> seeds(std::mt19937_64& random) {
  std::vector<state_fuzz::bytes_t> out;
  for (int i = 0; i < 24; ++i) {
    const unsigned kind = static_cast<unsigned>(i) & 3u;
    mixprec::precision_session amp = session_fuzz::make_session(kind);
    session_fuzz::run_steps(amp, static_cast<int>(random() % 12), random);
    state_fuzz::bytes_t b = amp.save_state();
    b.insert(b.begin(), static_cast<std::uint8_t>(kind));  // selector: this session, whole state
    out.push_back(b);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) { return state_fuzz::run_driver(argc, argv, seeds, "session state fuzz"); }
