// Failure counting for the small test programs that run without Catch2 (the NCCL tests, built
// with nvcc or linked against CUDA): expect() prints each failed check; main() returns
// failures == 0 ? 0 : 1.
#pragma once

#include <cstdio>

namespace expect_checks {

inline int failures = 0;

inline void expect(bool ok, const char* what) {
  if (ok) return;
  ++failures;
  std::printf("FAILED: %s\n", what);
}

}  // namespace expect_checks
