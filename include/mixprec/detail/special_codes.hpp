// The codes a conversion produces when the input is not an ordinary in-range number: NaN,
// infinity, overflow, zero, and inputs an unsigned or zero-less format cannot hold.  Every rule
// here is DESIGN.md's "Conversion" section; docs/decisions.md records what the reference
// libraries do where they differ.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../format.hpp"
#include "../rounding.hpp"

namespace mixprec::detail {

// The public rounding modes plus the two stochastic roundings (which also need random bits).
// The first seven values line up with mixprec::rounding.
//   stochastic        away from zero with probability (distance to the value toward zero) / gap
//   stochastic_equal  away from zero with probability 1/2 when inexact (CPFloat's CPFLOAT_RND_SE)
enum class round_mode : unsigned char {
  nearest_even,
  nearest_away,
  toward_zero,
  upward,
  downward,
  to_odd,
  nearest_zero,
  stochastic,
  stochastic_equal,
};

MIXPREC_HOST_DEVICE constexpr round_mode to_round_mode(rounding r) noexcept {
  return static_cast<round_mode>(static_cast<unsigned char>(r));
}
// The rounding argument of the bulk dispatch (bulk/dispatch.hpp, the kernels' encode_from_float):
// a `rounding` chosen at run time, or nearest_even_only, nearest-even known at compile time, for
// which the dispatch compiles the nearest-even kernels alone (convert_n(in, n, out): a file that
// calls only that form does not compile the kernel of the other modes; docs/performance.md,
// "Compile time").  nearest_even_only converts to rounding::nearest_even wherever a value is read.
using nearest_even_only = std::integral_constant<rounding, rounding::nearest_even>;
template <class Rounding>
constexpr bool is_run_time_rounding = std::is_same<Rounding, rounding>::value;

MIXPREC_HOST_DEVICE constexpr round_mode stochastic_mode(stochastic_rule rule) noexcept {
  return rule == stochastic_rule::equal_probability ? round_mode::stochastic_equal : round_mode::stochastic;
}

template <class To>
struct special_codes {
  using traits = format_traits<To>;
  using code_type = typename traits::storage_type;

  // Branch-free: data signs are random, and a branch here mispredicts half the time.
  MIXPREC_HOST_DEVICE static constexpr code_type with_sign(bool negative, std::uint64_t magnitude) noexcept {
    return static_cast<code_type>(magnitude | (traits::sign_mask * static_cast<std::uint64_t>(negative)));
  }

  MIXPREC_HOST_DEVICE static constexpr code_type max_finite(bool negative) noexcept {
    return with_sign(negative, traits::max_finite_magnitude);
  }

  // The smallest value an unsigned or zero-less format has: zero, or (e8m0) its lowest power.
  MIXPREC_HOST_DEVICE static constexpr code_type smallest() noexcept { return 0; }

  // A NaN input.  NaN stays NaN with its sign where the format has signed NaNs; the format's
  // canonical quiet NaN is used, except that a wider IEEE format keeps an IEEE payload
  // (IEEE 754-2019 §6.2.3).  Formats without NaN (fp6/fp4) give +max, as CUDA's cvt does.
  template <class From>
  MIXPREC_HOST_DEVICE static constexpr code_type nan(bool negative, std::uint64_t from_code) noexcept {
    using from = format_traits<From>;
    if constexpr (traits::specials == special_encoding::none) {
      return max_finite(false);
    } else if constexpr (from::specials == special_encoding::ieee && traits::specials == special_encoding::ieee &&
                         traits::mantissa_bits >= from::mantissa_bits) {
      const std::uint64_t payload = (from_code & from::mantissa_mask) << (traits::mantissa_bits - from::mantissa_bits);
      return with_sign(negative, traits::quiet_nan_code | payload);
    } else {
      return with_sign(negative && traits::has_signed_nan, traits::quiet_nan_code);
    }
  }

  // What overflow::non_finite asks for: infinity, else NaN, else ±max.
  MIXPREC_HOST_DEVICE static constexpr code_type non_finite(bool negative) noexcept {
    if constexpr (traits::has_infinity) {
      return with_sign(negative, traits::infinity_magnitude);
    } else if constexpr (traits::has_nan) {
      return with_sign(negative && traits::has_signed_nan, traits::quiet_nan_code);
    } else {
      return max_finite(negative);
    }
  }

  // ±infinity in.
  MIXPREC_HOST_DEVICE static constexpr code_type infinity(bool negative, overflow o) noexcept {
    if (negative && !traits::is_signed) return out_of_domain(o);
    return o == overflow::saturate ? max_finite(negative) : non_finite(negative);
  }

  // A finite value beyond the largest finite one.  IEEE 754-2019 §7.4: the directed modes
  // that round toward the range (toward zero; upward for negatives; downward for positives)
  // give ±max; round-to-odd gives ±max too (it never creates a non-finite value).
  MIXPREC_HOST_DEVICE static constexpr code_type overflowed(bool negative, round_mode mode, overflow o) noexcept {
    const bool clamp = o == overflow::saturate || mode == round_mode::toward_zero || mode == round_mode::to_odd ||
                       (mode == round_mode::upward && negative) || (mode == round_mode::downward && !negative);
    return clamp ? max_finite(negative) : non_finite(negative);
  }

  // A negative number (or -inf) into an unsigned format: NaN, or the smallest value when
  // saturating ("saturate clips to the range").
  MIXPREC_HOST_DEVICE static constexpr code_type out_of_domain(overflow o) noexcept {
    if (o == overflow::saturate || !traits::has_nan) return smallest();
    return static_cast<code_type>(traits::quiet_nan_code);
  }

  // ±0 in.  Formats without -0 give +0; formats without zero treat it like a negative input.
  MIXPREC_HOST_DEVICE static constexpr code_type zero(bool negative, overflow o) noexcept {
    if constexpr (!traits::has_zero) {
      return out_of_domain(o);
    } else {
      return with_sign(negative && traits::has_negative_zero, 0);
    }
  }
};

}  // namespace mixprec::detail
