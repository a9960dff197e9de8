// Bulk float <-> "truncated float" formats: float's sign and exponent with fewer mantissa bits,
// in codes wider than the vector kernels take (tfloat32: 19 bits in a 32-bit word).  Such a code
// is the float's bits shifted right by 23 - M, so rounding is one integer add before the shift
// (the carry runs from the mantissa into the exponent, subnormals included), and decoding is a
// shift back.  Plain loops over 32-bit words that the compiler vectorises; the bits are the scalar
// conversion's (tests/bulk/convert_n_test.cpp checks every mode and both overflow modes).
//
//   float bits   s | eeeeeeee | mmmmmmmmmm | xxxxxxxxxxxxx   (x: the 23 - M bits rounded off)
//   code                  s | eeeeeeee | mmmmmmmmmm
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../convert.hpp"

namespace mixprec::detail {

// Whether T is a minifloat of float's exponent, bias and specials with fewer mantissa bits, in
// codes of more than 16 bits (bfloat16 takes the vector kernels instead).
template <class T>
constexpr bool is_wide_truncated_float() {
  if constexpr (std::is_floating_point<T>::value || std::is_integral<T>::value) {
    return false;
  } else {
    using f = format_traits<format_of_t<T>>;
    return f::storage_bits > 16 && f::storage_bits <= 32 && f::exponent_bits == 8 && f::bias == 127 &&
           f::mantissa_bits >= 1 && f::mantissa_bits < 23 && f::specials == special_encoding::ieee && f::is_signed &&
           f::has_subnormals;
  }
}

template <class To>
struct truncated_float_layout {
  using traits = format_traits<typename To::format>;
  static constexpr int shift = 23 - traits::mantissa_bits;
  static constexpr std::uint32_t dropped = (std::uint32_t{1} << shift) - 1;
  static constexpr std::uint32_t half = std::uint32_t{1} << (shift - 1);
  static constexpr std::uint32_t float_infinity = 0x7F80'0000u;
  static constexpr auto max_finite = static_cast<std::uint32_t>(traits::max_finite_magnitude);
  static constexpr auto quiet_nan = static_cast<std::uint32_t>(traits::quiet_nan_code & traits::magnitude_mask);
};

// float -> To in one mode: the magnitude plus what rounds it up (0 to 2^shift - 1), shifted.
template <round_mode Mode, bool Saturate, class To>
void encode_truncated_float(const float* in, std::size_t n, To* out) {
  using L = truncated_float_layout<To>;
  using storage = typename format_traits<typename To::format>::storage_type;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t u = bit_cast<std::uint32_t>(in[i]);
    const std::uint32_t sign = u & 0x8000'0000u;
    const std::uint32_t m = u & 0x7FFF'FFFFu;
    std::uint32_t add = 0;
    if constexpr (Mode == round_mode::nearest_even) add = L::half - 1 + ((m >> L::shift) & 1);
    if constexpr (Mode == round_mode::nearest_away) add = L::half;
    if constexpr (Mode == round_mode::nearest_zero) add = L::half - 1;
    if constexpr (Mode == round_mode::upward) add = sign != 0 ? 0 : L::dropped;
    if constexpr (Mode == round_mode::downward) add = sign != 0 ? L::dropped : 0;
    std::uint32_t r = (m + add) >> L::shift;  // ±inf stays inf: its dropped bits are 0
    // Round to odd: set the last bit when anything was dropped (never reaches inf: max is odd).
    if constexpr (Mode == round_mode::to_odd) r |= (m & L::dropped) != 0 ? 1u : 0u;
    if constexpr (Saturate) r = r > L::max_finite ? L::max_finite : r;  // inf included
    r = m > L::float_infinity ? L::quiet_nan : r;                       // NaN: the canonical quiet NaN
    out[i] = code_access::make<To>(static_cast<storage>((sign >> L::shift) | r));
  }
}

// float -> To in mode r; false for a mode this loop does not know (the caller converts then).
template <class To>
bool encode_truncated_float(const float* in, std::size_t n, To* out, rounding r, overflow o) {
  const bool saturate = o == overflow::saturate;
#define MIXPREC_TRUNCATED_CASE(mode)                                               \
  case rounding::mode:                                                             \
    return saturate ? encode_truncated_float<round_mode::mode, true>(in, n, out)   \
                    : encode_truncated_float<round_mode::mode, false>(in, n, out), \
           true;
  switch (r) {
    MIXPREC_TRUNCATED_CASE(nearest_even)
    MIXPREC_TRUNCATED_CASE(nearest_away)
    MIXPREC_TRUNCATED_CASE(nearest_zero)
    MIXPREC_TRUNCATED_CASE(toward_zero)
    MIXPREC_TRUNCATED_CASE(upward)
    MIXPREC_TRUNCATED_CASE(downward)
    MIXPREC_TRUNCATED_CASE(to_odd)
    default:
      return false;
  }
#undef MIXPREC_TRUNCATED_CASE
}

// From -> float: exact; a NaN keeps its payload and is quieted (IEEE 754-2019 §6.2.3), as the
// scalar widening conversion does.
template <class From>
void decode_truncated_float(const From* in, std::size_t n, float* out) {
  using L = truncated_float_layout<From>;
  using traits = format_traits<typename From::format>;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t c = in[i].bits();
    const std::uint32_t quiet = (c & traits::magnitude_mask) > traits::infinity_magnitude ? 0x0040'0000u : 0u;
    out[i] = bit_cast<float>((c << L::shift) | quiet);
  }
}

}  // namespace mixprec::detail
