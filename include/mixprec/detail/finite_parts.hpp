// A finite code of any format as ±significand × 2^exponent: what the rounding functions take.
#pragma once

#include <cstdint>

#include "../format.hpp"

namespace mixprec::detail {

// A finite code as ±significand × 2^exponent (significand 0 for zero).
struct finite_parts {
  bool negative;
  std::uint64_t significand;
  int exponent;
};

template <class Format>
MIXPREC_HOST_DEVICE constexpr finite_parts decompose(std::uint64_t code) noexcept {
  using traits = format_traits<Format>;
  const std::uint64_t magnitude = code & traits::magnitude_mask;
  const int field = static_cast<int>(magnitude >> traits::mantissa_bits);
  const std::uint64_t mantissa = magnitude & traits::mantissa_mask;
  if (field >= traits::min_normal_field) {
    return {traits::is_negative(code), mantissa | (std::uint64_t{1} << traits::mantissa_bits),
            field - traits::bias - traits::mantissa_bits};
  }
  return {traits::is_negative(code), mantissa, traits::min_quantum_exponent};
}

}  // namespace mixprec::detail
