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

// Multipliers and Weyl key increments of the paper's Table 2.
struct philox_constants {
  static constexpr std::uint32_t multiplier0 = 0xD2511F53u;
  static constexpr std::uint32_t multiplier1 = 0xCD9E8D57u;
  static constexpr std::uint32_t weyl0 = 0x9E3779B9u;
  static constexpr std::uint32_t weyl1 = 0xBB67AE85u;
  static constexpr int rounds = 10;
};

MIXPREC_HOST_DEVICE constexpr philox_block philox4x32_10(philox_block counter, std::uint32_t key0,
                                                         std::uint32_t key1) noexcept {
  constexpr std::uint64_t multiplier0 = philox_constants::multiplier0;
  constexpr std::uint64_t multiplier1 = philox_constants::multiplier1;
  std::uint32_t* c = counter.word;
  for (int round = 0; round < philox_constants::rounds; ++round) {
    const std::uint64_t product0 = multiplier0 * c[0];
    const std::uint64_t product1 = multiplier1 * c[2];
    const auto hi0 = static_cast<std::uint32_t>(product0 >> 32);
    const auto lo0 = static_cast<std::uint32_t>(product0);
    const auto hi1 = static_cast<std::uint32_t>(product1 >> 32);
    const auto lo1 = static_cast<std::uint32_t>(product1);
    const philox_block next{{hi1 ^ c[1] ^ key0, lo1, hi0 ^ c[3] ^ key1, lo0}};
    counter = next;
    key0 += philox_constants::weyl0;
    key1 += philox_constants::weyl1;
  }
  return counter;
}

// Block `block` of the stream keyed by `seed`: the counter is (block low, block high, 0, 0).
MIXPREC_HOST_DEVICE constexpr philox_block philox_stream_block(std::uint64_t seed, std::uint64_t block) noexcept {
  const philox_block counter{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0, 0}};
  return philox4x32_10(counter, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// The 32 random bits of element `index` under `seed`: word index % 4 of block index / 4.
MIXPREC_HOST_DEVICE constexpr std::uint32_t philox_bits(std::uint64_t seed, std::uint64_t index) noexcept {
  return philox_stream_block(seed, index >> 2).word[index & 3];
}

// Element `index` of the stream of one (tensor, step) under `seed`: the counter is (block low,
// block high, tensor, step), so streams of different tensors or steps never share a block, and
// (tensor, step) = (0, 0) is the stream of philox_bits(seed, index) above.
MIXPREC_HOST_DEVICE constexpr std::uint32_t philox_bits(std::uint64_t seed, std::uint32_t tensor, std::uint32_t step,
                                                        std::uint64_t index) noexcept {
  const std::uint64_t block = index >> 2;
  const philox_block counter{
      {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), tensor, step}};
  return philox4x32_10(counter, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32))
      .word[index & 3];
}

// philox_bits(seed, i) for i = first, first + 1, ... in order, one block per four elements.
class philox_sequence {
 public:
  MIXPREC_HOST_DEVICE constexpr philox_sequence(std::uint64_t seed, std::uint64_t first) noexcept
      : seed_(seed), index_(first), block_(philox_stream_block(seed, first >> 2)) {}

  MIXPREC_HOST_DEVICE constexpr std::uint32_t next() noexcept {
    const std::uint32_t bits = block_.word[index_ & 3];
    if ((++index_ & 3) == 0) block_ = philox_stream_block(seed_, index_ >> 2);
    return bits;
  }

 private:
  std::uint64_t seed_;
  std::uint64_t index_;
  philox_block block_;
};

}  // namespace mixprec::detail
