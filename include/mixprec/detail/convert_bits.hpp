// Any format to any format, on codes: read the source code as sign, significand and exponent,
// then round_pack it into the target.  float and double take part as ieee_binary32/64.
#pragma once

#include <cstdint>

#include "round_pack.hpp"

namespace mixprec::detail {

// True when every normal number of From is a normal number of To with the same significand,
// so converting it needs no rounding at all (fp16 -> float, bf16 -> float, e4m3 -> fp16, ...).
template <class From, class To>
constexpr bool is_normal_widening = (format_traits<To>::is_signed || !format_traits<From>::is_signed) &&
                                    (format_traits<To>::mantissa_bits >= format_traits<From>::mantissa_bits) &&
                                    (format_traits<To>::min_exponent <= format_traits<From>::min_exponent) &&
                                    (format_traits<To>::max_exponent >= format_traits<From>::max_exponent);

// Where the narrowing fast path applies (From has at least as many mantissa bits as To): the
// magnitudes [low, high) of From that are normal numbers landing in To's normal range, from To's
// smallest normal up to 2^(To's max_exponent + 1); the range holds no NaN or infinity of From.
// There, To's code is (From's code shifted right by `shift` and rounded) - rebias.
template <class From, class To>
struct narrowing_window {
  using from = format_traits<From>;
  using to = format_traits<To>;
  static constexpr int shift = from::mantissa_bits - to::mantissa_bits;
  static constexpr std::int64_t low_field = to::min_exponent + from::bias;
  static constexpr std::int64_t high_field = to::max_exponent + 1 + from::bias;
  static constexpr std::uint64_t low =
      static_cast<std::uint64_t>(low_field < from::min_normal_field ? from::min_normal_field : low_field)
      << from::mantissa_bits;
  static constexpr std::uint64_t high_value = high_field > from::exponent_field_max
                                                  ? ~std::uint64_t{0}
                                                  : static_cast<std::uint64_t>(high_field) << from::mantissa_bits;
  static constexpr std::uint64_t high =
      high_value < from::first_special_magnitude ? high_value : from::first_special_magnitude;
  static constexpr std::int64_t rebias = std::int64_t{from::bias - to::bias} * (std::int64_t{1} << to::mantissa_bits);
};

template <class From, class To>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE constexpr typename format_traits<To>::storage_type convert_bits(
    typename format_traits<From>::storage_type from_code, round_mode mode, overflow o, std::uint32_t random) noexcept {
  using from = format_traits<From>;
  using to = format_traits<To>;
  using codes = special_codes<To>;
  // Storage bits above the format's width (fp6/fp4 in a byte) are not part of the value.
  const std::uint64_t code = static_cast<std::uint64_t>(from_code) & from::code_mask;
  const bool negative = from::is_negative(code);

  const std::uint64_t magnitude = code & from::magnitude_mask;

  // 1. The common case first: a normal number of From that lands in To's normal range, with
  //    bits to drop.  Round the code itself: the exponent field sits just above the mantissa, so
  //    a carry out of the mantissa moves into the exponent, and re-biasing afterwards is one
  //    subtraction.  The range [low, high) holds no NaN or infinity of From.
  if constexpr (from::mantissa_bits >= to::mantissa_bits) {
    using window = narrowing_window<From, To>;
    constexpr int shift = window::shift;
    constexpr std::uint64_t low = window::low, high = window::high;
    if (magnitude >= low && magnitude < high) {
      if (negative && !to::is_signed) return codes::out_of_domain(o);
      const std::uint64_t kept = round_right_shift<shift, to::mantissa_bits>(magnitude, negative, mode, random);
      const std::int64_t result = static_cast<std::int64_t>(kept) - window::rebias;
      if (result > static_cast<std::int64_t>(to::max_finite_magnitude)) return codes::overflowed(negative, mode, o);
      return codes::with_sign(negative, static_cast<std::uint64_t>(result));
    }
  }

  // 2. NaN and infinity.
  if (from::is_nan(code)) return codes::template nan<From>(negative, code);
  if (from::is_infinity(code)) return codes::infinity(negative, o);

  // 3. The fields.
  const int field = static_cast<int>(magnitude >> from::mantissa_bits);
  const std::uint64_t mantissa = magnitude & from::mantissa_mask;

  // 4. A normal number that To holds as a normal number: re-bias the exponent, widen the
  //    mantissa.  (This is the whole of fp16/bf16/fp8 -> float.)
  if constexpr (is_normal_widening<From, To>) {
    if (field >= from::min_normal_field) {
      const int target_field = field - from::bias + to::bias;  // >= 1: To's normal range holds From's
      const auto to_field = static_cast<std::uint64_t>(target_field);
      return codes::with_sign(
          negative, (to_field << to::mantissa_bits) | (mantissa << (to::mantissa_bits - from::mantissa_bits)));
    }
  }

  // 5. Everything else is a significand and an exponent to round.
  if (field >= from::min_normal_field) {
    return round_pack<To>(negative, mantissa | (std::uint64_t{1} << from::mantissa_bits),
                          field - from::bias - from::mantissa_bits, mode, o, random);
  }
  return round_pack<To>(negative, mantissa, from::min_quantum_exponent, mode, o, random);
}

// An integer, exactly: |i| × 2^0.
template <class To, class Integer>
MIXPREC_HOST_DEVICE constexpr typename format_traits<To>::storage_type convert_integer(Integer i, round_mode mode,
                                                                                       overflow o,
                                                                                       std::uint32_t random) noexcept {
  static_assert(sizeof(Integer) <= 8, "integers up to 64 bits");
  bool negative = false;
  std::uint64_t magnitude = static_cast<std::uint64_t>(i);
  if constexpr (std::is_signed<Integer>::value) {
    if (i < 0) {
      negative = true;
      magnitude = std::uint64_t{0} - magnitude;  // well defined for the most negative value too
    }
  }
  return round_pack<To>(negative, magnitude, 0, mode, o, random);
}

}  // namespace mixprec::detail
