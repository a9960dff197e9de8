// The one rounding algorithm: a finite value (-1)^negative × significand × 2^exponent, given
// exactly, becomes the code of the nearest (or directed, odd, stochastic) value of a format.
// Every conversion of the library (from float, double, integers and every minifloat) ends
// here, so each format and mode is handled by the same lines.
#pragma once

#include <cstdint>

#include "bits.hpp"
#include "special_codes.hpp"

namespace mixprec::detail {

// Whether a value cut down to the format's last place goes one unit up (away from zero), given
// the cut-off bits `lost` (non-zero), worth lost × 2^-shift units in the last place, and
// whether the kept last bit is odd.  Round-to-odd moves up exactly when the kept bit is even:
// of the two neighbours it picks the odd one.
// Always inlined: out of line, the call took a quarter of a scalar conversion's time; inlined,
// the exhaustive sweep against the scalar conversions takes 35% less time (tests/bulk/bulk_sweep.cpp).
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE constexpr bool round_up(bool last_bit_odd, std::uint64_t lost, int shift,
                                                                 bool negative, round_mode mode,
                                                                 std::uint32_t random) noexcept {
  // The cut-off part against half a unit in the last place, 2^(shift-1).
  int versus_half = -1;
  if (shift <= 64) {
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    versus_half = lost < half ? -1 : (lost == half ? 0 : 1);
  }
  switch (mode) {
    case round_mode::nearest_even:
      return versus_half > 0 || (versus_half == 0 && last_bit_odd);
    case round_mode::nearest_away:
      return versus_half >= 0;
    case round_mode::nearest_zero:
      return versus_half > 0;
    case round_mode::toward_zero:
      return false;
    case round_mode::upward:
      return !negative;
    case round_mode::downward:
      return negative;
    case round_mode::to_odd:
      return !last_bit_odd;
    case round_mode::stochastic: {
      // Away from zero with probability (lost part / last place), read as a 32-bit fraction
      // (truncated): the carry out of fraction + random decides.
      std::uint64_t fraction = 0;
      if (shift <= 32) {
        fraction = lost << (32 - shift);
      } else if (shift < 96) {
        fraction = lost >> (shift - 32);
      }
      return ((fraction + random) >> 32) != 0;
    }
    case round_mode::stochastic_equal:
      // Away from zero with probability 1/2 whatever the distance (CPFloat's CPFLOAT_RND_SE):
      // the proportional rule above with the fraction read as exactly one half, so the carry
      // is the random word's top bit.  (The caller only asks when something was lost.)
      return (random >> 31) != 0;
  }
  return false;
}

// Drops the low Shift bits of a code (or significand) and rounds, without branches for the
// deterministic modes: adding (half - 1 + last bit) carries exactly when round-half-even goes
// up, adding half when round-half-away does, adding (2^Shift - 1) when a directed mode does.
// With no mantissa bits (e8m0) the last kept bit is the hidden one, which is odd.
template <int Shift, int MantissaBits>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE constexpr std::uint64_t round_right_shift(std::uint64_t x, bool negative,
                                                                                   round_mode mode,
                                                                                   std::uint32_t random) noexcept {
  if constexpr (Shift == 0) {
    return x;
  } else {
    constexpr std::uint64_t below = (std::uint64_t{1} << Shift) - 1;
    constexpr std::uint64_t half = std::uint64_t{1} << (Shift - 1);
    const std::uint64_t last_bit = MantissaBits == 0 ? 1 : (x >> Shift) & 1;
    switch (mode) {
      case round_mode::nearest_even:
        return (x + (half - 1) + last_bit) >> Shift;
      case round_mode::nearest_away:
        return (x + half) >> Shift;
      case round_mode::nearest_zero:
        return (x + (half - 1)) >> Shift;
      case round_mode::toward_zero:
        return x >> Shift;
      case round_mode::upward:
        return (x + (negative ? 0 : below)) >> Shift;
      case round_mode::downward:
        return (x + (negative ? below : 0)) >> Shift;
      case round_mode::to_odd: {
        const std::uint64_t kept = x >> Shift;
        return (x & below) != 0 && last_bit == 0 ? kept + 1 : kept;
      }
      case round_mode::stochastic:
      case round_mode::stochastic_equal: {
        const std::uint64_t kept = x >> Shift;
        const std::uint64_t lost = x & below;
        return lost != 0 && round_up(last_bit != 0, lost, Shift, negative, mode, random) ? kept + 1 : kept;
      }
    }
    return x >> Shift;
  }
}

template <class To>
MIXPREC_HOST_DEVICE constexpr typename format_traits<To>::storage_type round_pack(bool negative,
                                                                                  std::uint64_t significand,
                                                                                  int exponent, round_mode mode,
                                                                                  overflow o,
                                                                                  std::uint32_t random) noexcept {
  using traits = format_traits<To>;
  using codes = special_codes<To>;

  // 1. Zero, and numbers an unsigned format cannot hold.
  if (significand == 0) return codes::zero(negative, o);
  if (negative && !traits::is_signed) return codes::out_of_domain(o);

  // 2. Where the value sits: 2^e <= |x| < 2^(e+1).  At or above 2^(max_exponent+1) every mode
  //    overflows, and deciding it here keeps the shifts below in range.
  const int e = exponent + highest_bit(significand);
  if (e > traits::max_exponent) return codes::overflowed(negative, mode, o);
  // A format without zero (e8m0) has nothing below its smallest value: every smaller positive
  // number becomes that value, in every mode (docs/decisions.md, "e8m0 underflow").
  if (!traits::has_subnormals && e < traits::min_exponent) return codes::smallest();

  // 3. The weight of the format's last place at this magnitude: the binade's own for a normal
  //    result, the fixed subnormal quantum below the normal range.
  const int binade = e >= traits::min_exponent ? e : traits::min_exponent;
  const int shift = binade - traits::mantissa_bits - exponent;  // significand bits below the last place

  // 4. Keep the bits down to the last place and round by what was cut off.
  std::uint64_t kept = 0;
  if (shift <= 0) {
    if (-shift >= 64) MIXPREC_UNREACHABLE();  // e <= max_exponent bounds it; clang-analyzer cannot see that
    kept = significand << -shift;             // exact; kept < 2^precision, so no bit is lost
  } else {
    std::uint64_t lost = significand;  // the cut-off bits, worth lost × 2^(exponent)
    if (shift < 64) {
      kept = significand >> shift;
      lost = significand & ((std::uint64_t{1} << shift) - 1);
    }
    if (lost != 0) {
      if (round_up((kept & 1) != 0, lost, shift, negative, mode, random)) ++kept;
    }
  }

  // 5. Assemble.  A normal result's kept bits include the hidden one; adding them to the field
  //    below lets a carry out of the mantissa move into the exponent, and lets a subnormal that
  //    rounds up to 2^mantissa_bits become the smallest normal number.
  const std::int64_t field = binade + traits::bias;
  const std::int64_t code = (field - 1) * (std::int64_t{1} << traits::mantissa_bits) + static_cast<std::int64_t>(kept);
  if (code > static_cast<std::int64_t>(traits::max_finite_magnitude)) return codes::overflowed(negative, mode, o);
  return codes::with_sign(negative && (code != 0 || traits::has_negative_zero), static_cast<std::uint64_t>(code));
}

}  // namespace mixprec::detail
