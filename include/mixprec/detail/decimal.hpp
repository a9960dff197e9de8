// Exact decimal arithmetic for text I/O (io.hpp): a small unsigned big integer, the exact
// decimal expansion of a double, an exact comparison of a decimal with a double, and the
// scanner that recognises the number grammar one character at a time.
//
// Everything here is exact; nothing rounds.  Host only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mixprec::detail {

// An unsigned integer of any size in 32-bit limbs, least significant first, with just what
// exact decimal <-> binary work needs: × small + small, × 5^n, × 2^n, ÷ small, comparison.
class big_unsigned {
 public:
  big_unsigned() = default;
  explicit big_unsigned(std::uint64_t value) {
    for (; value != 0; value >>= 32) limbs_.push_back(static_cast<std::uint32_t>(value));
  }

  // The integer whose decimal digits are `digits` ('0'-'9' only).
  static big_unsigned from_digits(std::string_view digits) {
    big_unsigned n;
    for (const char c : digits) n.multiply_add(10, static_cast<std::uint32_t>(c - '0'));
    return n;
  }

  void multiply_add(std::uint32_t factor, std::uint32_t addend) {
    std::uint64_t carry = addend;
    for (std::uint32_t& limb : limbs_) {
      const std::uint64_t t = std::uint64_t{limb} * factor + carry;
      limb = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    if (carry != 0) limbs_.push_back(static_cast<std::uint32_t>(carry));
    trim();
  }

  void multiply_by_power_of_5(long long n) {
    constexpr std::uint32_t five_to_13 = 1220703125;  // the largest power of 5 below 2^32
    for (; n >= 13; n -= 13) multiply_add(five_to_13, 0);
    std::uint32_t rest = 1;
    for (; n > 0; --n) rest *= 5;
    multiply_add(rest, 0);
  }

  void shift_left(long long bits) {
    if (limbs_.empty() || bits <= 0) return;
    const auto whole = static_cast<std::size_t>(bits / 32);
    const auto part = static_cast<unsigned>(bits % 32);
    if (part != 0) {
      std::uint32_t carry = 0;
      for (std::uint32_t& limb : limbs_) {
        const std::uint32_t next = limb >> (32 - part);
        limb = (limb << part) | carry;
        carry = next;
      }
      if (carry != 0) limbs_.push_back(carry);
    }
    limbs_.insert(limbs_.begin(), whole, 0u);
  }

  // Divides in place and returns the remainder.
  std::uint32_t divide(std::uint32_t divisor) {
    std::uint64_t remainder = 0;
    for (auto limb = limbs_.rbegin(); limb != limbs_.rend(); ++limb) {
      const std::uint64_t t = (remainder << 32) | *limb;
      *limb = static_cast<std::uint32_t>(t / divisor);
      remainder = t % divisor;
    }
    trim();
    return static_cast<std::uint32_t>(remainder);
  }

  bool is_zero() const noexcept { return limbs_.empty(); }

  // The decimal digits, without leading zeros ("" for zero).
  std::string to_digits() const {
    big_unsigned n = *this;
    std::string reversed;
    while (!n.is_zero()) {
      std::uint32_t chunk = n.divide(1000000000);  // nine digits at a time
      for (int i = 0; i < 9; ++i, chunk /= 10) reversed.push_back(static_cast<char>('0' + chunk % 10));
    }
    while (!reversed.empty() && reversed.back() == '0') reversed.pop_back();
    return std::string(reversed.rbegin(), reversed.rend());
  }

  friend int compare(const big_unsigned& a, const big_unsigned& b) noexcept {
    if (a.limbs_.size() != b.limbs_.size()) return a.limbs_.size() < b.limbs_.size() ? -1 : 1;
    for (std::size_t i = a.limbs_.size(); i-- > 0;) {
      if (a.limbs_[i] != b.limbs_[i]) return a.limbs_[i] < b.limbs_[i] ? -1 : 1;
    }
    return 0;
  }

 private:
  void trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }
  std::vector<std::uint32_t> limbs_;
};

// A non-negative decimal 0.d1d2...dn × 10^point: digits has no leading or trailing zero and
// is empty for zero.  point - 1 is the exponent of scientific notation.
struct decimal_number {
  std::string digits;
  long long point = 0;
};

// A finite double d > 0 as significand × 2^exponent with an integer significand < 2^53.
struct binary_number {
  std::uint64_t significand;
  int exponent;
};
inline binary_number split_double(double d) {
  int e = 0;
  const double fraction = std::frexp(d, &e);  // d = fraction × 2^e, 0.5 <= fraction < 1
  return {static_cast<std::uint64_t>(std::ldexp(fraction, 53)), e - 53};
}

// The exact decimal expansion of a finite double d > 0: a double is m × 2^e, which is the
// integer m × 2^e for e >= 0 and (m × 5^-e) × 10^e otherwise, so at most 767 digits.
inline decimal_number exact_decimal(double d) {
  const binary_number b = split_double(d);
  big_unsigned n(b.significand);
  long long scale = 0;  // d = n × 10^scale
  if (b.exponent >= 0) {
    n.shift_left(b.exponent);
  } else {
    n.multiply_by_power_of_5(-b.exponent);
    scale = b.exponent;
  }
  decimal_number result{n.to_digits(), 0};
  result.point = static_cast<long long>(result.digits.size()) + scale;
  while (!result.digits.empty() && result.digits.back() == '0') result.digits.pop_back();
  return result;
}

// The sign of x - d for a non-zero decimal x and a finite double d > 0, exactly: with
// x = D × 10^s and d = m × 2^e, compare D × 5^s × 2^s with m × 2^e after moving every
// negative power to the other side.
inline int compare(const decimal_number& x, double d) {
  const binary_number b = split_double(d);
  big_unsigned left = big_unsigned::from_digits(x.digits);
  big_unsigned right(b.significand);
  const long long s = x.point - static_cast<long long>(x.digits.size());
  if (s >= 0) {
    left.multiply_by_power_of_5(s);
  } else {
    right.multiply_by_power_of_5(-s);
  }
  const long long twos = s - b.exponent;  // left × 2^twos against right
  if (twos >= 0) {
    left.shift_left(twos);
  } else {
    right.shift_left(-twos);
  }
  return compare(left, right);
}

// The number grammar, recognised one character at a time so that operator>> can stop at the
// first character that cannot continue a number (as std::num_get does):
//
//   number   = [sign] (decimal | hex | "inf" | "infinity" | "nan")     words in any case
//   decimal  = (digits ["." [digits]] | "." digits) [("e" | "E") [sign] digits]
//   hex      = ("0x" | "0X") (xdigits ["." [xdigits]] | "." xdigits) [("p" | "P") [sign] digits]
//
// The hex exponent is decimal and counts powers of two, as in C's "%a" and strtod.
class number_scanner {
 public:
  // Takes c if it continues a prefix of some number; false (and no change) otherwise.
  bool feed(char c) noexcept {
    const bool digit = c >= '0' && c <= '9';
    const bool xdigit = digit || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
    const char lower = static_cast<char>(c | 0x20);  // ASCII case folding for letters
    switch (state_) {
      case state::start:
        if (c == '+' || c == '-') return go(state::sign);
        [[fallthrough]];
      case state::sign:
        if (c == '0') return go(state::leading_zero, true);
        if (digit) return go(state::integer, true);
        if (c == '.') return go(state::point);
        if (lower == 'i' || lower == 'n') {
          word_ = lower == 'i' ? "infinity" : "nan";
          matched_ = 1;
          return go(state::word);
        }
        return false;
      case state::word:
        if (word_[matched_] == '\0' || lower != word_[matched_]) return false;
        ++matched_;
        return true;
      case state::leading_zero:
        if (lower == 'x') return go(state::hex_prefix, false);
        [[fallthrough]];
      case state::integer:
        if (digit) return go(state::integer);
        if (c == '.') return go(state::point);
        return lower == 'e' && go(state::exponent_mark);
      case state::point:
      case state::fraction:
        if (digit) return go(state::fraction, true);
        return lower == 'e' && has_digits_ && go(state::exponent_mark);
      case state::hex_prefix:
      case state::hex_integer:
        if (xdigit) return go(state::hex_integer, true);
        if (c == '.') return go(state::hex_point);
        return lower == 'p' && state_ == state::hex_integer && go(state::exponent_mark);
      case state::hex_point:
      case state::hex_fraction:
        if (xdigit) return go(state::hex_fraction, true);
        return lower == 'p' && has_digits_ && go(state::exponent_mark);
      case state::exponent_mark:
        if (c == '+' || c == '-') return go(state::exponent_sign);
        [[fallthrough]];
      case state::exponent_sign:
      case state::exponent_digits:
        return digit && go(state::exponent_digits);
    }
    return false;
  }

  // Whether the characters taken so far form a whole number.
  bool complete() const noexcept {
    switch (state_) {
      case state::leading_zero:
      case state::integer:
      case state::fraction:
      case state::hex_integer:
      case state::hex_fraction:
      case state::exponent_digits:
        return true;
      case state::point:
      case state::hex_point:
        return has_digits_;
      case state::word:
        return word_[matched_] == '\0' || (word_[0] == 'i' && matched_ == 3);
      default:
        return false;
    }
  }

  // What could come next, for error messages.
  std::string expected() const {
    switch (state_) {
      case state::start:
        return "a sign, a digit, '.', \"inf\" or \"nan\"";
      case state::sign:
        return "a digit, '.', \"inf\" or \"nan\"";
      case state::word:
        if (word_[matched_] == '\0') return "the end of the text";
        return std::string("'") + word_[matched_] + "' (of \"" + word_ + "\")" +
               (complete() ? " or the end of the text" : "");
      case state::leading_zero:
      case state::integer:
        return "a digit, '.', an exponent or the end of the text";
      case state::point:
      case state::fraction:
        return has_digits_ ? "a digit, an exponent or the end of the text" : "a digit";
      case state::hex_prefix:
        return "a hexadecimal digit or '.'";
      case state::hex_integer:
        return "a hexadecimal digit, '.', a binary exponent ('p') or the end of the text";
      case state::hex_point:
      case state::hex_fraction:
        return has_digits_ ? "a hexadecimal digit, a binary exponent ('p') or the end of the text"
                           : "a hexadecimal digit";
      case state::exponent_mark:
        return "a sign or a digit of the exponent";
      case state::exponent_sign:
        return "a digit of the exponent";
      case state::exponent_digits:
        return "a digit of the exponent or the end of the text";
    }
    return "a number";
  }

 private:
  enum class state : unsigned char {
    start,
    sign,
    word,
    leading_zero,
    integer,
    point,
    fraction,
    hex_prefix,
    hex_integer,
    hex_point,
    hex_fraction,
    exponent_mark,
    exponent_sign,
    exponent_digits,
  };
  bool go(state next) noexcept {
    state_ = next;
    return true;
  }
  bool go(state next, bool has_digits) noexcept {
    has_digits_ = has_digits;
    return go(next);
  }

  state state_ = state::start;
  bool has_digits_ = false;  // significand digits seen (after "0x": hexadecimal ones)
  const char* word_ = "";
  std::size_t matched_ = 0;
};

// A number read from text the scanner accepted.
struct scanned_number {
  enum class kind { decimal, binary, infinity, nan };
  kind what = kind::decimal;
  bool negative = false;
  decimal_number decimal;       // kind::decimal
  std::uint64_t significand{};  // kind::binary: significand × 2^exponent, sticky bit included
  int exponent{};
};

// Reads the value of a complete number.  Decimal significands keep their first max_digits
// significant digits; a non-zero remainder becomes one more digit '1', which puts the number
// strictly between the same numbers of at most max_digits digits as the exact text (see
// text_limits in io.hpp for why that is enough).  Hex significands keep 60 bits and a sticky bit.
inline scanned_number read_number(std::string_view text, std::size_t max_digits) {
  scanned_number n;
  std::size_t i = 0;
  if (text[i] == '+' || text[i] == '-') n.negative = text[i++] == '-';
  const char first = static_cast<char>(text[i] | 0x20);
  if (first == 'i' || first == 'n') {
    n.what = first == 'i' ? scanned_number::kind::infinity : scanned_number::kind::nan;
    return n;
  }
  const bool hex = text.size() > i + 1 && text[i] == '0' && (text[i + 1] | 0x20) == 'x';
  if (hex) i += 2;
  const char exponent_mark = hex ? 'p' : 'e';

  long long point = 0;  // decimal: the position of the point; hex: a power of two
  bool seen_point = false, significant = false, sticky = false;
  std::string digits;
  std::uint64_t bits = 0;
  for (; i < text.size() && (text[i] | 0x20) != exponent_mark; ++i) {
    const char c = text[i];
    if (c == '.') {
      seen_point = true;
      continue;
    }
    const int value = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    if (!significant && value == 0) {
      if (seen_point) point -= hex ? 4 : 1;
      continue;
    }
    significant = true;
    if (hex) {
      if (bits < (std::uint64_t{1} << 56)) {
        bits = bits << 4 | static_cast<std::uint64_t>(value);
        if (seen_point) point -= 4;
      } else {
        sticky = sticky || value != 0;
        if (!seen_point) point += 4;
      }
    } else {
      if (!seen_point) ++point;
      if (digits.size() < max_digits) {
        digits.push_back(c);
      } else {
        sticky = sticky || c != '0';
      }
    }
  }
  long long exponent = 0;  // saturates: beyond 10^15 every value is out of range anyway
  bool exponent_negative = false;
  if (i < text.size()) {
    ++i;
    if (text[i] == '+' || text[i] == '-') exponent_negative = text[i++] == '-';
    for (; i < text.size(); ++i) exponent = std::min(exponent * 10 + (text[i] - '0'), 1000000000000000LL);
  }
  if (exponent_negative) exponent = -exponent;
  if (hex) {
    n.what = scanned_number::kind::binary;
    n.significand = bits << 1 | (sticky ? 1 : 0);
    const long long e = point + exponent - 1;
    n.exponent = static_cast<int>(e < -100000 ? -100000 : e > 100000 ? 100000 : e);
    return n;
  }
  if (sticky) {
    digits.push_back('1');
  } else {
    while (!digits.empty() && digits.back() == '0') digits.pop_back();
  }
  n.decimal = {digits, digits.empty() ? 0 : point + exponent};
  return n;
}

}  // namespace mixprec::detail
