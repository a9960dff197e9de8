// Format descriptors: what a binary floating-point format is, as pure compile-time constants.
//
// A format is a plain struct of constants (binary_format<> writes one for the common case);
// format_traits<> derives everything else from it: masks, the largest finite code, where the
// NaN and infinity codes live.  Nothing here knows about a particular format: the named
// formats of the library are instances in types.hpp, and float / double are described the
// same way (ieee_binary32, ieee_binary64) so that one conversion algorithm serves all.
//
//   sign | exponent field (E bits) | mantissa field (M bits)
//   value = (-1)^sign × 2^(field - bias) × 1.mantissa     for a normal field
//   value = (-1)^sign × 2^(1 - bias)     × 0.mantissa     for field 0, when the format has
//                                                          subnormals (zero lives there too)
#pragma once

#include <cstdint>
#include <string>

#include "detail/bits.hpp"

namespace mixprec {

// How a format spends codes on values that are not finite numbers.
enum class special_encoding {
  // Exponent field all ones: infinity (mantissa 0) or NaN (mantissa != 0), as IEEE 754-2019
  // §3.4.  The quiet bit is the mantissa's top bit (§6.2.1).
  ieee,
  // No infinity; exponent and mantissa all ones is NaN, one per sign; the rest of the top
  // binade holds finite values.  OFP8 E4M3 (OCP 8-bit FP spec v1.0 §5.3.1), e8m0 (OCP MX §5.4.1).
  nan_all_ones,
  // No infinity and no -0: the "negative zero" code 1000...0 is the single NaN ("fnuz",
  // Graphcore / AMD fp8).
  nan_negative_zero,
  // Every code is a finite number (OCP MX FP6 and FP4, §5.3.2-5.3.3).
  none,
};

// The descriptor most formats use.  IsSigned = false drops the sign bit (e8m0);
// HasSubnormals = false makes exponent field 0 an ordinary binade, so the format has neither
// subnormals nor zero (e8m0: field 0 is 2^-127).
template <int ExponentBits, int MantissaBits, int Bias, special_encoding Specials, bool IsSigned = true,
          bool HasSubnormals = true>
struct binary_format {
  static constexpr int exponent_bits = ExponentBits;
  static constexpr int mantissa_bits = MantissaBits;
  static constexpr int bias = Bias;
  static constexpr special_encoding specials = Specials;
  static constexpr bool is_signed = IsSigned;
  static constexpr bool has_subnormals = HasSubnormals;
};

// The host formats, described like any other so the generic algorithm can read and write them.
using ieee_binary32 = binary_format<8, 23, 127, special_encoding::ieee>;
using ieee_binary64 = binary_format<11, 52, 1023, special_encoding::ieee>;

// Everything derivable from a descriptor.  All members are constants of the format; the
// member functions classify a code.
template <class Format>
struct format_traits {
  static constexpr int exponent_bits = Format::exponent_bits;
  static constexpr int mantissa_bits = Format::mantissa_bits;
  static constexpr int bias = Format::bias;
  static constexpr special_encoding specials = Format::specials;
  static constexpr bool is_signed = Format::is_signed;
  static constexpr bool has_subnormals = Format::has_subnormals;

  static_assert(exponent_bits >= 1 && mantissa_bits >= 0, "a format needs an exponent field");
  static_assert(exponent_bits + mantissa_bits + (is_signed ? 1 : 0) <= 64,
                "formats wider than 64 bits are not supported");
  static_assert(specials != special_encoding::ieee || mantissa_bits >= 1,
                "an IEEE-style format needs a mantissa bit to tell NaN from infinity");
  static_assert(specials != special_encoding::nan_negative_zero || is_signed,
                "the fnuz NaN is the negative-zero code, so the format must be signed");

  static constexpr int total_bits = exponent_bits + mantissa_bits + (is_signed ? 1 : 0);
  using storage_type = detail::uint_least_t<total_bits>;
  // Storage bits above total_bits (fp6 and fp4 live in the low bits of a byte) are never set.
  static constexpr int storage_bits = 8 * static_cast<int>(sizeof(storage_type));

  static constexpr std::uint64_t one = 1;
  static constexpr std::uint64_t mantissa_mask = (one << mantissa_bits) - 1;
  static constexpr std::uint64_t magnitude_mask = (one << (exponent_bits + mantissa_bits)) - 1;
  static constexpr std::uint64_t sign_mask = is_signed ? one << (exponent_bits + mantissa_bits) : 0;
  static constexpr std::uint64_t code_mask = magnitude_mask | sign_mask;
  static constexpr int exponent_field_max = (1 << exponent_bits) - 1;

  // Exponent field of the smallest normal binade: 1 when field 0 holds subnormals, else 0.
  static constexpr int min_normal_field = has_subnormals ? 1 : 0;

  static constexpr bool has_infinity = specials == special_encoding::ieee;
  static constexpr bool has_nan = specials != special_encoding::none;
  static constexpr bool has_zero = has_subnormals;
  static constexpr bool has_negative_zero = has_zero && is_signed && specials != special_encoding::nan_negative_zero;
  static constexpr bool has_signed_nan =
      is_signed && (specials == special_encoding::ieee || specials == special_encoding::nan_all_ones);

  // Magnitude of the largest finite value.
  static constexpr std::uint64_t max_finite_magnitude =
      specials == special_encoding::ieee           ? (std::uint64_t{exponent_field_max} << mantissa_bits) - 1
      : specials == special_encoding::nan_all_ones ? magnitude_mask - 1
                                                   : magnitude_mask;
  // Magnitude of infinity (IEEE formats only).
  static constexpr std::uint64_t infinity_magnitude = std::uint64_t{exponent_field_max} << mantissa_bits;
  // The canonical quiet NaN (positive where NaN is signed): IEEE sets only the quiet bit
  // (§6.2.1); "fn" formats have the one all-ones NaN; "fnuz" has the -0 code.
  static constexpr std::uint64_t quiet_nan_code = specials == special_encoding::ieee
                                                      ? infinity_magnitude | (one << (mantissa_bits - 1))
                                                  : specials == special_encoding::nan_all_ones      ? magnitude_mask
                                                  : specials == special_encoding::nan_negative_zero ? sign_mask
                                                                                                    : 0;
  // The smallest magnitude field value that is not a finite number (NaN or infinity);
  // 2^(E+M) when every magnitude is finite (fnuz's NaN is the sign bit over magnitude 0).
  static constexpr std::uint64_t first_special_magnitude = specials == special_encoding::ieee ? infinity_magnitude
                                                           : specials == special_encoding::nan_all_ones
                                                               ? magnitude_mask
                                                               : magnitude_mask + 1;
  // A signalling NaN: IEEE with the quiet bit clear and the lowest payload bit set.
  static constexpr std::uint64_t signaling_nan_code =
      specials == special_encoding::ieee && mantissa_bits >= 2 ? infinity_magnitude | 1 : quiet_nan_code;
  static constexpr bool has_signaling_nan = specials == special_encoding::ieee && mantissa_bits >= 2;

  // Unbiased exponents: smallest normal 2^min_exponent, largest finite < 2^(max_exponent + 1).
  static constexpr int min_exponent = min_normal_field - bias;
  static constexpr int max_exponent = static_cast<int>(max_finite_magnitude >> mantissa_bits) - bias;
  // Exponent of the last place of the smallest value (the smallest subnormal where there are some).
  static constexpr int min_quantum_exponent = min_exponent - mantissa_bits;
  static constexpr int precision = mantissa_bits + 1;  // significand bits, the hidden one included

  MIXPREC_HOST_DEVICE static constexpr bool is_nan(std::uint64_t code) noexcept {
    const std::uint64_t magnitude = code & magnitude_mask;
    switch (specials) {
      case special_encoding::ieee:
        return magnitude > infinity_magnitude;
      case special_encoding::nan_all_ones:
        return magnitude == magnitude_mask;
      case special_encoding::nan_negative_zero:
        return (code & code_mask) == sign_mask;
      case special_encoding::none:
        return false;
    }
    return false;
  }
  MIXPREC_HOST_DEVICE static constexpr bool is_infinity(std::uint64_t code) noexcept {
    return has_infinity && (code & magnitude_mask) == infinity_magnitude;
  }
  MIXPREC_HOST_DEVICE static constexpr bool is_negative(std::uint64_t code) noexcept { return (code & sign_mask) != 0; }
};

// A human-readable name: Format::name where the descriptor has one, else "e<E>m<M>" plus the
// usual suffix ("fn", "fnuz", "fnu").
namespace detail {
template <class F, class = void>
struct has_format_name : std::false_type {};
template <class F>
struct has_format_name<F, std::void_t<decltype(F::name)>> : std::true_type {};
}  // namespace detail

template <class Format>
std::string format_name() {
  if constexpr (detail::has_format_name<Format>::value) {
    return std::string(Format::name);
  } else {
    using traits = format_traits<Format>;
    // Built by append: GCC 12 in C++20 reports a false -Wrestrict for "literal" + std::string&&.
    std::string name(1, 'e');
    name.append(std::to_string(traits::exponent_bits)).append(1, 'm').append(std::to_string(traits::mantissa_bits));
    if (traits::specials == special_encoding::nan_all_ones || traits::specials == special_encoding::none) name += "fn";
    if (traits::specials == special_encoding::nan_negative_zero) name += "fnuz";
    if (!traits::is_signed) name += "u";
    return name;
  }
}

}  // namespace mixprec
