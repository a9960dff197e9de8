// to_string on every code of every format: parse reads it back to the same bits, and it is the
// shortest decimal that does so and the closest of those.  "Reads back" is decided by the
// independent oracle (tests/support/reference_format.hpp over exact fractions), and the
// candidate decimals are computed with Boost's integers, so neither check trusts io.hpp's own
// arithmetic.
#include <mixprec/io.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "all_formats.hpp"
#include "exact_text.hpp"
#include "reference_format.hpp"

using namespace mixprec;
using mixprec_test::code_class;

namespace {

// The significant digits of a decimal text (leading and trailing zeros dropped) and the
// exponent of its first one, read from the characters alone.
struct text_shape {
  std::string digits;
  long long exponent10 = 0;
  bool scientific = false;
};
text_shape shape_of(const std::string& text) {
  text_shape s;
  const std::size_t e = text.find('e');
  s.scientific = e != std::string::npos;
  const std::string mantissa =
      text.substr(text[0] == '-' ? 1 : 0, s.scientific ? e - (text[0] == '-' ? 1 : 0) : std::string::npos);
  long long position = 0;  // exponent of the current digit
  const std::size_t point = mantissa.find('.');
  position = static_cast<long long>(point == std::string::npos ? mantissa.size() : point) - 1;
  bool first = true;
  for (const char c : mantissa) {
    if (c == '.') continue;
    if (c != '0' && first) {
      s.exponent10 = position;
      first = false;
    }
    if (!first) s.digits += c;
    --position;
  }
  while (!s.digits.empty() && s.digits.back() == '0') s.digits.pop_back();
  if (s.scientific) s.exponent10 += std::stoll(text.substr(e + 1));
  return s;
}

}  // namespace

TEMPLATE_TEST_CASE("to_string then parse gives back every code of every format", "[io][round_trip]",
                   MIXPREC_ALL_TYPES) {
  using T = TestType;
  using traits = format_traits<typename T::format>;
  unsigned failures = 0;
  for (unsigned code = 0; code < mixprec_test::code_count<T>(); ++code) {
    const T x = T::from_bits(static_cast<typename T::storage_type>(code));
    const std::string text = to_string(x);
    const T y = parse<T>(text);
    const bool same = traits::is_nan(code)
                          ? traits::is_nan(y.bits()) &&
                                (!traits::has_signed_nan || traits::is_negative(code) == traits::is_negative(y.bits()))
                          : y.bits() == x.bits();
    if (!same && ++failures <= 5)
      FAIL_CHECK("code " << code << " prints as \"" << text << "\", reads back as " << y.bits());
  }
  CHECK(failures == 0);
}

TEMPLATE_TEST_CASE("to_string is the shortest decimal that reads back, and the closest of those", "[io][shortest]",
                   MIXPREC_ALL_TYPES) {
  using T = TestType;
  using io_test::fraction;
  const mixprec_test::format_parameters p = mixprec_test::parameters_of<T>();
  const mixprec_test::reference_format<fraction> oracle(p);
  unsigned failures = 0, checked = 0;
  const auto fail = [&](unsigned code, const std::string& text, const char* what) {
    if (++failures <= 5) FAIL_CHECK("code " << code << " prints as \"" << text << "\": " << what);
  };
  for (std::uint32_t code = 0; code < mixprec_test::code_count<T>(); ++code) {
    if (mixprec_test::classify(p, code) != code_class::finite) continue;
    const double value = mixprec_test::textbook_value(p, code);
    if (value == 0) continue;
    const bool negative = value < 0;
    const auto reads_back = [&](const fraction& magnitude) {
      return oracle.round(negative, oracle.locate(magnitude, io_test::no_hint), rounding::nearest_even,
                          overflow::non_finite) == code;
    };
    const std::string text = to_string(T::from_bits(static_cast<typename T::storage_type>(code)));
    const text_shape shape = shape_of(text);
    const fraction printed = io_test::exact_value_of(text).magnitude;
    ++checked;

    // The notation: scientific exactly outside [-5, 16), with a normalised significand.
    if (shape.scientific != (shape.exponent10 < -5 || shape.exponent10 >= 16)) fail(code, text, "wrong notation");
    if (shape.scientific && (text[negative ? 1 : 0] == '0' || text.back() == '.')) fail(code, text, "not normalised");
    if (io_test::exact_value_of(text).negative != negative) fail(code, text, "wrong sign");
    if (!reads_back(printed)) fail(code, text, "does not round back to the code");

    // The n-digit decimals just below and above |x| (|x| itself when it has at most n
    // digits).  The values that round to x form an interval around |x|, so if either
    // neighbour misses it, every n-digit decimal on that side does.
    const io_test::decimal_digits exact = io_test::exact_digits(value < 0 ? -value : value);
    const auto around = [&](std::size_t n) {
      if (n >= exact.digits.size())
        return std::make_pair(fraction(value < 0 ? -value : value), fraction(value < 0 ? -value : value));
      const io_test::integer down(exact.digits.substr(0, n));
      const long long scale = exact.point - static_cast<long long>(n);
      return std::make_pair(fraction::decimal(down, scale), fraction::decimal(down + 1, scale));
    };
    const std::size_t n = shape.digits.size();
    if (n > 1) {
      const auto shorter = around(n - 1);
      if (reads_back(shorter.first) || reads_back(shorter.second)) fail(code, text, "a shorter decimal reads back");
    }
    // Of the n-digit decimals that read back, the printed one is the closest; a tie goes to
    // the even last digit.
    const auto same_length = around(n);
    const fraction magnitude(value < 0 ? -value : value);
    const bool down_ok = reads_back(same_length.first), up_ok = reads_back(same_length.second);
    const fraction below = magnitude - same_length.first, above = same_length.second - magnitude;
    fraction expected = down_ok ? same_length.first : same_length.second;
    if (down_ok && up_ok && (above < below || (above == below && (exact.digits[n - 1] - '0') % 2 == 1))) {
      expected = same_length.second;
    }
    if (!(printed == expected)) fail(code, text, "not the closest shortest decimal");
  }
  CHECK(failures == 0);
  CHECK(checked > 0);
}
