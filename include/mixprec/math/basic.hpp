// The exact <cmath> functions: classification, sign manipulation, fmin/fmax, nextafter,
// frexp/ldexp and rounding to an integral value.  None of them needs an approximation: each
// result is a code of the format computed from the operands' codes, or (floor, ceil, trunc,
// round, ldexp) an exact value rounded once by the library's conversion.
#pragma once

#include <cstdint>

#include "../detail/convert_bits.hpp"
#include "../minifloat.hpp"
#include "libm.hpp"
#include "nan.hpp"

namespace mixprec {

// ---- Classification (C17 7.12.3; every code of the format has exactly one class) ----------

template <class Format>
MIXPREC_HOST_DEVICE constexpr bool isnan(minifloat<Format> x) noexcept {
  return format_traits<Format>::is_nan(x.bits());
}

template <class Format>
MIXPREC_HOST_DEVICE constexpr bool isinf(minifloat<Format> x) noexcept {
  return format_traits<Format>::is_infinity(x.bits());
}

template <class Format>
MIXPREC_HOST_DEVICE constexpr bool isfinite(minifloat<Format> x) noexcept {
  return !isnan(x) && !isinf(x);
}

// Finite, non-zero and not subnormal.  Every non-NaN e8m0 value is normal (field 0 is the
// binade 2^-127, not subnormals).
template <class Format>
MIXPREC_HOST_DEVICE constexpr bool isnormal(minifloat<Format> x) noexcept {
  using traits = format_traits<Format>;
  const int field = static_cast<int>((x.bits() & traits::magnitude_mask) >> traits::mantissa_bits);
  return isfinite(x) && field >= traits::min_normal_field;
}

// The sign bit (NaN included, as C's signbit): the sign of static_cast<double>(x).  The fnuz
// NaN 1000...0 has its sign bit set, so it reads negative, as its conversion to double does;
// e8m0 has no sign bit.
template <class Format>
MIXPREC_HOST_DEVICE constexpr bool signbit(minifloat<Format> x) noexcept {
  return format_traits<Format>::is_negative(x.bits());
}

// ---- Sign manipulation (IEEE 754-2019 §5.5.1: quiet, bit-level operations) ----------------

// |x| with the sign of y.  In fnuz formats the sign bit over a zero magnitude is the NaN, so
// zero stays +0 and NaN stays NaN there.  e8m0 is unsigned: copysign(x, y) == x.
template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> copysign(minifloat<Format> x, minifloat<Format> y) noexcept {
  using traits = format_traits<Format>;
  using storage = typename traits::storage_type;
  if constexpr (traits::specials == special_encoding::nan_negative_zero) {
    if ((x.bits() & traits::magnitude_mask) == 0) return x;
  }
  return detail::code_access::make<minifloat<Format>>(
      static_cast<storage>((x.bits() & traits::magnitude_mask) | (y.bits() & traits::sign_mask)));
}

template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> fabs(minifloat<Format> x) noexcept {
  using traits = format_traits<Format>;
  if constexpr (traits::specials == special_encoding::nan_negative_zero) {
    if ((x.bits() & traits::magnitude_mask) == 0) return x;  // +0, or the NaN
  }
  return detail::code_access::make<minifloat<Format>>(
      static_cast<typename traits::storage_type>(x.bits() & traits::magnitude_mask));
}

template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> abs(minifloat<Format> x) noexcept {
  return fabs(x);
}

// ---- fmin, fmax (C17 7.12.12; IEEE 754-2019 §9.6 minimumNumber / maximumNumber) -----------

namespace detail {
// Total order of the non-NaN codes with -0 below +0: the key for fmin/fmax.
template <class Format>
MIXPREC_HOST_DEVICE constexpr std::int64_t signed_zero_order(std::uint64_t code) noexcept {
  using traits = format_traits<Format>;
  const auto magnitude = static_cast<std::int64_t>(code & traits::magnitude_mask);
  return traits::is_negative(code) ? -magnitude - 1 : magnitude;
}
}  // namespace detail

// The smaller operand; a NaN operand is ignored (both NaN: the first, quieted).  -0 counts as
// smaller than +0, as IEEE 754-2019 minimumNumber and C17 F.10.9.2's recommendation.
template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> fmin(minifloat<Format> x, minifloat<Format> y) noexcept {
  if (isnan(x)) return isnan(y) ? detail::quieted(x) : y;
  if (isnan(y)) return x;
  return detail::signed_zero_order<Format>(y.bits()) < detail::signed_zero_order<Format>(x.bits()) ? y : x;
}

template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> fmax(minifloat<Format> x, minifloat<Format> y) noexcept {
  if (isnan(x)) return isnan(y) ? detail::quieted(x) : y;
  if (isnan(y)) return x;
  return detail::signed_zero_order<Format>(y.bits()) > detail::signed_zero_order<Format>(x.bits()) ? y : x;
}

// ---- nextafter (C17 7.12.11.3; IEEE 754-2019 §5.3.1 nextUp / nextDown) ---------------------

// The neighbour of x in the direction of y, by one code: NaN if either is NaN (the first NaN,
// quieted); y if x == y (so nextafter(+0, -0) is -0).  From a zero it steps to ±denorm_min; onto
// zero from below it lands on -0 (+0 in fnuz formats, which have no -0), as nextUp(-denorm_min)
// = -0.  Past max: y > max exists only where the format has +inf, and the step from max gives
// +inf there, as IEEE's nextUp(max) and as a conversion of a value past max
// (overflow::non_finite).  Formats without infinity never step past max, e8m0 never below
// 2^-127: no y lies beyond them.
template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> nextafter(minifloat<Format> x, minifloat<Format> y) noexcept {
  using traits = format_traits<Format>;
  using storage = typename traits::storage_type;
  if (isnan(x) || isnan(y)) return detail::first_nan(x, y);
  if (x == y) return y;
  const auto magnitude = static_cast<std::int64_t>(x.bits() & traits::magnitude_mask);
  const std::int64_t position = traits::is_negative(x.bits()) ? -magnitude : magnitude;
  const std::int64_t next = y > x ? position + 1 : position - 1;
  if (next == 0) {
    const bool negative_zero = traits::is_negative(x.bits()) && traits::has_negative_zero;
    return detail::code_access::make<minifloat<Format>>(static_cast<storage>(negative_zero ? traits::sign_mask : 0));
  }
  const std::uint64_t code =
      next < 0 ? traits::sign_mask | static_cast<std::uint64_t>(-next) : static_cast<std::uint64_t>(next);
  return detail::code_access::make<minifloat<Format>>(static_cast<storage>(code));
}

// ---- ldexp, frexp (C17 7.12.6.6, 7.12.6.4) ---------------------------------------------------

// x × 2^n, rounded once (to nearest even, then the conversion's overflow rule) when it leaves
// the format's range: overflow gives inf / NaN / ±max, underflow ±0 (e8m0: 2^-127).
template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> ldexp(minifloat<Format> x, int n) noexcept {
  using traits = format_traits<Format>;
  if (isnan(x)) return detail::quieted(x);
  if (isinf(x)) return x;
  const detail::finite_parts parts = detail::decompose<Format>(x.bits());
  if (parts.significand == 0) return x;
  // Past these every result over- or underflows alike; clamping keeps the exponent arithmetic
  // in range.
  constexpr int limit = 4 * (traits::max_exponent - traits::min_quantum_exponent + 2);
  const int scale = n > limit ? limit : (n < -limit ? -limit : n);
  return detail::code_access::make<minifloat<Format>>(
      detail::round_pack<Format>(parts.negative, parts.significand, parts.exponent + scale,
                                 detail::round_mode::nearest_even, overflow::non_finite, 0));
}

template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> scalbn(minifloat<Format> x, int n) noexcept {
  return ldexp(x, n);
}

// x = m × 2^*exponent with 0.5 <= |m| < 1, m of x's sign; zero, inf and NaN give x itself
// (NaN quieted) and *exponent = 0.  m has x's significand, so the format must hold every
// significand in [0.5, 1): that takes 2^-1 >= the smallest normal value.  float6_e2m3fn and
// float4_e2m1fn fail it (their [0.5, 1) is subnormal: 1.125 would need m = 0.5625, which fp6
// e2m3 cannot hold) and are rejected at compile time; use frexp on static_cast<float>(x).
template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> frexp(minifloat<Format> x, int* exponent) noexcept {
  using traits = format_traits<Format>;
  static_assert(traits::min_exponent <= -1,
                "frexp: this format cannot hold the significand m in [0.5, 1) (its smallest normal value is above "
                "0.5); use frexp on static_cast<float>(x)");
  *exponent = 0;
  if (isnan(x)) return detail::quieted(x);
  if (isinf(x)) return x;
  const detail::finite_parts parts = detail::decompose<Format>(x.bits());
  if (parts.significand == 0) return x;
  // x = significand × 2^e with 2^top <= significand < 2^(top + 1); m = significand × 2^-(top + 1).
  const int top = detail::highest_bit(parts.significand);
  *exponent = parts.exponent + top + 1;
  return detail::code_access::make<minifloat<Format>>(detail::round_pack<Format>(
      parts.negative, parts.significand, -(top + 1), detail::round_mode::nearest_even, overflow::non_finite, 0));
}

// ---- Rounding to an integral value (C17 7.12.9) ---------------------------------------------
// Exact in the arithmetic type (float or double, which hold every value of the format), and the
// integral result is a value of the format (it has no more significant bits than x), so the
// conversion back is exact; it applies the format's rules to zero results: -0 becomes +0 in
// fnuz formats, and in e8m0, which has no zero, floor/trunc/round of x < 1 (giving 0) is NaN.

namespace detail {
template <class Format, class Operation>
MIXPREC_HOST_DEVICE minifloat<Format> integral_value(minifloat<Format> x, Operation operation) noexcept {
  using wide = typename arithmetic_type_of<Format>::type;
  if (isnan(x)) return quieted(x);
  return minifloat<Format>(operation(static_cast<wide>(x)));
}
struct floor_operation {
  template <class W>
  MIXPREC_HOST_DEVICE W operator()(W w) const noexcept {
    return libm::floor(w);
  }
};
struct ceil_operation {
  template <class W>
  MIXPREC_HOST_DEVICE W operator()(W w) const noexcept {
    return libm::ceil(w);
  }
};
struct trunc_operation {
  template <class W>
  MIXPREC_HOST_DEVICE W operator()(W w) const noexcept {
    return libm::trunc(w);
  }
};
struct round_operation {
  template <class W>
  MIXPREC_HOST_DEVICE W operator()(W w) const noexcept {
    return libm::round(w);
  }
};
}  // namespace detail

template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> floor(minifloat<Format> x) noexcept {
  return detail::integral_value(x, detail::floor_operation{});
}
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> ceil(minifloat<Format> x) noexcept {
  return detail::integral_value(x, detail::ceil_operation{});
}
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> trunc(minifloat<Format> x) noexcept {
  return detail::integral_value(x, detail::trunc_operation{});
}
// Halfway cases away from zero (C17 7.12.9.6).
template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> round(minifloat<Format> x) noexcept {
  return detail::integral_value(x, detail::round_operation{});
}

}  // namespace mixprec
