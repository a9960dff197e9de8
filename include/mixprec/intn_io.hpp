// Text I/O of the narrow integers: operator<< writes the value in decimal (as ml_dtypes' <<,
// which writes it as an int16_t); parse<int4>(text) reads an optionally signed decimal integer
// and throws parse_error naming the text and, for a value the type cannot hold, its range.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "errors.hpp"
#include "intn.hpp"

namespace mixprec {

template <int Bits, bool Signed>
std::ostream& operator<<(std::ostream& os, intn<Bits, Signed> x) {
  return os << x.value();
}

template <class T, std::enable_if_t<detail::is_intn_v<T>, int> = 0>
T parse(std::string_view text) {
  const std::string name = detail::intn_name<T::bits_per_value, T::is_signed>();
  const auto fail = [&](const std::string& problem) {
    throw parse_error("mixprec::parse<" + name + ">(\"" + std::string(text) + "\"): " + problem);
  };
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) ++i;
  if (i == text.size()) fail(text.empty() ? "empty text; expected an integer" : "expected digits after the sign");
  long long value = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9')
      fail("unexpected '" + std::string(1, c) + "' at offset " + std::to_string(i) + "; expected a digit");
    if (value < 1000) value = value * 10 + (c - '0');  // beyond every intn already: stop growing
  }
  if (negative) value = -value;
  if (value < T::min_value || value > T::max_value) {
    fail((value >= 1000 || value <= -1000 ? std::string(text) : std::to_string(value)) + " is outside " + name +
         "'s range [" + std::to_string(T::min_value) + ", " + std::to_string(T::max_value) + "]");
  }
  return T(value);
}

}  // namespace mixprec
