// Bit-level helpers: bit casts and leading-zero counts usable on host and device, in constexpr
// where the compiler allows it.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../config.hpp"

namespace mixprec::detail {

template <class To, class From>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR To bit_cast(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs types of one size");
  static_assert(std::is_trivially_copyable<To>::value && std::is_trivially_copyable<From>::value,
                "bit_cast needs trivially copyable types");
#if MIXPREC_HAS_BUILTIN_BIT_CAST
  return __builtin_bit_cast(To, from);
#else
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
#endif
}

// Number of leading zero bits of a non-zero 64-bit value.
MIXPREC_HOST_DEVICE constexpr int count_leading_zeros(std::uint64_t x) noexcept {
#if MIXPREC_DEVICE_PASS
  return __clzll(static_cast<long long>(x));
#elif defined(__GNUC__) || defined(__clang__)
  return __builtin_clzll(x);
#else
  int n = 0;
  for (std::uint64_t bit = std::uint64_t{1} << 63; (x & bit) == 0; bit >>= 1) ++n;
  return n;
#endif
}

// Position of the highest set bit of a non-zero value (0 for 1).
MIXPREC_HOST_DEVICE constexpr int highest_bit(std::uint64_t x) noexcept { return 63 - count_leading_zeros(x); }

// The smallest unsigned type with at least Bits bits.
template <int Bits>
using uint_least_t = std::conditional_t<
    (Bits <= 8), std::uint8_t,
    std::conditional_t<(Bits <= 16), std::uint16_t, std::conditional_t<(Bits <= 32), std::uint32_t, std::uint64_t>>>;

}  // namespace mixprec::detail
