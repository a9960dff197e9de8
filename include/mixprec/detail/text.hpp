// Text helpers shared by the scaling, session and blockscale layers: numbers in error messages and
// JSON (shortest form that reads back to the same double), and JSON string escaping.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace mixprec::detail {

// The shortest decimal that reads back to x ("65536", "0.1", "1e-45"); "inf", "-inf", "nan".
inline std::string number_text(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, result.ptr);
}

inline std::string number_text(std::int64_t x) { return std::to_string(x); }

// Text of the input quoted in a message: at most 64 bytes, control and non-ASCII bytes as '?'.
inline std::string printable(std::string_view text) {
  std::string out(text.substr(0, 64));
  for (char& c : out) c = (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) ? '?' : c;
  return text.size() > 64 ? out + "..." : out;
}

// A JSON number; JSON has no infinity or NaN, so those become the strings "inf", "-inf", "nan".
// (Built by append: GCC 12 in C++20 reports a false -Wrestrict for "literal" + std::string&&.)
inline std::string json_number(double x) {
  if (std::isfinite(x)) return number_text(x);
  std::string quoted(1, '"');
  quoted.append(number_text(x)).push_back('"');
  return quoted;
}

// A JSON string literal (RFC 8259 §7): quotes, backslashes and control characters escaped.
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      static const char hex[] = "0123456789abcdef";
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 0xF];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace mixprec::detail
