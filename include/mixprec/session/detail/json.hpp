// A small strict JSON reader (RFC 8259) for recipe files: objects, arrays, strings with every
// escape (surrogate pairs joined into UTF-8), numbers, true, false, null.  Strict means: no
// comments, no trailing commas, no leading zeros or '+', no NaN/Infinity, no duplicate keys, no
// raw control characters in strings, valid UTF-8 only, nothing after the top-level value.
// Bounded: the text, each string, each object and array, and the nesting depth have limits, so hostile input costs
// bounded time and memory and never overflows the stack.  Errors are recipe_error with
// "line L, column C" (1-based, columns in bytes).
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../detail/text.hpp"
#include "../errors.hpp"

namespace mixprec::detail {

constexpr std::size_t json_text_limit = std::size_t{1} << 20;  // 1 MiB: a recipe is a few hundred bytes
constexpr std::size_t json_string_limit = 4096;
constexpr int json_depth_limit = 32;
constexpr std::size_t json_element_limit = 1024;  // members of an object, items of an array

struct json_value {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  double number = 0;
  bool integral = false;  // a number written without fraction or exponent
  std::string text;       // a string's value, or a number as written
  std::vector<json_value> items;
  std::vector<std::pair<std::string, json_value>> members;  // in the order written
  int line = 1, column = 1;                                 // where the value starts
};

constexpr const char* to_string(json_value::kind k) noexcept {
  switch (k) {
    case json_value::kind::null:
      return "null";
    case json_value::kind::boolean:
      return "a boolean";
    case json_value::kind::number:
      return "a number";
    case json_value::kind::string:
      return "a string";
    case json_value::kind::array:
      return "an array";
    case json_value::kind::object:
      return "an object";
  }
  return "an invalid value";
}

class json_reader {
 public:
  explicit json_reader(std::string_view text) : text_(text) {
    if (text.size() > json_text_limit) {
      throw recipe_error("JSON recipe: " + std::to_string(text.size()) + " bytes, the limit is " +
                         std::to_string(json_text_limit));
    }
  }

  json_value parse_document() {
    skip_space();
    json_value v = value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected " + describe_here() + " after the JSON value");
    return v;
  }

 private:
  // Newlines appear only in whitespace (strings refuse raw control characters), so skip_space
  // keeps the line count and where the line starts.
  int line() const noexcept { return line_; }
  int column() const noexcept { return static_cast<int>(pos_ - line_start_) + 1; }

  [[noreturn]] void fail(const std::string& what) const {
    throw recipe_error("JSON recipe, line " + std::to_string(line()) + ", column " + std::to_string(column()) + ": " +
                       what);
  }

  std::string describe_here() const {
    if (pos_ >= text_.size()) return "end of input";
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c >= 0x21 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
    static const char hex[] = "0123456789ABCDEF";
    return std::string("byte 0x") + hex[c >> 4] + hex[c & 0xF];
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      if (text_[pos_++] == '\n') {
        ++line_;
        line_start_ = pos_;
      }
    }
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  json_value start_value() const {
    json_value v;
    v.line = line();
    v.column = column();
    return v;
  }

  json_value value(int depth) {
    if (depth >= json_depth_limit) fail("nesting deeper than " + std::to_string(json_depth_limit) + " levels");
    if (pos_ >= text_.size()) fail("truncated: a value is expected, the input ends");
    json_value v = start_value();
    const char c = text_[pos_];
    if (c == '{') {
      v.type = json_value::kind::object;
      object(v, depth);
    } else if (c == '[') {
      v.type = json_value::kind::array;
      array(v, depth);
    } else if (c == '"') {
      v.type = json_value::kind::string;
      v.text = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.type = json_value::kind::number;
      number(v);
    } else if (literal("true")) {
      v.type = json_value::kind::boolean;
      v.boolean = true;
    } else if (literal("false")) {
      v.type = json_value::kind::boolean;
    } else if (literal("null")) {
      v.type = json_value::kind::null;
    } else {
      fail("unexpected " + describe_here() + "; a value is an object, array, string, number, true, false or null");
    }
    return v;
  }

  void object(json_value& v, int depth) {
    ++pos_;  // '{'
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a quoted key, found " + describe_here());
      const std::size_t key_at = pos_;
      std::string key = string();
      for (const auto& member : v.members) {
        if (member.first == key) {
          pos_ = key_at;
          fail("duplicate key \"" + printable(key) + "\"");
        }
      }
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ':') fail("expected ':' after the key, found " + describe_here());
      ++pos_;
      skip_space();
      if (v.members.size() >= json_element_limit) {
        fail("an object with more than " + std::to_string(json_element_limit) + " members");
      }
      v.members.emplace_back(std::move(key), value(depth + 1));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return;
      }
      fail("expected ',' or '}' in an object, found " + describe_here());
    }
  }

  void array(json_value& v, int depth) {
    ++pos_;  // '['
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_space();
      if (v.items.size() >= json_element_limit) {
        fail("an array with more than " + std::to_string(json_element_limit) + " items");
      }
      v.items.push_back(value(depth + 1));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return;
      }
      fail("expected ',' or ']' in an array, found " + describe_here());
    }
  }

  // RFC 8259 §6: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  void number(json_value& v) {
    const std::size_t start = pos_;
    const auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
      if (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') fail("a number with a leading zero");
    } else if (digits() == 0) {
      fail("a '-' not followed by digits");
    }
    v.integral = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      v.integral = false;
      if (digits() == 0) fail("a '.' not followed by digits");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      v.integral = false;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail("an exponent without digits");
    }
    v.text = std::string(text_.substr(start, pos_ - start));
    const auto r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), v.number);
    if (r.ec != std::errc{} || !std::isfinite(v.number)) {
      pos_ = start;
      fail("number " + v.text.substr(0, 40) + " is out of the range of a double (about ±1.8e308)");
    }
  }

  unsigned hex4() {
    if (text_.size() - pos_ < 4) fail("truncated \\u escape");
    unsigned u = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      u <<= 4;
      if (c >= '0' && c <= '9') {
        u |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        u |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        u |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        --pos_;
        fail("\\u escape needs 4 hex digits, found " + describe_here());
      }
    }
    return u;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // One UTF-8 sequence (RFC 3629 §4: shortest form, no surrogates, at most U+10FFFF) copied to out.
  void utf8_sequence(std::string& out) {
    const auto lead = static_cast<unsigned char>(text_[pos_]);
    std::size_t length = 0;
    unsigned cp = 0, minimum = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2, cp = lead & 0x1Fu, minimum = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3, cp = lead & 0x0Fu, minimum = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4, cp = lead & 0x07u, minimum = 0x10000;
    } else {
      fail("invalid UTF-8 (" + describe_here() + ")");
    }
    if (text_.size() - pos_ < length) fail("truncated UTF-8 sequence");
    for (std::size_t i = 1; i < length; ++i) {
      const auto c = static_cast<unsigned char>(text_[pos_ + i]);
      if ((c & 0xC0u) != 0x80u) fail("invalid UTF-8 (" + describe_here() + ")");
      cp = (cp << 6) | (c & 0x3Fu);
    }
    if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      fail("invalid UTF-8 (" + describe_here() + ")");
    out.append(text_.substr(pos_, length));
    pos_ += length;
  }

  std::string string() {
    ++pos_;  // '"'
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) fail("truncated: a string is not closed");
      if (out.size() > json_string_limit) fail("a string longer than " + std::to_string(json_string_limit) + " bytes");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("raw control character (" + describe_here() + ") in a string; write it as an escape");
      if (c >= 0x80) {
        utf8_sequence(out);
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) fail("truncated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("\\u escape of a lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // RFC 8259 §7: a pair of escapes
            if (!literal("\\u")) fail("\\u escape of a high surrogate not followed by a low one");
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("\\u escape of a high surrogate not followed by a low one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          fail("unknown escape \\" + describe_here() + "; allowed: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0, line_start_ = 0;
  int line_ = 1;
};

inline json_value parse_json(std::string_view text) { return json_reader(text).parse_document(); }

}  // namespace mixprec::detail
