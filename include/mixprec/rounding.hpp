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
  }
  return "invalid rounding";
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
