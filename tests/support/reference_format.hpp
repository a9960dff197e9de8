// An oracle for rounding into a format that shares no code with the library: it reads the
// format's parameters (exponent and mantissa widths, bias, signedness, special-value scheme),
// builds the sorted table of its finite values from the textbook formula, and rounds by
// searching that table and comparing exactly with the midpoints.  The rules it applies are
// written out here from DESIGN.md ("Conversion") and IEEE 754-2019 §4.3, independently of
// include/mixprec/detail.
//
// Values are held as a type V with exact comparisons: double (every value and every midpoint
// of the library's formats is a double), or a Boost.Multiprecision type for wider results.
#pragma once

#include <mixprec/format.hpp>
#include <mixprec/rounding.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace mixprec_test {

// What the oracle knows of a format: only its descriptor numbers.
struct format_parameters {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool is_signed;
  bool has_subnormals;  // exponent field 0 holds subnormals and zero (else it is a normal binade)
  mixprec::special_encoding specials;

  int total_bits() const { return exponent_bits + mantissa_bits + (is_signed ? 1 : 0); }
  std::uint32_t sign_bit() const { return is_signed ? 1u << (exponent_bits + mantissa_bits) : 0u; }
  std::uint32_t magnitude_mask() const { return (1u << (exponent_bits + mantissa_bits)) - 1; }
};

template <class T>
format_parameters parameters_of() {
  using F = typename T::format;
  return {F::exponent_bits, F::mantissa_bits, F::bias, F::is_signed, F::has_subnormals, F::specials};
}

enum class code_class { finite, infinity, nan };

// Classifies a code straight from the spec's wording.
inline code_class classify(const format_parameters& p, std::uint32_t code) {
  const std::uint32_t magnitude = code & p.magnitude_mask();
  const std::uint32_t all_ones_exponent = ((1u << p.exponent_bits) - 1) << p.mantissa_bits;
  switch (p.specials) {
    case mixprec::special_encoding::ieee:
      if ((magnitude & all_ones_exponent) == all_ones_exponent) {
        return (magnitude & ((1u << p.mantissa_bits) - 1)) == 0 ? code_class::infinity : code_class::nan;
      }
      return code_class::finite;
    case mixprec::special_encoding::nan_all_ones:
      return magnitude == p.magnitude_mask() ? code_class::nan : code_class::finite;
    case mixprec::special_encoding::nan_negative_zero:
      return code == p.sign_bit() ? code_class::nan : code_class::finite;
    case mixprec::special_encoding::none:
      return code_class::finite;
  }
  throw std::logic_error("unknown special encoding");
}

// The value of a finite code: (-1)^s × 2^(e - bias) × 1.m, or × 2^(1 - bias) × 0.m for field 0
// of a format with subnormals.
inline double textbook_value(const format_parameters& p, std::uint32_t code) {
  const std::uint32_t magnitude = code & p.magnitude_mask();
  const int field = static_cast<int>(magnitude >> p.mantissa_bits);
  const double fraction = std::ldexp(static_cast<double>(magnitude & ((1u << p.mantissa_bits) - 1)), -p.mantissa_bits);
  const double value =
      (field == 0 && p.has_subnormals) ? std::ldexp(fraction, 1 - p.bias) : std::ldexp(1.0 + fraction, field - p.bias);
  return (code & p.sign_bit()) ? -value : value;
}

template <class V = double>
class reference_format {
 public:
  explicit reference_format(format_parameters p) : p_(p) {
    for (std::uint32_t code = 0; code <= p.magnitude_mask(); ++code) {
      if (classify(p, code) != code_class::finite) continue;
      const double value = textbook_value(p, code);
      if (value == 0.0) continue;  // zero is handled by rule, not by the table
      entries_.push_back({V(value), code});
    }
    std::sort(entries_.begin(), entries_.end(), [](const entry& a, const entry& b) { return a.value < b.value; });
    // The value the format would have next above max with an unbounded exponent range:
    // max + one unit in max's last place.  Rounding past the midpoint toward it overflows.
    const entry& top = entries_.back();
    const double max = textbook_value(p, top.code);
    const int max_exponent = std::ilogb(max);
    beyond_max_ = V(max) + V(std::ldexp(1.0, max_exponent - p.mantissa_bits));
    beyond_max_code_ = top.code + 1;
  }

  const format_parameters& parameters() const { return p_; }
  std::size_t positive_count() const { return entries_.size(); }
  const V& positive_value(std::size_t i) const { return entries_[i].value; }
  std::uint32_t positive_code(std::size_t i) const { return entries_[i].code; }

  // Where a magnitude m > 0 falls: entries_[below] <= m < entries_[below + 1] (below = -1
  // under the smallest value; below + 1 == size means past max, toward beyond_max_).
  struct position {
    long below;           // index of the largest value <= m, or -1
    bool exact;           // m equals entries_[below]
    int versus_midpoint;  // sign of m - (lower + upper) / 2 when not exact
  };

  // `hint` is an index to walk upward from (for callers stepping through increasing
  // magnitudes); the default, no_hint, bisects the whole table.
  static constexpr long no_hint = -2;
  position locate(const V& m, long hint = no_hint) const {
    long below = hint;
    if (below < -1 || below >= static_cast<long>(entries_.size()) ||
        (below >= 0 && entries_[static_cast<std::size_t>(below)].value > m)) {
      below = static_cast<long>(std::upper_bound(entries_.begin(), entries_.end(), m,
                                                 [](const V& x, const entry& e) { return x < e.value; }) -
                                entries_.begin()) -
              1;
    } else {
      while (below + 1 < static_cast<long>(entries_.size()) && entries_[static_cast<std::size_t>(below + 1)].value <= m)
        ++below;
    }
    position pos{below, false, 0};
    if (below >= 0 && entries_[static_cast<std::size_t>(below)].value == m) {
      pos.exact = true;
      return pos;
    }
    const V lower = below >= 0 ? entries_[static_cast<std::size_t>(below)].value : V(0);
    const V upper = upper_value(below);
    const V twice = m + m;  // compare 2m with lower + upper: exact, no halving needed
    const V sum = lower + upper;
    pos.versus_midpoint = twice < sum ? -1 : (twice == sum ? 0 : 1);
    return pos;
  }

  // The code the library must produce for the finite non-zero value ±m at `pos`, for a
  // deterministic rounding mode.
  std::uint32_t round(bool negative, const position& pos, mixprec::rounding r, mixprec::overflow o) const {
    if (negative && !p_.is_signed) return out_of_domain(o);
    if (pos.exact) return with_sign(negative, entries_[static_cast<std::size_t>(pos.below)].code);
    bool toward_upper = false;  // toward the larger magnitude
    switch (r) {
      case mixprec::rounding::nearest_even:
        toward_upper = pos.versus_midpoint > 0 || (pos.versus_midpoint == 0 && upper_is_even(pos.below));
        break;
      case mixprec::rounding::nearest_away:
        toward_upper = pos.versus_midpoint >= 0;
        break;
      case mixprec::rounding::toward_zero:
        toward_upper = false;
        break;
      case mixprec::rounding::upward:
        toward_upper = !negative;
        break;
      case mixprec::rounding::downward:
        toward_upper = negative;
        break;
      case mixprec::rounding::to_odd:
        toward_upper = !lower_is_odd(pos.below);
        break;
      case mixprec::rounding::nearest_zero:
        toward_upper = pos.versus_midpoint > 0;
        break;
    }
    return pick(negative, pos.below, toward_upper, r, o);
  }

  // Stochastic rounding: the two candidate codes (toward zero, away from zero) of ±m.
  struct candidates {
    std::uint32_t toward_zero;
    std::uint32_t away;
  };
  candidates stochastic_candidates(bool negative, const position& pos, mixprec::overflow o) const {
    if (pos.exact) {
      const std::uint32_t c = with_sign(negative, entries_[static_cast<std::size_t>(pos.below)].code);
      return {c, c};
    }
    // Stochastic overflow behaves like round-to-nearest overflow (DESIGN.md).
    return {pick(negative, pos.below, false, mixprec::rounding::nearest_even, o),
            pick(negative, pos.below, true, mixprec::rounding::nearest_even, o)};
  }

  // The lower and upper neighbours of a magnitude (upper past max is beyond_max()).
  V lower_value(long below) const { return below >= 0 ? entries_[static_cast<std::size_t>(below)].value : V(0); }
  V upper_value(long below) const {
    return below + 1 < static_cast<long>(entries_.size()) ? entries_[static_cast<std::size_t>(below + 1)].value
                                                          : beyond_max_;
  }

  // Codes of the special inputs.
  std::uint32_t nan(bool negative) const {
    switch (p_.specials) {
      case mixprec::special_encoding::ieee:
        return with_sign(negative,
                         (((1u << p_.exponent_bits) - 1) << p_.mantissa_bits) | (1u << (p_.mantissa_bits - 1)));
      case mixprec::special_encoding::nan_all_ones:
        return with_sign(negative, p_.magnitude_mask());
      case mixprec::special_encoding::nan_negative_zero:
        return p_.sign_bit();
      case mixprec::special_encoding::none:
        return max_code();  // DESIGN decision: +max, as CUDA
    }
    return 0;
  }
  std::uint32_t infinity(bool negative, mixprec::overflow o) const {
    if (negative && !p_.is_signed) return out_of_domain(o);
    return o == mixprec::overflow::saturate ? with_sign(negative, max_code()) : non_finite(negative);
  }
  std::uint32_t zero(bool negative, mixprec::overflow o) const {
    if (!p_.has_subnormals) return out_of_domain(o);  // no zero in the format
    const bool has_negative_zero = p_.is_signed && p_.specials != mixprec::special_encoding::nan_negative_zero;
    return negative && has_negative_zero ? p_.sign_bit() : 0u;
  }
  std::uint32_t max_code() const { return entries_.back().code; }

 private:
  struct entry {
    V value;
    std::uint32_t code;
  };

  std::uint32_t with_sign(bool negative, std::uint32_t magnitude_code) const {
    return negative ? magnitude_code | p_.sign_bit() : magnitude_code;
  }
  std::uint32_t out_of_domain(mixprec::overflow o) const {
    // Negative numbers and zero into an unsigned / zero-less format: NaN, or the smallest
    // value when saturating: zero where the format has one (ue4m3), else its smallest power (e8m0).
    if (o == mixprec::overflow::saturate || p_.specials == mixprec::special_encoding::none)
      return p_.has_subnormals ? 0u : entries_.front().code;
    return nan(false);
  }
  std::uint32_t non_finite(bool negative) const {
    if (p_.specials == mixprec::special_encoding::ieee)
      return with_sign(negative, ((1u << p_.exponent_bits) - 1) << p_.mantissa_bits);
    if (p_.specials == mixprec::special_encoding::none) return with_sign(negative, max_code());
    return nan(negative);
  }
  bool upper_is_even(long below) const {
    if (p_.mantissa_bits == 0) return true;  // powers of two (e8m0): ties go up (DESIGN.md)
    const std::uint32_t upper_code = below + 1 < static_cast<long>(entries_.size())
                                         ? entries_[static_cast<std::size_t>(below + 1)].code
                                         : beyond_max_code_;
    return (upper_code & 1u) == 0;
  }
  bool lower_is_odd(long below) const {
    if (below < 0) return false;             // zero is even
    if (p_.mantissa_bits == 0) return true;  // a power of two's significand is the odd 1
    return (entries_[static_cast<std::size_t>(below)].code & 1u) != 0;
  }
  std::uint32_t pick(bool negative, long below, bool toward_upper, mixprec::rounding r, mixprec::overflow o) const {
    if (!toward_upper) {
      if (below >= 0) return with_sign(negative, entries_[static_cast<std::size_t>(below)].code);
      if (!p_.has_subnormals) return entries_.front().code;  // nothing below the smallest: it stands in
      return zero(negative, mixprec::overflow::non_finite);
    }
    if (below + 1 < static_cast<long>(entries_.size())) {
      return with_sign(negative, entries_[static_cast<std::size_t>(below + 1)].code);
    }
    // Past max.  Saturation clamps, and so does round-to-odd, which never makes a non-finite
    // value from a finite one.  (toward_zero, upward for negatives and downward for positives
    // never ask for the upper neighbour.)
    const bool clamp = o == mixprec::overflow::saturate || r == mixprec::rounding::to_odd;
    return clamp ? with_sign(negative, max_code()) : non_finite(negative);
  }

  format_parameters p_;
  std::vector<entry> entries_;
  V beyond_max_{};
  std::uint32_t beyond_max_code_ = 0;
};

}  // namespace mixprec_test
