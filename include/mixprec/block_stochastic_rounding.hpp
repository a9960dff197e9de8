// Stochastic rounding inside the block quantisers (NVFP4, fp8 blocks, MX; issue 16, item 5):
// which random bits element i of a quantised tensor uses, and how many of them.
//
//   mixprec::block_stochastic_rounding sr;
//   sr.enabled = true;  sr.seed = 1234;  sr.tensor_id = 3;  sr.step = step;  sr.random_bits = 8;
//
// Element i takes word i % 4 of the Philox-4x32-10 block keyed by seed at the counter
// (i / 4, tensor id, step) (detail/philox.hpp), so its bits depend on (seed, tensor id, step, i)
// only, never on the SIMD path or the threads that split the work, and a resumed run that
// restores (seed, step) draws the same bits.  Each quantiser says how it numbers its elements.
//
// The k-bit rule (k = random_bits, 8, 16 or 32): of the discarded fraction f of |x| (in units of
// the gap between the two neighbours), only its top k bits count, and x rounds away from zero
// iff floor(f · 2^k) + r >= 2^k for r the word's low k bits; over the 2^k values of r that is
// floor(f · 2^k) round-aways exactly.  k = 32 is convert_stochastic's own rule; k = 8 models the
// 8 random bits per element of PTX's cvt.rs (Transformer Engine PR #3281), k = 16 torchao's
// _fp32_to_bf16_sr up to the bijection r -> 2^16 - 1 - r.  The low k bits placed at the top of
// the 32-bit word convert_stochastic compares give exactly that rule: r · 2^(32-k) + floor(f · 2^32)
// >= 2^32 iff r + floor(f · 2^k) >= 2^k.  Scales always round to nearest (TE; NVIDIA
// Model-Optimizer PR #2030).
#pragma once

#include <cstdint>
#include <string>

#include "config.hpp"
#include "detail/philox.hpp"
#include "errors.hpp"

namespace mixprec {

struct block_stochastic_rounding {
  bool enabled = false;
  std::uint64_t seed = 0;
  std::uint32_t tensor_id = 0;
  std::uint32_t step = 0;
  int random_bits = 32;  // k: 8, 16 or 32

  // Throws invalid_argument, naming `function`, for a k outside {8, 16, 32} when enabled.
  void check(const char* function) const {
    const int k = random_bits;
    if (enabled && k != 8 && k != 16 && k != 32) {
      throw invalid_argument(std::string(function) + ": random_bits is " + std::to_string(k) +
                             "; allowed: 8, 16 or 32");
    }
  }

  // The word convert_stochastic takes for element `index`: its k random bits at the top.
  MIXPREC_HOST_DEVICE constexpr std::uint32_t word(std::uint64_t index) const noexcept {
    return aligned(detail::philox_bits(seed, tensor_id, step, index));
  }
  // Element bits r (any 32 bits; the low k count) placed at the top, for the k-bit rule.
  MIXPREC_HOST_DEVICE constexpr std::uint32_t aligned(std::uint32_t r) const noexcept {
    return random_bits >= 32 || random_bits <= 0 ? r : r << (32 - random_bits);
  }
};

}  // namespace mixprec
