// Fused quantisation passes for low-precision training (the fp8 recipes' inner loop):
//
//   float amax = quantize_n(x, n, q, scale);     q[i] = convert<T>(x[i] * scale), and
//                                                amax = max |x[i]| (NaN if any x[i] is NaN)
//   dequantize_n(q, n, y, scale_inv);            y[i] = float(q[i]) * scale_inv
//
// Each is one pass over memory on the SIMD path of simd_path.hpp, with the products computed in
// float exactly as the expressions above say, so every path gives the bits of the scalar loop.
// quantize_n saturates by default (Transformer Engine's convention: an out-of-range value
// becomes ±max, not inf or NaN).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "convert_n.hpp"
#include "dispatch.hpp"

namespace mixprec {

template <class To>
float quantize_n(const float* in, std::size_t n, To* out, float scale, rounding r = rounding::nearest_even,
                 overflow o = overflow::saturate) {
  detail::check_bulk_arguments("quantize_n", in, n, out);
  const simd_path path = active_simd_path();
  const bool large_output = n * sizeof(To) >= bulk_streaming_bytes;
  std::atomic<std::uint32_t> shared_largest{0};
  detail::for_each_chunk(n, [&](std::size_t, std::size_t begin, std::size_t end) {
    const std::uint32_t part =
        detail::quantize_serial(path, in + begin, end - begin, out + begin, scale, r, o, large_output);
    std::uint32_t seen = shared_largest.load();
    while (part > seen && !shared_largest.compare_exchange_weak(seen, part)) {
    }
  });
  const std::uint32_t largest = shared_largest.load();
  // The largest magnitude's bits; any NaN's bits exceed infinity's.
  return largest > 0x7F800000u ? detail::bit_cast<float>(0x7FC00000u) : detail::bit_cast<float>(largest);
}

template <class From>
void dequantize_n(const From* in, std::size_t n, float* out, float scale) {
  detail::check_bulk_arguments("dequantize_n", in, n, out);
  const simd_path path = active_simd_path();
  const bool large_output = n * sizeof(float) >= bulk_streaming_bytes;
  detail::for_each_chunk(n, [&](std::size_t, std::size_t begin, std::size_t end) {
    detail::dequantize_serial(path, in + begin, end - begin, out + begin, scale, large_output);
  });
}

}  // namespace mixprec
