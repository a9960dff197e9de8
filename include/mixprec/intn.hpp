// intn<Bits, Signed>: the narrow integers of ml_dtypes (include/intn.h, v0.6.0): int4, uint4,
// int2, uint2, int1, uint1.  Two's complement (signed) or unsigned Bits-bit integers, one per
// byte in the low bits (packed storage: intn_packing.hpp and bulk/intn_pack.hpp).
//
// Everything here is ml_dtypes' rule, so that a value computed in C++ equals the one JAX/NumPy
// computes:
//   - construction from an integer wraps modulo 2^Bits (ml_dtypes' intN(T): a cast to int8_t,
//     then the low Bits bits);
//   - construction from float, double or a minifloat is NumPy's astype(int4) with ml_dtypes'
//     cast (intn_numpy.h, CastToInt): truncation toward zero, then the wrap; NaN, ±inf and
//     values outside int32's range give 0.  Always defined, never undefined behaviour;
//   - + - * and unary - wrap modulo 2^Bits; / and % truncate toward zero as C++ does on the
//     values, then wrap (-8 / -1 is -8 in int4); comparisons compare values.
// Where mixprec differs: x / 0 and x % 0 are 0 (NumPy's integer result, which ml_dtypes' ufuncs
// give; its C++ operator divides by zero), and << / >> take amounts >= Bits (0, or the sign).
//
// Rounded, saturating conversions (every rounding mode, stochastic rounding) are
// mixprec::convert<int4>(x, rounding, overflow) in intn_convert.hpp; docs/intn.md compares both.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "config.hpp"
#include "detail/intn_declaration.hpp"
#include "errors.hpp"

namespace mixprec {

template <class Format>
class minifloat;

template <int Bits, bool Signed>
class intn {
  static_assert(Bits >= 1 && Bits <= 7, "intn holds 1 to 7 bits in one byte (ml_dtypes names 1, 2 and 4)");

 public:
  using storage_type = std::uint8_t;
  static constexpr int bits_per_value = Bits;
  static constexpr bool is_signed = Signed;
  static constexpr int digits = Signed ? Bits - 1 : Bits;  // value bits, as numeric_limits
  static constexpr int min_value = Signed ? -(1 << (Bits - 1)) : 0;
  static constexpr int max_value = (1 << digits) - 1;
  static constexpr storage_type code_mask = static_cast<storage_type>((1u << Bits) - 1);

  // Trivial like int (and minifloat): usable in CUDA __shared__ arrays; intn{} is zero.
  intn() = default;

  // Modulo 2^Bits, as ml_dtypes and C++20's integral conversions.
  template <class Integer, std::enable_if_t<std::is_integral<Integer>::value, int> = 0>
  MIXPREC_HOST_DEVICE constexpr explicit intn(Integer i) noexcept : code_(wrap(static_cast<std::uint64_t>(i))) {}

  // ml_dtypes' astype: truncate, wrap; NaN, ±inf and |x| beyond int32 give 0.
  MIXPREC_HOST_DEVICE constexpr explicit intn(double x) noexcept : code_(wrap(ml_dtypes_int(x))) {}
  MIXPREC_HOST_DEVICE constexpr explicit intn(float x) noexcept : code_(wrap(ml_dtypes_int(x))) {}
  template <class Format>
  MIXPREC_HOST_DEVICE constexpr explicit intn(minifloat<Format> x) noexcept
      : code_(wrap(ml_dtypes_int(static_cast<double>(x)))) {}

  // The value with the given code; bits above the width are an error (invalid_encoding on the
  // host, a trap on the device), as minifloat::from_bits.
  MIXPREC_HOST_DEVICE static constexpr intn from_bits(storage_type code) {
    if ((code & ~code_mask) != 0) {
#if MIXPREC_DEVICE_PASS
      __trap();
#else
      throw_invalid_code(code);
#endif
    }
    intn result{};
    result.code_ = code;
    return result;
  }

  // The code: the value's low Bits bits, the bits above them zero.
  MIXPREC_HOST_DEVICE constexpr storage_type bits() const noexcept { return code_; }
  // The value, sign-extended.
  MIXPREC_HOST_DEVICE constexpr int value() const noexcept {
    return Signed && (code_ >> (Bits - 1)) != 0 ? int{code_} - (1 << Bits) : int{code_};
  }

  // Exact into every arithmetic type (float and double included).
  template <class T, std::enable_if_t<std::is_arithmetic<T>::value, int> = 0>
  MIXPREC_HOST_DEVICE constexpr explicit operator T() const noexcept {
    return static_cast<T>(value());
  }

  MIXPREC_HOST_DEVICE friend constexpr intn operator+(intn a, intn b) noexcept { return make(a.code_ + b.code_); }
  MIXPREC_HOST_DEVICE friend constexpr intn operator-(intn a, intn b) noexcept { return make(a.code_ - b.code_); }
  MIXPREC_HOST_DEVICE friend constexpr intn operator*(intn a, intn b) noexcept { return make(a.code_ * b.code_); }
  MIXPREC_HOST_DEVICE friend constexpr intn operator/(intn a, intn b) noexcept {
    return b.code_ == 0 ? intn{} : make(a.value() / b.value());
  }
  MIXPREC_HOST_DEVICE friend constexpr intn operator%(intn a, intn b) noexcept {
    return b.code_ == 0 ? intn{} : make(a.value() % b.value());
  }
  MIXPREC_HOST_DEVICE friend constexpr intn operator&(intn a, intn b) noexcept { return make(a.code_ & b.code_); }
  MIXPREC_HOST_DEVICE friend constexpr intn operator|(intn a, intn b) noexcept { return make(a.code_ | b.code_); }
  MIXPREC_HOST_DEVICE friend constexpr intn operator^(intn a, intn b) noexcept { return make(a.code_ ^ b.code_); }
  // << drops the bits shifted out, >> is arithmetic on signed values.  Amounts of Bits or more
  // give 0 (or the sign); a negative amount shifts by 0.
  MIXPREC_HOST_DEVICE friend constexpr intn operator<<(intn a, int amount) noexcept {
    return amount >= Bits ? intn{} : make(a.code_ << (amount < 0 ? 0 : amount));
  }
  MIXPREC_HOST_DEVICE friend constexpr intn operator>>(intn a, int amount) noexcept {
    return make(a.value() >> (amount >= Bits ? Bits - 1 + !Signed : (amount < 0 ? 0 : amount)));
  }
  MIXPREC_HOST_DEVICE constexpr intn operator~() const noexcept { return make(~code_); }
  MIXPREC_HOST_DEVICE constexpr intn operator-() const noexcept { return make(-int{code_}); }
  MIXPREC_HOST_DEVICE constexpr intn operator+() const noexcept { return *this; }

  MIXPREC_HOST_DEVICE constexpr intn& operator+=(intn b) noexcept { return *this = *this + b; }
  MIXPREC_HOST_DEVICE constexpr intn& operator-=(intn b) noexcept { return *this = *this - b; }
  MIXPREC_HOST_DEVICE constexpr intn& operator*=(intn b) noexcept { return *this = *this * b; }
  MIXPREC_HOST_DEVICE constexpr intn& operator/=(intn b) noexcept { return *this = *this / b; }
  MIXPREC_HOST_DEVICE constexpr intn& operator%=(intn b) noexcept { return *this = *this % b; }
  MIXPREC_HOST_DEVICE constexpr intn& operator&=(intn b) noexcept { return *this = *this & b; }
  MIXPREC_HOST_DEVICE constexpr intn& operator|=(intn b) noexcept { return *this = *this | b; }
  MIXPREC_HOST_DEVICE constexpr intn& operator^=(intn b) noexcept { return *this = *this ^ b; }
  MIXPREC_HOST_DEVICE constexpr intn& operator<<=(int amount) noexcept { return *this = *this << amount; }
  MIXPREC_HOST_DEVICE constexpr intn& operator>>=(int amount) noexcept { return *this = *this >> amount; }
  MIXPREC_HOST_DEVICE constexpr intn& operator++() noexcept { return *this = make(code_ + 1); }
  MIXPREC_HOST_DEVICE constexpr intn& operator--() noexcept { return *this = make(code_ - 1); }
  MIXPREC_HOST_DEVICE constexpr intn operator++(int) noexcept {
    const intn old = *this;
    ++*this;
    return old;
  }
  MIXPREC_HOST_DEVICE constexpr intn operator--(int) noexcept {
    const intn old = *this;
    --*this;
    return old;
  }

  MIXPREC_HOST_DEVICE friend constexpr bool operator==(intn a, intn b) noexcept { return a.code_ == b.code_; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator!=(intn a, intn b) noexcept { return a.code_ != b.code_; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator<(intn a, intn b) noexcept { return a.value() < b.value(); }
  MIXPREC_HOST_DEVICE friend constexpr bool operator>(intn a, intn b) noexcept { return a.value() > b.value(); }
  MIXPREC_HOST_DEVICE friend constexpr bool operator<=(intn a, intn b) noexcept { return a.value() <= b.value(); }
  MIXPREC_HOST_DEVICE friend constexpr bool operator>=(intn a, intn b) noexcept { return a.value() >= b.value(); }
  // Against plain integers by value, as ml_dtypes' comparisons with int64_t: int4(7) == 7.
  MIXPREC_HOST_DEVICE friend constexpr bool operator==(intn a, std::int64_t b) noexcept { return a.value() == b; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator!=(intn a, std::int64_t b) noexcept { return a.value() != b; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator<(intn a, std::int64_t b) noexcept { return a.value() < b; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator>(intn a, std::int64_t b) noexcept { return a.value() > b; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator<=(intn a, std::int64_t b) noexcept { return a.value() <= b; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator>=(intn a, std::int64_t b) noexcept { return a.value() >= b; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator==(std::int64_t a, intn b) noexcept { return b == a; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator!=(std::int64_t a, intn b) noexcept { return b != a; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator<(std::int64_t a, intn b) noexcept { return b > a; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator>(std::int64_t a, intn b) noexcept { return b < a; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator<=(std::int64_t a, intn b) noexcept { return b >= a; }
  MIXPREC_HOST_DEVICE friend constexpr bool operator>=(std::int64_t a, intn b) noexcept { return b <= a; }

 private:
  // The low Bits bits of an integer (two's complement, so negative values wrap too).
  MIXPREC_HOST_DEVICE static constexpr storage_type wrap(std::uint64_t i) noexcept {
    return static_cast<storage_type>(i & code_mask);
  }
  MIXPREC_HOST_DEVICE static constexpr intn make(int i) noexcept {
    intn result{};
    result.code_ = wrap(static_cast<std::uint64_t>(static_cast<std::int64_t>(i)));
    return result;
  }
  // ml_dtypes' CastToInt (intn_numpy.h): 0 for NaN, ±inf and x outside [INT32_MIN, INT32_MAX],
  // else x truncated toward zero.  The comparisons are false for NaN.
  MIXPREC_HOST_DEVICE static constexpr std::uint64_t ml_dtypes_int(double x) noexcept {
    if (!(x >= -2147483648.0 && x <= 2147483647.0)) return 0;
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(x));
  }
  static void throw_invalid_code(storage_type code);

  storage_type code_;
};

using int4 = intn<4, true>;
using uint4 = intn<4, false>;
using int2 = intn<2, true>;
using uint2 = intn<2, false>;
using int1 = intn<1, true>;
using uint1 = intn<1, false>;

namespace detail {
// "int4", "uint2", ...: the ml_dtypes names (intn<3, true> is "int3").
template <int Bits, bool Signed>
std::string intn_name() {
  return std::string(Signed ? "int" : "uint") + std::to_string(Bits);
}
}  // namespace detail

template <int Bits, bool Signed>
void intn<Bits, Signed>::throw_invalid_code(storage_type code) {
  throw invalid_encoding(detail::intn_name<Bits, Signed>() + "::from_bits: " + std::to_string(code) +
                         " has bits set above bit " + std::to_string(Bits - 1) + " (the type's codes are 0 to " +
                         std::to_string(code_mask) + ")");
}

}  // namespace mixprec

// As ml_dtypes' intN_numeric_limits_base, except is_modulo (true: arithmetic wraps for the signed
// types too, in ml_dtypes as here) and traps (false: division by zero gives 0).
template <int Bits, bool Signed>
class std::numeric_limits<mixprec::intn<Bits, Signed>> {
  using T = mixprec::intn<Bits, Signed>;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = Signed;
  static constexpr bool is_integer = true;
  static constexpr bool is_exact = true;
  static constexpr bool has_infinity = false;
  static constexpr bool has_quiet_NaN = false;
  static constexpr bool has_signaling_NaN = false;
  static constexpr std::float_denorm_style has_denorm = std::denorm_absent;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_toward_zero;
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = true;
  static constexpr int digits = T::digits;
  static constexpr int digits10 = digits * 3 / 10;  // floor(digits · log10 2) for digits <= 7
  static constexpr int max_digits10 = 0;
  static constexpr int radix = 2;
  static constexpr int min_exponent = 0;
  static constexpr int min_exponent10 = 0;
  static constexpr int max_exponent = 0;
  static constexpr int max_exponent10 = 0;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  MIXPREC_HOST_DEVICE static constexpr T min() noexcept { return T(T::min_value); }
  MIXPREC_HOST_DEVICE static constexpr T lowest() noexcept { return T(T::min_value); }
  MIXPREC_HOST_DEVICE static constexpr T max() noexcept { return T(T::max_value); }
  MIXPREC_HOST_DEVICE static constexpr T epsilon() noexcept { return T(0); }
  MIXPREC_HOST_DEVICE static constexpr T round_error() noexcept { return T(0); }
  MIXPREC_HOST_DEVICE static constexpr T infinity() noexcept { return T(0); }
  MIXPREC_HOST_DEVICE static constexpr T quiet_NaN() noexcept { return T(0); }
  MIXPREC_HOST_DEVICE static constexpr T signaling_NaN() noexcept { return T(0); }
  MIXPREC_HOST_DEVICE static constexpr T denorm_min() noexcept { return T(0); }
};
