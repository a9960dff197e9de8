// Fuzz target for text input (io.hpp): parse<T>(text, r, o) and is >> x for every value type.
// The first byte selects the type (bits 0-3, modulo 10: all_formats.hpp's order), the rounding
// mode (bits 4-6, modulo 6) and the overflow mode (bit 7: saturate); the rest is the text.
// Properties, beyond "no crash and no sanitizer report":
//   - parse<T> either returns or throws parse_error (nothing else);
//   - a parsed value is the correct rounding as far as a double can tell: glibc's correctly
//     rounded strtod gives the double d nearest the text, so the text lies in
//     [prev(d), next(d)] and, rounding being monotonic, parse's result lies between
//     convert<T>(prev(d), r, o) and convert<T>(next(d), r, o) (is equal to both where they agree);
//     texts with no non-zero digit are exactly zero; beyond double's range every breakpoint is
//     passed, so DBL_MAX stands in (and 0 or the smallest double below it);
//   - to_string of the nearest-even result parses back to the same bits (NaN to NaN), and
//     os << x writes to_string(x);
//   - is >> x (with and without skipws) reads the longest prefix that parse<T> reads, to the same
//     bits, puts back what it read past it, and without a number sets failbit and leaves x as
//     it was; it never sets badbit (an exception inside).
// Built with clang's -fsanitize=fuzzer it is the libFuzzer binary parse_fuzzer;
// parse_fuzz_driver.cpp runs it on generated inputs elsewhere.
#include <mixprec/io.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>

#include "all_formats.hpp"

// Inputs that parsed as a whole so far (the driver reports it).
std::uint64_t parse_fuzz_accepted = 0;

namespace {

using namespace mixprec;

template <class T>
bool nan_code(T x) {
  return format_traits<typename T::format>::is_nan(x.bits());
}

[[noreturn]] void fail(const char* what, const std::string& type, std::string_view text) {
  std::fprintf(stderr, "parse fuzz (%s): %s; text (%zu bytes): \"%.*s\"\n", type.c_str(), what, text.size(),
               static_cast<int>(text.size() < 512 ? text.size() : 512), text.data());
  std::abort();
}

template <class T>
std::optional<T> try_parse(std::string_view text, rounding r = rounding::nearest_even,
                           overflow o = overflow::non_finite) {
  try {
    return parse<T>(text, r, o);
  } catch (const parse_error&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    fail("parse threw an exception other than parse_error", format_name<typename T::format>(), text);
  }
}

// Whether the significand of a text in the grammar (docs/io.md) has a non-zero digit.
bool has_nonzero_digit(std::string_view text) {
  const bool hex = text.find_first_of("xX") != std::string_view::npos;
  for (const char c : text) {
    if (hex ? (c == 'p' || c == 'P') : (c == 'e' || c == 'E')) break;
    if ((c >= '1' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))) return true;
  }
  return false;
}

// The correctly rounded result of a text that parsed, bracketed by strtod.
template <class T>
void check_rounding(const std::string& text, T got, rounding r, overflow o) {
  const std::string name = format_name<typename T::format>();
  double lo = 0, hi = 0;
  const bool negative = text[0] == '-';
  const bool word = text.find_first_of("iInN") != std::string::npos;  // inf, infinity, nan
  const double d = std::strtod(text.c_str(), nullptr);
  if (word) {
    lo = hi = d;
  } else if (!has_nonzero_digit(text)) {
    lo = hi = negative ? -0.0 : 0.0;
  } else {
    lo = std::fmax(std::nextafter(d, -INFINITY), -DBL_MAX);
    hi = std::fmin(std::nextafter(d, INFINITY), DBL_MAX);
    if (std::isinf(d)) lo = hi = negative ? -DBL_MAX : DBL_MAX;
    if (d == 0) {  // below half the smallest double: strictly between 0 and it, on the text's side
      lo = negative ? -DBL_TRUE_MIN : 0.0;
      hi = negative ? -0.0 : DBL_TRUE_MIN;
    }
  }
  const T low = convert<T>(lo, r, o), high = convert<T>(hi, r, o);
  if (low.bits() == high.bits() || nan_code(low) || nan_code(high)) {
    if (got.bits() != low.bits() && got.bits() != high.bits()) fail("not the correctly rounded value", name, text);
  } else if (!(static_cast<double>(low) <= static_cast<double>(got) &&
               static_cast<double>(got) <= static_cast<double>(high))) {
    fail("outside the rounding of the doubles around the text", name, text);
  }
}

template <class T>
void check_round_trip(T x, std::string_view text) {
  const std::string name = format_name<typename T::format>();
  const std::string shortest = to_string(x);
  const std::optional<T> back = try_parse<T>(shortest);
  if (!back || (nan_code(x) ? !nan_code(*back) : back->bits() != x.bits())) {
    fail(("to_string gives \"" + shortest + "\", which does not parse back").c_str(), name, text);
  }
  std::ostringstream os;
  os << x;
  if (os.str() != shortest) fail("os << x differs from to_string(x)", name, text);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// is >> x reads the longest prefix that parse reads (the scanner looks at most a few bytes past
// a whole number: "infinit" before "y", "1e+" before a digit, so 8 longer prefixes are checked).
template <class T>
void check_stream(const std::string& text, bool skip_space) {
  const std::string name = format_name<typename T::format>();
  std::istringstream is(text);
  if (!skip_space) is >> std::noskipws;
  const T before = T::from_bits(1);
  T x = before;
  is >> x;
  if (is.bad()) fail("is >> x set badbit", name, text);
  std::size_t start = 0;
  while (skip_space && start < text.size() && is_space(text[start])) ++start;
  std::size_t end = start;  // the end of the number read
  if (is.fail()) {
    if (x.bits() != before.bits()) fail("a failed is >> x changed x", name, text);
  } else {
    end = is.eof() ? text.size() : static_cast<std::size_t>(is.tellg());
    const std::optional<T> whole = try_parse<T>(std::string_view(text).substr(start, end - start));
    if (end <= start || !whole || whole->bits() != x.bits()) {
      fail("is >> x did not read what parse reads from the same text", name, text);
    }
  }
  for (std::size_t length = end - start + 1; length <= end - start + 8 && start + length <= text.size(); ++length) {
    if (try_parse<T>(std::string_view(text).substr(start, length))) {
      fail("is >> x stopped before the longest number", name, text);
    }
  }
}

template <class T>
void check_type(const std::string& text, rounding r, overflow o) {
  const std::optional<T> got = try_parse<T>(text, r, o);
  if (got) {
    ++parse_fuzz_accepted;
    check_rounding(text, *got, r, o);
    const T nearest = r == rounding::nearest_even && o == overflow::non_finite ? *got : parse<T>(text);
    check_round_trip(nearest, text);
  }
  check_stream<T>(text, true);
  check_stream<T>(text, false);
}

template <std::size_t... I>
void dispatch(unsigned type, const std::string& text, rounding r, overflow o, std::index_sequence<I...>) {
  ((type == I ? check_type<std::tuple_element_t<I, mixprec_test::all_types>>(text, r, o) : void()), ...);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  constexpr std::size_t types = std::tuple_size<mixprec_test::all_types>::value;
  const unsigned type = (data[0] & 15u) % types;
  const rounding r = mixprec_test::all_roundings[((data[0] >> 4) & 7u) % 6];
  const overflow o = (data[0] & 128u) ? overflow::saturate : overflow::non_finite;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  dispatch(type, text, r, o, std::make_index_sequence<types>{});
  return 0;
}
