// minifloat<Format>: the one value type.  Every named type of the library (float16, bfloat16,
// the fp8/fp6/fp4 formats, e8m0) is an instance; a user format is one descriptor away:
//
//   using float7_e3m3 = mixprec::minifloat<mixprec::binary_format<3, 3, 3, mixprec::special_encoding::ieee>>;
//
// Construction from float/double/integers rounds once, to nearest with ties to even, with the
// non-finite overflow rule (inf, else NaN, else ±max); mixprec::convert offers every other mode.
// Arithmetic rounds once from the exact result; comparisons follow IEEE 754 (NaN unordered,
// -0 == +0).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include "detail/convert_bits.hpp"
#include "errors.hpp"

namespace mixprec {

template <class Format>
class minifloat;

namespace interop {
// Specialised by the interop headers (interop/eigen.hpp, interop/cuda.hpp) for a foreign type
// with the same encoding as a mixprec format: `using format = ...;` plus
// `static storage to_bits(Native)` and `static Native from_bits(storage)`.
template <class Native>
struct native_format {};
}  // namespace interop

namespace detail {

// The format of each type conversions accept: float, double and every minifloat.
template <class T>
struct format_of {};
template <>
struct format_of<float> {
  using type = ieee_binary32;
};
template <>
struct format_of<double> {
  using type = ieee_binary64;
};
template <class Format>
struct format_of<minifloat<Format>> {
  using type = Format;
};
template <class T>
using format_of_t = typename format_of<T>::type;

// Raw access to codes without the from_bits() range check, for results the library computed.
struct code_access {
  template <class T>
  MIXPREC_HOST_DEVICE static constexpr T make(typename format_traits<format_of_t<T>>::storage_type code) noexcept {
    if constexpr (std::is_floating_point<T>::value) {
      return bit_cast<T>(code);
    } else {
      return T(code, code_access{});
    }
  }
  template <class T>
  MIXPREC_HOST_DEVICE static constexpr auto code(T value) noexcept {
    if constexpr (std::is_floating_point<T>::value) {
      return bit_cast<typename format_traits<format_of_t<T>>::storage_type>(value);
    } else {
      return value.bits();
    }
  }
};

// Conversion between any two of {float, double, minifloat<...>}.
template <class To, class From>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE constexpr To convert_value(From x, round_mode mode, overflow o,
                                                                    std::uint32_t random) noexcept {
  return code_access::make<To>(convert_bits<format_of_t<From>, format_of_t<To>>(code_access::code(x), mode, o, random));
}

template <class Format>
void throw_invalid_encoding(std::uint64_t bits);

// Arithmetic evaluates in float or double and rounds the result once into the format.  That
// is a double rounding, and it is harmless when the intermediate precision q is at least
// 2p + 2 for a p-bit format and the intermediate never under- or overflows: the exact
// +, -, ×, ÷ and sqrt of p-bit numbers is then at most one rounding away (Figueroa, "When is
// double rounding innocuous?", SIGNUM 1995).  float (q = 24) is used when, with a one-bit
// margin, p <= 10 and every product and quotient of two values stays a normal float;
// otherwise double (q = 53) serves every format up to p = 25 whose range fits double.
template <class Format>
struct arithmetic_type_of {
  using traits = format_traits<Format>;
  static constexpr int lowest_exponent = traits::min_quantum_exponent;
  static constexpr int highest_exponent = traits::max_exponent + 1;
  static constexpr bool products_fit(int min_exponent, int max_exponent) {
    return 2 * highest_exponent <= max_exponent && 2 * lowest_exponent >= min_exponent &&
           highest_exponent - lowest_exponent <= max_exponent && lowest_exponent - highest_exponent >= min_exponent;
  }
  static constexpr bool use_float = 2 * traits::precision + 3 <= 24 && products_fit(-126, 127);
  static_assert(use_float || (2 * traits::precision + 2 <= 53 && products_fit(-1022, 1023)),
                "minifloat arithmetic needs a format of at most 25 significand bits within double's range");
  using type = std::conditional_t<use_float, float, double>;
};

}  // namespace detail

template <class Format>
class minifloat {
  using traits = format_traits<Format>;

 public:
  using format = Format;
  using storage_type = typename traits::storage_type;

  // Like float, a default-constructed minifloat is uninitialised (it stays trivial, usable in
  // CUDA __shared__ arrays); minifloat{} is zero (for e8m0, which has no zero: 2^-127).
  minifloat() = default;

  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR explicit minifloat(float x) noexcept
      : bits_(detail::convert_bits<ieee_binary32, Format>(detail::bit_cast<std::uint32_t>(x),
                                                          detail::round_mode::nearest_even, overflow::non_finite, 0)) {}

  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR explicit minifloat(double x) noexcept
      : bits_(detail::convert_bits<ieee_binary64, Format>(detail::bit_cast<std::uint64_t>(x),
                                                          detail::round_mode::nearest_even, overflow::non_finite, 0)) {}

  template <class Integer,
            std::enable_if_t<std::is_integral<Integer>::value && !std::is_same<Integer, bool>::value, int> = 0>
  MIXPREC_HOST_DEVICE constexpr explicit minifloat(Integer i) noexcept
      : bits_(detail::convert_integer<Format>(i, detail::round_mode::nearest_even, overflow::non_finite, 0)) {}

  // From another format: exact where this format holds the value, else rounded once.
  template <class OtherFormat, std::enable_if_t<!std::is_same<OtherFormat, Format>::value, int> = 0>
  MIXPREC_HOST_DEVICE constexpr explicit minifloat(minifloat<OtherFormat> x) noexcept
      : bits_(detail::convert_bits<OtherFormat, Format>(x.bits(), detail::round_mode::nearest_even,
                                                        overflow::non_finite, 0)) {}

  // From a foreign type of the same encoding (Eigen::half, __half, __nv_fp8_e4m3, ...): a bit
  // copy.  Enabled by including mixprec/interop/eigen.hpp or mixprec/interop/cuda.hpp.
  template <class Native, class Interop = interop::native_format<Native>,
            std::enable_if_t<std::is_same<typename Interop::format, Format>::value, int> = 0>
  MIXPREC_HOST_DEVICE explicit minifloat(const Native& native) noexcept : bits_(Interop::to_bits(native)) {}

  template <class Native, class Interop = interop::native_format<Native>,
            std::enable_if_t<std::is_same<typename Interop::format, Format>::value, int> = 0>
  MIXPREC_HOST_DEVICE explicit operator Native() const noexcept {
    return Interop::from_bits(bits_);
  }

  // The value with the given code.  Bits above the format's width (fp6, fp4) are an error:
  // invalid_encoding on the host, a trap on the device.
  MIXPREC_HOST_DEVICE static constexpr minifloat from_bits(storage_type bits) {
    if constexpr (traits::total_bits < traits::storage_bits) {
      if ((bits & ~static_cast<storage_type>(traits::code_mask)) != 0) {
#if MIXPREC_DEVICE_PASS
        __trap();
#else
        detail::throw_invalid_encoding<Format>(bits);
#endif
      }
    }
    return minifloat(bits, detail::code_access{});
  }

  MIXPREC_HOST_DEVICE constexpr storage_type bits() const noexcept { return bits_; }

  // Exact for every format whose values float (double) holds: all of the library's formats.
  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR explicit operator float() const noexcept {
    return detail::convert_value<float>(*this, detail::round_mode::nearest_even, overflow::non_finite, 0);
  }
  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR explicit operator double() const noexcept {
    return detail::convert_value<double>(*this, detail::round_mode::nearest_even, overflow::non_finite, 0);
  }

  // Arithmetic: the exact result rounded once to nearest-even (see detail::arithmetic_type_of).
  MIXPREC_HOST_DEVICE friend MIXPREC_BIT_CAST_CONSTEXPR minifloat operator+(minifloat a, minifloat b) noexcept {
    return minifloat(a.wide() + b.wide());
  }
  MIXPREC_HOST_DEVICE friend MIXPREC_BIT_CAST_CONSTEXPR minifloat operator-(minifloat a, minifloat b) noexcept {
    return minifloat(a.wide() - b.wide());
  }
  MIXPREC_HOST_DEVICE friend MIXPREC_BIT_CAST_CONSTEXPR minifloat operator*(minifloat a, minifloat b) noexcept {
    return minifloat(a.wide() * b.wide());
  }
  MIXPREC_HOST_DEVICE friend MIXPREC_BIT_CAST_CONSTEXPR minifloat operator/(minifloat a, minifloat b) noexcept {
    return minifloat(a.wide() / b.wide());
  }
  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR minifloat& operator+=(minifloat b) noexcept {
    return *this = *this + b;
  }
  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR minifloat& operator-=(minifloat b) noexcept {
    return *this = *this - b;
  }
  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR minifloat& operator*=(minifloat b) noexcept {
    return *this = *this * b;
  }
  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR minifloat& operator/=(minifloat b) noexcept {
    return *this = *this / b;
  }

  MIXPREC_HOST_DEVICE constexpr minifloat operator+() const noexcept { return *this; }
  // Negation flips the sign (IEEE 754-2019 §5.5.1, NaN included).  A format without -0 keeps
  // its zero and its NaN; an unsigned format has no negatives, so -x is NaN there.
  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR minifloat operator-() const noexcept {
    if constexpr (!traits::is_signed) {
      return minifloat(-static_cast<double>(*this));
    } else if constexpr (traits::specials == special_encoding::nan_negative_zero) {
      return (bits_ & traits::magnitude_mask) == 0 ? *this : flip_sign();
    } else {
      return flip_sign();
    }
  }

  MIXPREC_HOST_DEVICE friend constexpr bool operator==(minifloat a, minifloat b) noexcept {
    return !a.is_nan() && !b.is_nan() && a.order() == b.order();
  }
  MIXPREC_HOST_DEVICE friend constexpr bool operator!=(minifloat a, minifloat b) noexcept { return !(a == b); }
  MIXPREC_HOST_DEVICE friend constexpr bool operator<(minifloat a, minifloat b) noexcept {
    return !a.is_nan() && !b.is_nan() && a.order() < b.order();
  }
  MIXPREC_HOST_DEVICE friend constexpr bool operator>(minifloat a, minifloat b) noexcept { return b < a; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator<=(minifloat a, minifloat b) noexcept {
    return !a.is_nan() && !b.is_nan() && a.order() <= b.order();
  }
  MIXPREC_HOST_DEVICE friend constexpr bool operator>=(minifloat a, minifloat b) noexcept { return b <= a; }

 private:
  friend struct detail::code_access;
  MIXPREC_HOST_DEVICE constexpr minifloat(storage_type bits, detail::code_access) noexcept : bits_(bits) {}

  using wide_type = typename detail::arithmetic_type_of<Format>::type;
  MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR wide_type wide() const noexcept {
    return static_cast<wide_type>(*this);
  }

  MIXPREC_HOST_DEVICE constexpr bool is_nan() const noexcept { return traits::is_nan(bits_); }
  // Sign-magnitude codes ordered as integers: the order of the values (for non-NaN codes).
  MIXPREC_HOST_DEVICE constexpr std::int64_t order() const noexcept {
    const auto magnitude = static_cast<std::int64_t>(bits_ & traits::magnitude_mask);
    return traits::is_negative(bits_) ? -magnitude : magnitude;
  }
  MIXPREC_HOST_DEVICE constexpr minifloat flip_sign() const noexcept {
    return minifloat(static_cast<storage_type>(bits_ ^ traits::sign_mask), detail::code_access{});
  }

  storage_type bits_;
};

namespace detail {
template <class Format>
void throw_invalid_encoding(std::uint64_t bits) {
  constexpr int width = format_traits<Format>::total_bits;
  const char* digits = "0123456789ABCDEF";
  std::string hex = "0x";
  for (int shift = 4 * ((format_traits<Format>::storage_bits + 3) / 4) - 4; shift >= 0; shift -= 4) {
    hex += digits[(bits >> shift) & 0xF];
  }
  throw invalid_encoding(format_name<Format>() + "::from_bits: " + hex + " has bits set above bit " +
                         std::to_string(width - 1) + " (the format's codes are 0 to " +
                         std::to_string(format_traits<Format>::code_mask) + ")");
}
}  // namespace detail

}  // namespace mixprec

// Equal values hash equally: -0 and +0 share a hash.
template <class Format>
struct std::hash<mixprec::minifloat<Format>> {
  std::size_t operator()(mixprec::minifloat<Format> x) const noexcept {
    using traits = mixprec::format_traits<Format>;
    auto bits = x.bits();
    if ((bits & traits::magnitude_mask) == 0 && traits::has_zero) bits = 0;
    return std::hash<typename traits::storage_type>{}(bits);
  }
};
