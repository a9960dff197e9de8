// Philox-4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel
// random numbers: as easy as 1, 2, 3" (SC 2011), §4.  Its output depends only on (key,
// counter), so element i of a stochastic conversion gets the same random bits whatever the
// code path, chunking or thread count.
#pragma once

#include <cstdint>

#include "../config.hpp"

namespace mixprec::detail {

struct philox_block {
  std::uint32_t word[4];
};

MIXPREC_HOST_DEVICE constexpr philox_block philox4x32_10(philox_block counter, std::uint32_t key0,
                                                         std::uint32_t key1) noexcept {
  // Multipliers and Weyl key increments of the paper's Table 2.
  constexpr std::uint64_t multiplier0 = 0xD2511F53u;
  constexpr std::uint64_t multiplier1 = 0xCD9E8D57u;
  constexpr std::uint32_t weyl0 = 0x9E3779B9u;
  constexpr std::uint32_t weyl1 = 0xBB67AE85u;
  std::uint32_t* c = counter.word;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t product0 = multiplier0 * c[0];
    const std::uint64_t product1 = multiplier1 * c[2];
    const auto hi0 = static_cast<std::uint32_t>(product0 >> 32);
    const auto lo0 = static_cast<std::uint32_t>(product0);
    const auto hi1 = static_cast<std::uint32_t>(product1 >> 32);
    const auto lo1 = static_cast<std::uint32_t>(product1);
    const philox_block next{{hi1 ^ c[1] ^ key0, lo1, hi0 ^ c[3] ^ key1, lo0}};
    counter = next;
    key0 += weyl0;
    key1 += weyl1;
  }
  return counter;
}

// The 32 random bits of element `index` under `seed`: word index % 4 of block index / 4.
MIXPREC_HOST_DEVICE constexpr std::uint32_t philox_bits(std::uint64_t seed, std::uint64_t index) noexcept {
  const std::uint64_t block = index >> 2;
  const philox_block counter{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0, 0}};
  return philox4x32_10(counter, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32))
      .word[index & 3];
}

}  // namespace mixprec::detail
