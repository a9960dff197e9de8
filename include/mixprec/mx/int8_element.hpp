// MXINT8's element (OCP MX v1.0 §5.3): an 8-bit two's complement integer k with the implicit
// scale 2^-6, so its value is k / 64, from -2 (0x80) to 127/64 = 1.984375 (0x7F); emax_elem 0.
//
//   auto p = mixprec::mxint8_element::nearest(1.3f);   // k = 83: 83/64 = 1.296875
//   float v = static_cast<float>(p);                   // exact
//
// nearest() is the element conversion of quantisation, as the authors' reference does it
// (microsoft/microxcaling, mx/cpp/quantize.cuh, quantize_elemwise with exp_bits 0 and
// rounding rd_away, the 'nearest' of mx/elemwise_ops.py _round_mantissa): k = x × 64 rounded to
// the nearest integer, halves away from zero, then clamped to ±127 (microxcaling clamps to
// ±max_norm = ±127/64, so 0x80 is never produced; it decodes to -2 as the spec's encoding says).
// The rounding here is exact for every float; the Python reference's floor(|x| × 64 + 0.5) in
// float rounds up the one float just below 0.5/64 (docs/decisions.md §15).
#pragma once

#include <cstdint>

#include "../config.hpp"

namespace mixprec {

class mxint8_element {
 public:
  using storage_type = std::uint8_t;
  static constexpr int fraction_bits = 6;  // value = k × 2^-6
  static constexpr int largest_integer = 127;

  constexpr mxint8_element() noexcept = default;

  MIXPREC_HOST_DEVICE static constexpr mxint8_element from_bits(std::uint8_t code) noexcept {
    mxint8_element e;
    e.code_ = code;
    return e;
  }
  MIXPREC_HOST_DEVICE constexpr std::uint8_t bits() const noexcept { return code_; }
  // k, the two's complement integer of the code: -128 ... 127.
  MIXPREC_HOST_DEVICE constexpr int integer() const noexcept { return code_ < 128 ? int{code_} : int{code_} - 256; }
  // k / 64, exact.
  MIXPREC_HOST_DEVICE explicit constexpr operator float() const noexcept {
    return static_cast<float>(integer()) / 64.0f;
  }

  // The element nearest x (x already divided by the block scale): k = x × 64 rounded half away
  // from zero, clamped to [-127, 127]; 0 for NaN.
  MIXPREC_HOST_DEVICE static constexpr mxint8_element nearest(float x) noexcept {
    const float magnitude = x < 0.0f ? -x : x;
    int k = largest_integer;
    if (!(magnitude == magnitude)) {
      k = 0;
    } else if (magnitude < 127.5f / 64.0f) {
      // x × 64 is exact (a power of two, below 128); so is its distance to its integer part
      // (Sterbenz, or the value itself below 1).
      const float scaled = magnitude * 64.0f;
      k = static_cast<int>(scaled);
      if (scaled - static_cast<float>(k) >= 0.5f) ++k;
    }
    return from_bits(static_cast<std::uint8_t>(x < 0.0f ? -k : k));
  }

  // Stochastic rounding of x (already divided by the block scale), convert_stochastic's rule on
  // the grid k/64: with k0 = floor(|x| × 64) and f the fraction above it, k0 + 1 iff
  // floor(f × 2^32) + random >= 2^32, then clamped to ±127; 0 for NaN.  (|x| × 64 and f are
  // exact in float below 2^24; larger values clamp anyway.)
  MIXPREC_HOST_DEVICE static constexpr mxint8_element stochastic(float x, std::uint32_t random) noexcept {
    const float magnitude = x < 0.0f ? -x : x;
    int k = largest_integer;
    if (!(magnitude == magnitude)) {
      k = 0;
    } else if (magnitude < 128.0f / 64.0f) {
      const float scaled = magnitude * 64.0f;
      k = static_cast<int>(scaled);
      const auto threshold = static_cast<std::uint64_t>(static_cast<double>(scaled - static_cast<float>(k)) *
                                                        4294967296.0);  // floor(f × 2^32): exact, f < 1
      if (threshold + random >= (std::uint64_t{1} << 32)) ++k;
      if (k > largest_integer) k = largest_integer;
    }
    return from_bits(static_cast<std::uint8_t>(x < 0.0f ? -k : k));
  }

 private:
  std::uint8_t code_ = 0;
};

}  // namespace mixprec
