// Fuzz target for loading delayed-scaling state (scaling/fp8/state.hpp): arbitrary bytes must give
// either scaler_state_error with the scaler unchanged, or a state that saves back to exactly the
// same bytes and keeps running.  No crash, no sanitizer report, no other exception.
//
// The first byte chooses the scaler (bit 0: pass, bit 1: the custom amax algorithm's function
// present, bits 3-4: 1 to 4 tensors) and whether the rest is the whole state (bit 2 clear) or only
// its payload, framed here with a correct header and checksum (bit 2 set).
//
// Built with clang's -fsanitize=fuzzer it is a libFuzzer binary (CMake target fp8_state_fuzzer);
// state_fuzz_driver.cpp runs the same entry point on generated inputs for every compiler.
#include <mixprec/scaling/fp8/delayed_scaler.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "state_fuzz.hpp"

std::uint64_t state_fuzz_accepted = 0;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mixprec;
  if (size == 0) return 0;
  const unsigned selector = data[0];
  const std::vector<std::uint8_t> bytes =
      state_fuzz::state_from_input(data, size, detail::delayed_state_magic, delayed_scaling_state_version);
  delayed_scaling recipe;
  recipe.amax_history_len = 8;
  if (selector & 2u) recipe.amax_function = [](const float* history, std::size_t) { return history[0]; };
  const fp8_pass pass = (selector & 1u) ? fp8_pass::backward : fp8_pass::forward;
  delayed_scaler scaler(recipe, pass, 1 + ((selector >> 3) & 3u));
  if (!state_fuzz::loads_all_or_nothing(scaler, bytes)) return 0;
  for (int step = 0; step < 4; ++step) {  // it runs, and its scales keep finite inverses
    for (std::size_t t = 0; t < scaler.tensors(); ++t) scaler.record_amax(t, static_cast<float>(step) * 1e-39f);
    scaler.update();
    for (std::size_t t = 0; t < scaler.tensors(); ++t) {
      if (!(scaler.scale(t) > 0.0f) || !std::isfinite(scaler.scale_inv(t))) std::abort();
    }
  }
  return 0;
}
