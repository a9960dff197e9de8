// Fuzz target for loading a precision_session's state (session/detail/session_state.inl):
// arbitrary bytes must give either scaler_state_error with the session unchanged, or a state
// that encodes back to exactly the same bytes and trains on.  No crash, no sanitizer report, no
// other exception.
//
// The first byte chooses the session (bits 0-1, session_fuzz.hpp) and whether the rest is the
// whole state (bit 2 clear) or only its payload, framed here with a correct header and checksum
// (bit 2 set) so that mutations reach the checks behind the checksum.  Built with clang's
// -fsanitize=fuzzer it is the libFuzzer binary session_state_fuzzer; state_fuzz_driver.cpp runs
// it on generated inputs elsewhere.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "session_fuzz.hpp"
#include "state_fuzz.hpp"

// Inputs accepted so far (the driver reports it).
std::uint64_t state_fuzz_accepted = 0;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mixprec;
  if (size == 0) return 0;
  const unsigned selector = data[0];
  const std::vector<std::uint8_t> bytes =
      state_fuzz::state_from_input(data, size, detail::session_magic, detail::session_state_version);
  precision_session amp = session_fuzz::make_session(selector);
  if (!state_fuzz::loads_all_or_nothing(amp, bytes)) return 0;
  std::mt19937_64 random(size);
  try {
    session_fuzz::run_steps(amp, 4, random);  // it trains on; only the library's own errors
  } catch (const mixprec::error&) {           // (a skip limit or floor the loaded options ask for)
  }
  return 0;
}
