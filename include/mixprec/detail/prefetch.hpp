// Software prefetch: asks for cache lines ahead of their reads where a pass computes from cache
// while the next part of its input is still in memory (the hardware prefetcher stops running
// ahead when the demand reads pause), as the block quantisers do between their batches.
#pragma once

#include <cstddef>

namespace mixprec::detail {

// The cache lines (64 bytes) of the n floats at p, for reading.
inline void prefetch_floats(const float* p, std::size_t n) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  for (std::size_t i = 0; i < n; i += 64 / sizeof(float)) __builtin_prefetch(p + i);
#else
  (void)p, (void)n;
#endif
}

}  // namespace mixprec::detail
