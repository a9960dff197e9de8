// Text input and output for every minifloat (docs/io.md).  Host only.
//
//   to_string(x)                 the shortest decimal that parse() reads back to the same bits
//   parse<T>(text, rounding, overflow)
//                                the exact value of the text, correctly rounded into T
//   os << x, is >> x             the same, through streams
//
// Output.  Shortest round-trip output in the sense of Steele & White ("How to print
// floating-point numbers accurately", PLDI 1990) and Ryu (Adams, PLDI 2018): among the decimals
// that read back to x, one with the fewest significant digits, and among those the one closest
// to x (ties: even last digit).  The formats here are tiny, so instead of the digit-generation
// loops of those papers we take the exact decimal expansion of x and, for n = 1, 2, ..., try
// the two n-digit decimals around it, asking the exact reader whether each reads back to x.
// That makes "reads back" true by construction, asymmetric intervals at binade boundaries,
// tie rules (ties to even, e8m0's ties away) and the ends of the range included.
//
// Input.  Correctly rounded from the exact decimal under every rounding mode (IEEE 754-2019
// §5.12.2 asks it of conversions from decimal character sequences).  Every value and every
// midpoint of T (its "breakpoints": where a rounding decision can change) is a double.  The
// double d nearest to the text x (std::from_chars: correctly rounded and locale-free) is
// therefore on the same side of every breakpoint as x unless d is a breakpoint; then an exact
// big-integer comparison says on which side x is, and d moves one double toward it.  Rounding
// that double with convert<T> gives x's rounding, overflow and underflow rules included.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "convert.hpp"
#include "detail/decimal.hpp"
#include "errors.hpp"
#include "format.hpp"
#include "minifloat.hpp"
#include "rounding.hpp"

namespace mixprec {
namespace detail {

template <class Format>
struct text_limits {
  using traits = format_traits<Format>;
  static_assert(traits::precision + 2 <= 52 && traits::min_quantum_exponent - 2 > -1000 &&
                    traits::max_exponent + 2 < 1000,
                "text I/O needs every value and midpoint of the format to be a normal double");
  // An upper bound on the significant digits of a breakpoint n × 2^k (n < 2^(precision+1),
  // 2^(min_quantum_exponent-1) <= 2^k, n × 2^k <= 2^(max_exponent+1)): under
  // (max_exponent + 2) log10(2) + 1 digits for k >= 0; n × 5^-k has under
  // (precision + 1) log10(2) - k log10(5) + 1 digits for k < 0.  A text's digits past this many
  // never change which breakpoints it lies between (see read_number), so parse() keeps only
  // these and a sticky digit, whatever the length of the text.
  static constexpr long long exponent_span = 1 - traits::min_quantum_exponent > traits::max_exponent + 2
                                                 ? 1 - traits::min_quantum_exponent
                                                 : traits::max_exponent + 2;
  static constexpr std::size_t max_digits = static_cast<std::size_t>(traits::precision + 4 + exponent_span);
};

// Whether the double d > 0 is a breakpoint of Format: a multiple of half the last place of its
// binade (or of the subnormal quantum below the normal range), within the range where
// rounding decisions are made.  Some multiples far above max are not real breakpoints;
// treating them as such only costs an exact comparison.
template <class Format>
bool is_breakpoint(double d) {
  using traits = format_traits<Format>;
  if (d < std::ldexp(1.0, traits::min_quantum_exponent - 2) || d > std::ldexp(1.0, traits::max_exponent + 2)) {
    return false;
  }
  binary_number b = split_double(d);  // 2^52 <= significand < 2^53
  const int binade = b.exponent + 52;
  const int last_place =
      (traits::has_subnormals && binade < traits::min_exponent ? traits::min_exponent : binade) - traits::mantissa_bits;
  for (; (b.significand & 1) == 0; b.significand >>= 1) ++b.exponent;
  return b.exponent >= last_place - 1;
}

// A double on the same side of every breakpoint of Format as the decimal x > 0 (equal to x
// where x is a breakpoint).  Far outside double's range the largest or smallest double
// stands in: both lie beyond every breakpoint.
template <class Format>
double same_side_double(const decimal_number& x) {
  constexpr double huge = std::numeric_limits<double>::max();
  constexpr double tiny = std::numeric_limits<double>::denorm_min();
  if (x.point > 400) return huge;
  if (x.point < -400) return tiny;
  const std::string text = x.digits + "e" + std::to_string(x.point - static_cast<long long>(x.digits.size()));
  double d = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), d);
  if (result.ec == std::errc::result_out_of_range || d == 0 || std::isinf(d)) return x.point > 0 ? huge : tiny;
  if (is_breakpoint<Format>(d)) {
    const int side = compare(x, d);
    if (side != 0) d = std::nextafter(d, side > 0 ? huge : 0.0);
  }
  return d;
}

// The code of the number n rounded into Format, by the rules of convert<T>(double).
template <class Format>
typename format_traits<Format>::storage_type round_number(const scanned_number& n, rounding r, overflow o) {
  using T = minifloat<Format>;
  double magnitude = 0;
  switch (n.what) {
    case scanned_number::kind::nan:
      magnitude = std::numeric_limits<double>::quiet_NaN();
      break;
    case scanned_number::kind::infinity:
      magnitude = std::numeric_limits<double>::infinity();
      break;
    case scanned_number::kind::binary:  // exact already: round it directly
      return round_pack<Format>(n.negative, n.significand, n.exponent, to_round_mode(r), o, 0);
    case scanned_number::kind::decimal:
      magnitude = n.decimal.digits.empty() ? 0.0 : same_side_double<Format>(n.decimal);
      break;
  }
  return convert<T>(std::copysign(magnitude, n.negative ? -1.0 : 1.0), r, o).bits();
}

// The text in quotes for an error message: control bytes escaped, at most 48 bytes shown.
inline std::string quote(std::string_view text) {
  constexpr std::size_t shown = 48;
  std::string q = "\"";
  for (const char c : text.substr(0, shown)) {
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      q += c;
    } else {
      const char* hex = "0123456789abcdef";
      const auto u = static_cast<unsigned char>(c);
      q += "\\x";
      q += hex[u >> 4];
      q += hex[u & 15];
    }
  }
  if (text.size() > shown) return q + "...\" (" + std::to_string(text.size()) + " characters)";
  return q + '"';
}

template <class Format>
[[noreturn]] void throw_parse_error(std::string_view text, const std::string& problem) {
  throw parse_error("mixprec::parse<" + format_name<Format>() + ">(" + quote(text) + "): " + problem);
}

// x + one unit in its last digit.
inline decimal_number next_up(decimal_number x) {
  std::string& d = x.digits;
  std::size_t i = d.size();
  for (; i > 0 && d[i - 1] == '9'; --i) d[i - 1] = '0';
  if (i == 0) {
    d.insert(d.begin(), '1');
    ++x.point;
  } else {
    ++d[i - 1];
  }
  while (d.back() == '0') d.pop_back();
  return x;
}

// Plain notation for decimal exponents in [-5, 16), scientific with a signed exponent of at
// least two digits otherwise (docs/io.md).
inline std::string format_decimal(bool negative, const decimal_number& x) {
  std::string s = negative ? "-" : "";
  const auto n = static_cast<long long>(x.digits.size());
  const long long exponent10 = x.point - 1;
  if (exponent10 >= -5 && exponent10 < 16) {
    if (x.point <= 0) {
      s.append("0.").append(static_cast<std::size_t>(-x.point), '0').append(x.digits);
    } else if (x.point >= n) {
      s.append(x.digits).append(static_cast<std::size_t>(x.point - n), '0');
    } else {
      const auto whole = static_cast<std::size_t>(x.point);
      s.append(x.digits, 0, whole).append(".").append(x.digits, whole, std::string::npos);
    }
    return s;
  }
  s += x.digits[0];
  if (n > 1) s.append(".").append(x.digits, 1, std::string::npos);
  s += exponent10 < 0 ? "e-" : "e+";
  const long long magnitude = exponent10 < 0 ? -exponent10 : exponent10;
  if (magnitude < 10) s += '0';
  return s + std::to_string(magnitude);
}

// Writes text as formatted output: width, fill and adjustment, then width(0).
inline std::ostream& write_padded(std::ostream& os, std::string text) {
  const std::ostream::sentry guard(os);
  if (!guard) return os;
  const auto size = static_cast<std::streamsize>(text.size());
  if (os.width() > size) {
    const auto padding = static_cast<std::size_t>(os.width() - size);
    const auto adjust = os.flags() & std::ios_base::adjustfield;
    const std::size_t sign = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    const std::size_t at = adjust == std::ios_base::left ? text.size() : adjust == std::ios_base::internal ? sign : 0;
    text.insert(at, padding, os.fill());
  }
  if (os.rdbuf()->sputn(text.data(), static_cast<std::streamsize>(text.size())) !=
      static_cast<std::streamsize>(text.size())) {
    os.setstate(std::ios_base::badbit);
  }
  os.width(0);
  return os;
}

}  // namespace detail

// Reads a minifloat from text (grammar in detail::number_scanner and docs/io.md): the exact
// value, rounded once by r, with overflow and underflow as convert<T>(double) treats a double
// at the same place.  Throws parse_error for text that is not exactly one number.
// (T::format: a minifloat; the narrow integers' parse is in intn_io.hpp.)
template <class T, class Format = typename T::format>
T parse(std::string_view text, rounding r = rounding::nearest_even, overflow o = overflow::non_finite) {
  static_assert(std::is_same<T, minifloat<Format>>::value, "parse<T> reads minifloat types");
  detail::number_scanner scanner;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!scanner.feed(text[i])) {
      const char c = text[i];
      const std::string what = c >= 0x20 && c < 0x7F ? std::string("'") + c + "'" : "byte " + detail::quote({&c, 1});
      detail::throw_parse_error<Format>(
          text, "unexpected " + what + " at offset " + std::to_string(i) + "; expected " + scanner.expected());
    }
  }
  if (!scanner.complete()) {
    detail::throw_parse_error<Format>(
        text, (text.empty() ? "empty text; expected " : "the text ends early; expected ") + scanner.expected());
  }
  const auto n = detail::read_number(text, detail::text_limits<Format>::max_digits);
  return detail::code_access::make<T>(detail::round_number<Format>(n, r, o));
}

// The shortest decimal that parse<minifloat<Format>>() (nearest-even) reads back to the same
// bits; "nan" ("-nan" where the format's NaN has a sign), "inf", "-inf", "0", "-0" otherwise.
template <class Format>
std::string to_string(minifloat<Format> x) {
  using traits = format_traits<Format>;
  const auto code = x.bits();
  const bool negative = traits::is_negative(code);
  if (traits::is_nan(code)) return negative && traits::has_signed_nan ? "-nan" : "nan";
  if (traits::is_infinity(code)) return negative ? "-inf" : "inf";
  const double magnitude = std::fabs(static_cast<double>(x));
  if (magnitude == 0) return negative ? "-0" : "0";

  const detail::decimal_number exact = detail::exact_decimal(magnitude);
  const auto reads_back = [&](const detail::decimal_number& candidate) {
    detail::scanned_number n;
    n.negative = negative;
    n.decimal = candidate;
    return detail::round_number<Format>(n, rounding::nearest_even, overflow::non_finite) == code;
  };
  for (std::size_t digits = 1; digits < exact.digits.size(); ++digits) {
    // The n-digit decimals just below and just above x; if neither reads back, no n-digit
    // decimal does, since the values that read back to x form an interval around it.
    detail::decimal_number down{exact.digits.substr(0, digits), exact.point};
    const detail::decimal_number up = detail::next_up(down);
    const bool down_is_even = (down.digits.back() - '0') % 2 == 0;
    while (down.digits.back() == '0') down.digits.pop_back();
    // The closer one first: compare the cut-off digits with one half (the last cut-off digit
    // is never 0, so "5" alone is exactly one half).
    const char first_cut = exact.digits[digits];
    const bool beyond_half = first_cut > '5' || (first_cut == '5' && exact.digits.size() > digits + 1);
    const bool up_first = beyond_half || (first_cut == '5' && exact.digits.size() == digits + 1 && !down_is_even);
    const detail::decimal_number& first = up_first ? up : down;
    const detail::decimal_number& second = up_first ? down : up;
    if (reads_back(first)) return detail::format_decimal(negative, first);
    if (reads_back(second)) return detail::format_decimal(negative, second);
  }
  return detail::format_decimal(negative, exact);
}

// Shortest output (to_string) by default, padded to the stream's width with its fill and
// adjustment; showpos adds '+', uppercase gives "1E+38", "INF", "NAN".  With floatfield set
// (fixed, scientific, or both: hexfloat), the exact value as a double with the stream's flags.
template <class Format>
std::ostream& operator<<(std::ostream& os, minifloat<Format> x) {
  const std::ios_base::fmtflags flags = os.flags();
  if ((flags & std::ios_base::floatfield) != 0) return os << static_cast<double>(x);
  std::string text = to_string(x);
  if ((flags & std::ios_base::showpos) != 0 && text[0] != '-') text.insert(text.begin(), '+');
  if ((flags & std::ios_base::uppercase) != 0) {
    for (char& c : text) {
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return detail::write_padded(os, std::move(text));
}

// Skips leading whitespace (unless skipws is off), takes the longest prefix of the input that
// is a number and rounds it as parse() does (nearest-even).  Characters are read while they
// can continue a number; any read past the longest whole number ("1e+" before "x") are put
// back.  Without a number, sets failbit and leaves x unchanged.
template <class Format>
std::istream& operator>>(std::istream& is, minifloat<Format>& x) {
  const std::istream::sentry guard(is);
  if (!guard) return is;
  using traits = std::istream::traits_type;
  std::ios_base::iostate state = std::ios_base::goodbit;
  try {
    std::streambuf& buffer = *is.rdbuf();
    detail::number_scanner scanner;
    std::string text;
    std::size_t whole = 0;  // length of the longest complete number read
    for (;;) {
      const traits::int_type next = buffer.sgetc();
      if (traits::eq_int_type(next, traits::eof())) {
        state |= std::ios_base::eofbit;
        break;
      }
      if (!scanner.feed(traits::to_char_type(next))) break;
      text += traits::to_char_type(next);
      buffer.sbumpc();
      if (scanner.complete()) whole = text.size();
    }
    bool put_back = true;
    for (std::size_t i = text.size(); i > whole && put_back; --i) {
      put_back = !traits::eq_int_type(buffer.sputbackc(text[i - 1]), traits::eof());
      state &= ~std::ios_base::eofbit;
    }
    if (whole == 0 || !put_back) {
      state |= std::ios_base::failbit;
    } else {
      text.resize(whole);
      x = parse<minifloat<Format>>(text);
    }
  } catch (...) {
    // As the standard's formatted input does: badbit, and rethrow if asked to.
    try {
      is.setstate(std::ios_base::badbit);
    } catch (const std::ios_base::failure&) {
    }
    if ((is.exceptions() & std::ios_base::badbit) != 0) throw;
  }
  is.setstate(state);
  return is;
}

}  // namespace mixprec
