// std::numeric_limits for every minifloat, with the standard's meanings (C++17
// [numeric.limits.members]): min() is the smallest positive *normal* value, lowest() the most
// negative finite one, epsilon() the gap between 1 and the next value.  And
// describe<T>(): the same facts (plus derived ones, such as the dynamic range) as one constexpr
// struct of plain numbers, for tables and generic code; it describes the narrow integers
// (intn.hpp: int4 ... uint1; include it to name them) too, whose numeric_limits are intn.hpp's.
#pragma once

#include <cstdint>
#include <limits>

#include "detail/constexpr_math.hpp"
#include "detail/intn_declaration.hpp"
#include "minifloat.hpp"

namespace mixprec {
namespace detail {

template <class Format>
struct limit_codes {
  using traits = format_traits<Format>;
  using T = minifloat<Format>;
  MIXPREC_HOST_DEVICE static constexpr T make(std::uint64_t code) noexcept {
    return code_access::make<T>(static_cast<typename traits::storage_type>(code));
  }
  // 2^k, built by the rounding core so no bit cast is needed at compile time.
  MIXPREC_HOST_DEVICE static constexpr T power_of_two(int k) noexcept {
    return make(round_pack<Format>(false, 1, k, round_mode::nearest_even, overflow::non_finite, 0));
  }
  MIXPREC_HOST_DEVICE static constexpr T min_normal() noexcept {
    return make(std::uint64_t(traits::min_normal_field) << traits::mantissa_bits);
  }
  MIXPREC_HOST_DEVICE static constexpr T max_finite() noexcept { return make(traits::max_finite_magnitude); }
};

// The value of a (finite) code as a double, computed without bit casts.
template <class Format>
constexpr double code_value(std::uint64_t code) noexcept {
  using traits = format_traits<Format>;
  const std::uint64_t magnitude = code & traits::magnitude_mask;
  const int field = static_cast<int>(magnitude >> traits::mantissa_bits);
  const std::uint64_t mantissa = magnitude & traits::mantissa_mask;
  const double sign = traits::is_negative(code) ? -1.0 : 1.0;
  if (field < traits::min_normal_field) {
    return sign * static_cast<double>(mantissa) * power_of_two(traits::min_quantum_exponent);
  }
  const double significand = static_cast<double>(mantissa | (std::uint64_t{1} << traits::mantissa_bits));
  return sign * significand * power_of_two(field - traits::bias - traits::mantissa_bits);
}

}  // namespace detail

// A format's facts as plain numbers.
struct format_description {
  int total_bits;
  int storage_bytes;
  int exponent_bits;
  int mantissa_bits;
  int exponent_bias;
  bool is_signed;
  bool has_infinity;
  bool has_nan;
  bool has_negative_zero;
  bool has_subnormals;
  double max;                    // largest finite value
  double min_normal;             // smallest positive normal value (numeric_limits::min)
  double min_subnormal;          // smallest positive value (numeric_limits::denorm_min)
  double epsilon;                // 2^-mantissa_bits
  int digits;                    // significand bits, hidden bit included
  int digits10;                  // decimal digits always preserved through the format
  int max_digits10;              // decimal digits that always identify a value
  double dynamic_range_decades;  // log10(max / min_subnormal)
  double lowest;                 // most negative finite value: -max, or the smallest value if unsigned
  bool is_integer;               // int4 ... uint1; for them the fields read as below
};
// The narrow integers, whole numbers from lowest to max: total_bits and is_signed as their type,
// exponent_bits and exponent_bias 0, mantissa_bits = digits = their value bits (numeric_limits'
// digits: 3 for int4), no infinity, NaN, negative zero or subnormals; min_normal, min_subnormal
// and epsilon are 1, the step between neighbours (numeric_limits' min() and epsilon() keep the
// standard's integer meanings: lowest and 0); dynamic_range_decades is log10 of the largest
// magnitude (0 for int1, whose values are -1 and 0).

// (intn is only declared here, detail/intn_declaration.hpp: describe<int4>() needs the type and
// its numeric_limits complete, which naming it requires.)
namespace detail {
template <class T>
constexpr format_description describe_integer() noexcept {
  const int widest = T::max_value > -T::min_value ? T::max_value : -T::min_value;
  return format_description{
      T::bits_per_value,
      1,  // storage bytes
      0,  // exponent bits
      T::digits,
      0,  // bias
      T::is_signed,
      false,  // infinity
      false,  // NaN
      false,  // negative zero
      false,  // subnormals
      static_cast<double>(T::max_value),
      1,  // min_normal: the step
      1,  // min_subnormal
      1,  // epsilon
      T::digits,
      std::numeric_limits<T>::digits10,
      std::numeric_limits<T>::max_digits10,
      detail::log2(static_cast<double>(widest)) * detail::log10_of_2,
      static_cast<double>(T::min_value),
      true,
  };
}

template <class T>
constexpr format_description describe_float() noexcept {
  using Format = typename T::format;
  using traits = format_traits<Format>;
  using codes = detail::limit_codes<Format>;
  const double max = detail::code_value<Format>(traits::max_finite_magnitude);
  const double min_normal = detail::code_value<Format>(codes::min_normal().bits());
  const double min_subnormal = traits::has_subnormals ? detail::code_value<Format>(1) : min_normal;
  return format_description{
      traits::total_bits,
      static_cast<int>(sizeof(typename traits::storage_type)),
      traits::exponent_bits,
      traits::mantissa_bits,
      traits::bias,
      traits::is_signed,
      traits::has_infinity,
      traits::has_nan,
      traits::has_negative_zero,
      traits::has_subnormals,
      max,
      min_normal,
      min_subnormal,
      detail::power_of_two(-traits::mantissa_bits),
      std::numeric_limits<T>::digits,
      std::numeric_limits<T>::digits10,
      std::numeric_limits<T>::max_digits10,
      (detail::log2(max) - detail::log2(min_subnormal)) * detail::log10_of_2,
      traits::is_signed ? -max : detail::code_value<Format>(0),  // e8m0's code 0 is 2^-127
      false,
  };
}
}  // namespace detail

template <class T>
constexpr format_description describe() noexcept {
  if constexpr (detail::is_intn_v<T>) {
    return detail::describe_integer<T>();
  } else {
    return detail::describe_float<T>();
  }
}

}  // namespace mixprec

template <class Format>
class std::numeric_limits<mixprec::minifloat<Format>> {
  using traits = mixprec::format_traits<Format>;
  using codes = mixprec::detail::limit_codes<Format>;
  using T = mixprec::minifloat<Format>;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = traits::is_signed;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = traits::has_infinity;
  static constexpr bool has_quiet_NaN = traits::has_nan;
  static constexpr bool has_signaling_NaN = traits::has_signaling_nan;
  static constexpr std::float_denorm_style has_denorm =
      traits::has_subnormals ? std::denorm_present : std::denorm_absent;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  // IEC 559 (IEEE 754) behaviour: infinities, NaNs, subnormals and signed zeros, as binary16,
  // bfloat16 and e5m2 have; the fn/fnuz/finite-only formats are not IEEE formats.
  static constexpr bool is_iec559 =
      traits::specials == mixprec::special_encoding::ieee && traits::has_subnormals && traits::is_signed;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = traits::precision;
  // floor((digits - 1) log10 2) and ceil(digits log10 2 + 1), as for float and double.
  static constexpr int digits10 = (digits - 1) * 30103 / 100000;
  static constexpr int max_digits10 = 2 + digits * 30103 / 100000;
  static constexpr int radix = 2;
  // min() == 2^(min_exponent - 1) and max() < 2^max_exponent, as the standard counts them.
  static constexpr int min_exponent = traits::min_exponent + 1;
  static constexpr int max_exponent = traits::max_exponent + 1;
  static constexpr int min_exponent10 =
      mixprec::detail::ceil_to_int(traits::min_exponent * mixprec::detail::log10_of_2);
  static constexpr int max_exponent10 = mixprec::detail::floor_to_int(
      mixprec::detail::log2(mixprec::detail::code_value<Format>(traits::max_finite_magnitude)) *
      mixprec::detail::log10_of_2);
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  MIXPREC_HOST_DEVICE static constexpr T min() noexcept { return codes::min_normal(); }
  MIXPREC_HOST_DEVICE static constexpr T lowest() noexcept {
    // An unsigned format's lowest value is its zero (ue4m3), or its smallest power where it has none (e8m0).
    if (traits::is_signed) return codes::make(traits::sign_mask | traits::max_finite_magnitude);
    return traits::has_zero ? codes::make(0) : codes::min_normal();
  }
  MIXPREC_HOST_DEVICE static constexpr T max() noexcept { return codes::max_finite(); }
  MIXPREC_HOST_DEVICE static constexpr T epsilon() noexcept { return codes::power_of_two(-traits::mantissa_bits); }
  MIXPREC_HOST_DEVICE static constexpr T round_error() noexcept { return codes::power_of_two(-1); }
  // Meaningful only where has_infinity / has_quiet_NaN / has_signaling_NaN say so; otherwise
  // the code 0, as the standard asks of types without those values.
  MIXPREC_HOST_DEVICE static constexpr T infinity() noexcept {
    return codes::make(traits::has_infinity ? traits::infinity_magnitude : 0);
  }
  MIXPREC_HOST_DEVICE static constexpr T quiet_NaN() noexcept { return codes::make(traits::quiet_nan_code); }
  MIXPREC_HOST_DEVICE static constexpr T signaling_NaN() noexcept { return codes::make(traits::signaling_nan_code); }
  MIXPREC_HOST_DEVICE static constexpr T denorm_min() noexcept {
    return traits::has_subnormals ? codes::make(1) : codes::min_normal();
  }
};
