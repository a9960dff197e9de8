// The random words of stochastic rounding that runs element by element (the narrow integers'
// packing, the stochastic block quantisers), computed in vector lanes on a SIMD path:
//
//   detail::philox_words(path, seed, tensor, step, first, n, out);  // out[i] = philox_bits(seed, tensor, step, first +
//   i) detail::stochastic_words(path, sr, first, n, out);              // out[i] = sr.word(first + i)
//
// The same words as detail/philox.hpp's scalar functions on every path (tests/bulk/random_words_test.cpp).
// One scalar Philox-4x32-10 evaluation per element cost about 20 ns; the vector kernel
// (kernels::philox_words) makes a word in about 25 vector instructions per lane-block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../block_stochastic_rounding.hpp"
#include "../detail/philox.hpp"
#include "dispatch.hpp"
#include "simd_path.hpp"

namespace mixprec::detail {

inline void philox_words(simd_path path, std::uint64_t seed, std::uint32_t tensor, std::uint32_t step,
                         std::uint64_t first, std::size_t n, std::uint32_t* out) {
  const bool vectorised =
      with_kernels(path, [&](auto target) { decltype(target)::philox_words(seed, tensor, step, first, n, out); });
  if (vectorised) return;
  for (std::size_t i = 0; i < n; ++i) out[i] = philox_bits(seed, tensor, step, first + i);  // no vector kernels
}

// The words of sr's stream, its k random bits at the top (block_stochastic_rounding::word).
inline void stochastic_words(simd_path path, const block_stochastic_rounding& sr, std::uint64_t first, std::size_t n,
                             std::uint32_t* out) {
  philox_words(path, sr.seed, sr.tensor_id, sr.step, first, n, out);
  if (sr.random_bits < 32) {
    for (std::size_t i = 0; i < n; ++i) out[i] = sr.aligned(out[i]);
  }
}

}  // namespace mixprec::detail
