// Fuzz target for loading scaler state (scaling/state.hpp): arbitrary bytes must give either
// scaler_state_error with the scaler unchanged, or a state that encodes back to exactly the same
// bytes and runs.  No crash, no sanitizer report, no other exception, no accepted garbage.
//
// The first byte chooses the policy (bits 0-1) and whether the rest is the whole state (bit 2
// clear) or only its payload, framed here with a correct header and checksum (bit 2 set) so that
// mutations reach the field checks behind the checksum.
//
// Built with clang's -fsanitize=fuzzer it is a libFuzzer binary (CMake target state_fuzzer);
// state_fuzz_driver.cpp runs the same entry point on generated inputs for compilers without
// libFuzzer.
#include <mixprec/scaling/loss_scaler.hpp>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "state_fuzz.hpp"

// Inputs accepted so far (the driver reports it: fuzzing that never gets past the checksum
// proves little).
std::uint64_t state_fuzz_accepted = 0;

namespace {

using namespace mixprec;

template <class Policy>
void load_one(const std::vector<std::uint8_t>& bytes) {
  scaler_options options;
  options.floor_handler = [](const floor_event& e) { return static_cast<float>(e.min_scale > 0 ? e.min_scale : 1); };
  loss_scaler<Policy> scaler{Policy{}, options};
  if (!state_fuzz::loads_all_or_nothing(scaler, bytes)) return;
  // It runs: updates throw only the library's own errors (a floor or skip limit the loaded
  // options ask for), and the iteration can then be closed by setting a scale.
  for (int i = 0; i < 8; ++i) {
    scaler.record_found_inf(i % 3 == 0);
    try {
      scaler.update();
      continue;
    } catch (const mixprec::error&) {
    }
    try {
      scaler.update(scaler.options().min_scale > 0 ? scaler.options().min_scale : 1.f);
    } catch (const mixprec::error&) {
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned selector = data[0];
  const std::vector<std::uint8_t> bytes =
      state_fuzz::state_from_input(data, size, detail::state_magic, scaler_state_version);
  switch (selector & 3u) {
    case 0:
      load_one<dynamic_scaling>(bytes);
      break;
    case 1:
      load_one<hysteresis_scaling>(bytes);
      break;
    case 2:
      load_one<static_scaling>(bytes);
      break;
    default:
      load_one<no_scaling>(bytes);
      break;
  }
  return 0;
}
