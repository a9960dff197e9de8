// Rounding and overflow modes of every conversion (DESIGN.md, "Conversion").
#pragma once

namespace mixprec {

enum class rounding {
  nearest_even,  // IEEE 754-2019 roundTiesToEven (§4.3.1)
  nearest_away,  // roundTiesToAway (§4.3.1)
  toward_zero,   // roundTowardZero (§4.3.2)
  upward,        // roundTowardPositive (§4.3.2)
  downward,      // roundTowardNegative (§4.3.2)
  to_odd,        // round to odd: truncate, then set the last bit if anything was lost.  A later
                 // rounding to a format at least two bits narrower is then exact (Boldo &
                 // Melquiond, "Emulation of FMA and correctly rounded sums", IEEE TC 2008).
  nearest_zero,  // round to nearest, ties toward zero: CPFloat's CPFLOAT_RND_NZ (not an IEEE 754
                 // attribute; src/cpfloat_template.h, RN_TIES_TO_ZERO).  Overflows like the
                 // other nearest modes.
};

// The last rounding: loops and range checks over every mode end here.
constexpr rounding last_rounding = rounding::nearest_zero;

// How stochastic rounding (convert_stochastic, convert_stochastic_n) picks between the two
// neighbours of a value the format does not hold.  Values it holds never move.
enum class stochastic_rule {
  proportional,       // away from zero with probability (distance to the neighbour toward zero) /
                      // gap, read to 32 bits: CPFloat's CPFLOAT_RND_SP, the cvt .rs rule
  equal_probability,  // either neighbour with probability 1/2: CPFloat's CPFLOAT_RND_SE
};

// What a conversion does with results below the target's smallest normal magnitude.
enum class subnormals {
  keep,   // round to the format's subnormals (IEEE 754; CPFloat's CPFLOAT_SUBN_USE)
  flush,  // round to a multiple of the smallest normal magnitude instead: ±0 or ±min normal, by
          // the rounding mode (CPFloat's CPFLOAT_SUBN_RND; detail/subnormal_flush.hpp has the
          // rule for ties and round-to-odd)
};

enum class overflow {
  non_finite,  // beyond the range: infinity, else NaN where the format has no infinity, else ±max
  saturate,    // every non-NaN input gives a finite value: ±max at the top (±inf included)
};

constexpr const char* to_string(rounding r) noexcept {
  switch (r) {
    case rounding::nearest_even:
      return "nearest_even";
    case rounding::nearest_away:
      return "nearest_away";
    case rounding::toward_zero:
      return "toward_zero";
    case rounding::upward:
      return "upward";
    case rounding::downward:
      return "downward";
    case rounding::to_odd:
      return "to_odd";
    case rounding::nearest_zero:
      return "nearest_zero";
  }
  return "invalid rounding";
}

constexpr const char* to_string(stochastic_rule r) noexcept {
  switch (r) {
    case stochastic_rule::proportional:
      return "proportional";
    case stochastic_rule::equal_probability:
      return "equal_probability";
  }
  return "invalid stochastic_rule";
}

constexpr const char* to_string(subnormals s) noexcept {
  switch (s) {
    case subnormals::keep:
      return "keep";
    case subnormals::flush:
      return "flush";
  }
  return "invalid subnormals";
}

constexpr const char* to_string(overflow o) noexcept {
  switch (o) {
    case overflow::non_finite:
      return "non_finite";
    case overflow::saturate:
      return "saturate";
  }
  return "invalid overflow";
}

}  // namespace mixprec
