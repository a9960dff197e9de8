// The largest magnitude of an array, for the fp8 recipes that scale from it (current scaling,
// scaling/fp8/current_scaling.hpp):
//
//   float amax = amax_n(x, n);    max |x[i]| over the array; NaN if any x[i] is NaN; 0 if n == 0
//
// One read of the array on the active SIMD path (simd_path.hpp), split over bulk_threads() as
// convert_n is.  The maximum is taken on the float bits with the sign cleared: for non-negative
// floats the integer order is the numeric order, and every NaN's bits lie above infinity's, so a
// NaN anywhere wins whatever the order of the reduction.  (Transformer Engine's amax kernels use
// fmaxf, which drops NaNs instead; docs/fp8.md says why mixprec reports them.)
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../detail/bits.hpp"
#include "../detail/extent.hpp"
#include "../errors.hpp"
#include "convert_n.hpp"
#include "dispatch.hpp"

namespace mixprec {
namespace detail {

// The float that largest-magnitude bits stand for: the canonical quiet NaN for any NaN.
inline float magnitude_from_bits(std::uint32_t largest) noexcept {
  return largest > 0x7F80'0000u ? bit_cast<float>(0x7FC0'0000u) : bit_cast<float>(largest);
}

}  // namespace detail

inline float amax_n(const float* in, std::size_t n) {
  if (n > 0 && in == nullptr) throw invalid_argument("amax_n: null input pointer with n = " + std::to_string(n));
  detail::check_array_extent("amax_n", "input", in, n);
  const simd_path path = active_simd_path();
  std::atomic<std::uint32_t> shared_largest{0};
  detail::for_each_chunk(n, [&](std::size_t, std::size_t begin, std::size_t end) {
    const std::uint32_t part = detail::largest_magnitude_bits(path, in + begin, end - begin);
    std::uint32_t seen = shared_largest.load();
    while (part > seen && !shared_largest.compare_exchange_weak(seen, part)) {
    }
  });
  return detail::magnitude_from_bits(shared_largest.load());
}

}  // namespace mixprec
