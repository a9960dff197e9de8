// cmath.hpp's exact functions (classification, abs, copysign, fmin, fmax, nextafter, frexp,
// ldexp, floor, ceil, trunc, round) on every code of every format, every pair of codes of the
// 8-bit and smaller formats and 2^20 random pairs of float16 / bfloat16 plus special-value
// pairs, against reference_format.hpp: expected values are the textbook values of the codes,
// operated on in double (exactly) and looked up in the oracle's table.
//
// MIXPREC_MATH_EXHAUSTIVE=1 (the `exhaustive` build) visits every input; otherwise (`unit`) a
// strided subset of the 16-bit inputs and of the pairs.
#include <mixprec/cmath.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "all_formats.hpp"
#include "reference_format.hpp"

#ifndef MIXPREC_MATH_EXHAUSTIVE
#define MIXPREC_MATH_EXHAUSTIVE 0
#endif

namespace {

using mixprec_test::code_class;
using mixprec_test::format_parameters;
using mixprec_test::reference_format;

constexpr bool exhaustive = MIXPREC_MATH_EXHAUSTIVE != 0;
constexpr std::uint32_t unary_stride_16 = exhaustive ? 1 : 7;
constexpr std::uint32_t pair_stride_8 = exhaustive ? 1 : 5;
constexpr std::uint32_t random_pairs_16 = exhaustive ? (1u << 20) : (1u << 14);

class oracle {
 public:
  explicit oracle(format_parameters p) : p_(p), table_(p) {}

  const format_parameters& parameters() const { return p_; }
  code_class classify(std::uint32_t code) const { return mixprec_test::classify(p_, code); }
  bool sign_bit(std::uint32_t code) const { return (code & p_.sign_bit()) != 0; }

  // ±inf and NaN for those codes, the textbook value otherwise.
  double value(std::uint32_t code) const {
    const double magnitude = std::fabs(mixprec_test::textbook_value(p_, code));
    switch (classify(code)) {
      case code_class::nan:
        return std::nan("");
      case code_class::infinity:
        return sign_bit(code) ? -HUGE_VAL : HUGE_VAL;
      case code_class::finite:
        break;
    }
    return sign_bit(code) ? -magnitude : magnitude;
  }

  // The code of a double value rounded into the format (exact for the values used here).
  std::uint32_t code_of(double v) const {
    if (std::isnan(v)) return table_.nan(false);
    if (std::isinf(v)) return table_.infinity(v < 0, mixprec::overflow::non_finite);
    if (v == 0) return table_.zero(std::signbit(v), mixprec::overflow::non_finite);
    return table_.round(v < 0, table_.locate(std::fabs(v)), mixprec::rounding::nearest_even,
                        mixprec::overflow::non_finite);
  }

  std::uint32_t quieted(std::uint32_t code) const {
    switch (p_.specials) {
      case mixprec::special_encoding::ieee:
        return code | (1u << (p_.mantissa_bits - 1));
      case mixprec::special_encoding::nan_all_ones:
        return (code & p_.sign_bit()) | p_.magnitude_mask();
      default:
        return code;
    }
  }

  bool has_signed_nan() const {
    return p_.is_signed &&
           (p_.specials == mixprec::special_encoding::ieee || p_.specials == mixprec::special_encoding::nan_all_ones);
  }
  bool has_negative_zero() const {
    return p_.is_signed && p_.has_subnormals && p_.specials != mixprec::special_encoding::nan_negative_zero;
  }
  double smallest_normal() const { return std::ldexp(1.0, (p_.has_subnormals ? 1 : 0) - p_.bias); }

 private:
  format_parameters p_;
  reference_format<double> table_;
};

template <class T>
const oracle& oracle_for() {
  static const oracle instance(mixprec_test::parameters_of<T>());
  return instance;
}

template <class T>
T from_code(std::uint32_t code) {
  return T::from_bits(static_cast<typename T::storage_type>(code));
}

template <class T>
std::string type_name() {
  return mixprec::format_name<typename T::format>();
}

std::string hex(std::uint32_t code) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%X", code);
  return buffer;
}

// Collects mismatches: counts them, keeps the first few for the report.
class tally {
 public:
  explicit tally(std::string what) : what_(std::move(what)) {}
  // describe() names the input; it runs only for a mismatch.
  template <class Describe>
  void check(bool ok, Describe describe) {
    ++checked_;
    if (ok) return;
    if (++mismatches_ <= 8) examples_ += "\n  " + std::string(describe());
  }
  ~tally() {
    INFO(what_ << ": " << checked_ << " inputs, " << mismatches_ << " mismatches" << examples_);
    CHECK(mismatches_ == 0);
    if (exhaustive) std::printf("%-48s %10zu inputs, %zu mismatches\n", what_.c_str(), checked_, mismatches_);
  }

 private:
  std::string what_;
  std::string examples_;
  std::size_t checked_ = 0;
  std::size_t mismatches_ = 0;
};

template <class T>
std::vector<std::uint32_t> unary_codes() {
  const std::uint32_t n = mixprec_test::code_count<T>();
  const std::uint32_t stride = n > 256 ? unary_stride_16 : 1;
  std::vector<std::uint32_t> codes;
  for (std::uint32_t c = 0; c < n; c += stride) codes.push_back(c);
  return codes;
}

struct code_pair {
  std::uint32_t x, y;
};

template <class T>
std::vector<std::uint32_t> special_codes() {
  using limits = std::numeric_limits<T>;
  const T values[] = {T(0.0),
                      T(1.0),
                      T(-1.0),
                      T(0.5),
                      T(1.5),
                      T(2.0),
                      limits::max(),
                      limits::min(),
                      limits::denorm_min(),
                      limits::infinity(),
                      limits::quiet_NaN(),
                      limits::signaling_NaN()};
  const std::uint32_t sign = mixprec_test::parameters_of<T>().sign_bit();
  std::vector<std::uint32_t> codes;
  for (const T& v : values) {
    for (std::uint32_t c : {std::uint32_t{v.bits()}, v.bits() ^ sign}) {
      codes.push_back(c);
      if (c > 0) codes.push_back(c - 1);
      if (c + 1 < mixprec_test::code_count<T>()) codes.push_back(c + 1);
    }
  }
  std::sort(codes.begin(), codes.end());
  codes.erase(std::unique(codes.begin(), codes.end()), codes.end());
  return codes;
}

// Every pair of codes (strided in the unit build) for 8-bit formats; random pairs plus every
// pair of special codes for 16-bit formats.
template <class T>
std::vector<code_pair> test_pairs() {
  const std::uint32_t n = mixprec_test::code_count<T>();
  std::vector<code_pair> pairs;
  if (n <= 256) {
    for (std::uint32_t i = 0; i < n * n; i += pair_stride_8) pairs.push_back({i / n, i % n});
    return pairs;
  }
  std::mt19937 random(20240523);
  std::uniform_int_distribution<std::uint32_t> code(0, n - 1);
  for (std::uint32_t i = 0; i < random_pairs_16; ++i) pairs.push_back({code(random), code(random)});
  const auto specials = special_codes<T>();
  for (auto x : specials)
    for (auto y : specials) pairs.push_back({x, y});
  return pairs;
}

}  // namespace

TEMPLATE_TEST_CASE("classification agrees with the format's encoding on every code", "[math][classify]",
                   MIXPREC_ALL_TYPES) {
  const oracle& o = oracle_for<TestType>();
  tally t(type_name<TestType>() + " isnan isinf isfinite isnormal signbit");
  for (std::uint32_t code = 0; code < mixprec_test::code_count<TestType>(); ++code) {
    const TestType x = from_code<TestType>(code);
    const code_class c = o.classify(code);
    const double v = o.value(code);
    const bool normal = c == code_class::finite && v != 0 && std::fabs(v) >= o.smallest_normal();
    // C's signbit reads the sign bit, NaN included; a value's sign otherwise.
    const bool negative = c == code_class::nan ? o.sign_bit(code) : std::signbit(v);
    t.check(mixprec::isnan(x) == (c == code_class::nan) && mixprec::isinf(x) == (c == code_class::infinity) &&
                mixprec::isfinite(x) == (c == code_class::finite) && mixprec::isnormal(x) == normal &&
                mixprec::signbit(x) == negative,
            [&] { return hex(code); });
  }
}

TEMPLATE_TEST_CASE("abs clears the sign of every code and keeps NaN a NaN", "[math][abs]", MIXPREC_ALL_TYPES) {
  const oracle& o = oracle_for<TestType>();
  tally t(type_name<TestType>() + " abs fabs");
  for (std::uint32_t code = 0; code < mixprec_test::code_count<TestType>(); ++code) {
    const TestType x = from_code<TestType>(code);
    // IEEE 754-2019 §5.5.1: abs is a bit operation; a NaN keeps its payload (not quieted).
    std::uint32_t want = 0;
    if (o.classify(code) == code_class::nan) {
      want = o.has_signed_nan() ? code & ~o.parameters().sign_bit() : code;
    } else {
      want = o.code_of(std::fabs(o.value(code)));
    }
    t.check(mixprec::abs(x).bits() == want && mixprec::fabs(x).bits() == want, [&] { return hex(code); });
  }
}

TEMPLATE_TEST_CASE("copysign gives |x| with y's sign bit on every pair of codes", "[math][copysign]",
                   MIXPREC_ALL_TYPES) {
  const oracle& o = oracle_for<TestType>();
  tally t(type_name<TestType>() + " copysign");
  for (const code_pair& p : test_pairs<TestType>()) {
    const bool negative = o.sign_bit(p.y);
    std::uint32_t want = 0;
    if (o.classify(p.x) == code_class::nan) {
      want = o.has_signed_nan() ? (p.x & ~o.parameters().sign_bit()) | (p.y & o.parameters().sign_bit()) : p.x;
    } else {
      const double magnitude = std::fabs(o.value(p.x));
      want = o.code_of(negative ? -magnitude : magnitude);
    }
    t.check(mixprec::copysign(from_code<TestType>(p.x), from_code<TestType>(p.y)).bits() == want,
            [&] { return "copysign(" + hex(p.x) + ", " + hex(p.y) + ")"; });
  }
}

TEMPLATE_TEST_CASE("fmin and fmax return the smaller / larger operand, ignore one NaN, order -0 below +0",
                   "[math][fmin]", MIXPREC_ALL_TYPES) {
  const oracle& o = oracle_for<TestType>();
  tally t(type_name<TestType>() + " fmin fmax");
  for (const code_pair& p : test_pairs<TestType>()) {
    const bool x_nan = o.classify(p.x) == code_class::nan, y_nan = o.classify(p.y) == code_class::nan;
    std::uint32_t want_min = 0, want_max = 0;
    if (x_nan && y_nan) {
      want_min = want_max = o.quieted(p.x);
    } else if (x_nan || y_nan) {
      want_min = want_max = x_nan ? p.y : p.x;
    } else {
      const double x = o.value(p.x), y = o.value(p.y);
      // Equal values differ only as -0 and +0: -0 is the smaller.
      const bool y_below = y < x || (y == x && std::signbit(y) && !std::signbit(x));
      const bool y_above = y > x || (y == x && !std::signbit(y) && std::signbit(x));
      want_min = y_below ? p.y : p.x;
      want_max = y_above ? p.y : p.x;
    }
    const TestType x = from_code<TestType>(p.x), y = from_code<TestType>(p.y);
    t.check(mixprec::fmin(x, y).bits() == want_min && mixprec::fmax(x, y).bits() == want_max,
            [&] { return "fmin/fmax(" + hex(p.x) + ", " + hex(p.y) + ")"; });
  }
}

namespace {
// Every non-NaN value of a format in increasing order, one entry per value (one zero), with the
// code each has; nextafter steps along it.
template <class T>
std::vector<std::pair<double, std::uint32_t>> ordered_values() {
  const oracle& o = oracle_for<T>();
  std::map<double, std::uint32_t> by_value;
  for (std::uint32_t code = 0; code < mixprec_test::code_count<T>(); ++code) {
    if (o.classify(code) == code_class::nan) continue;
    const double v = o.value(code);
    if (v == 0 && o.sign_bit(code)) continue;  // -0 joins +0
    by_value.emplace(v, code);
  }
  return {by_value.begin(), by_value.end()};
}
}  // namespace

TEMPLATE_TEST_CASE("nextafter steps to the adjacent value toward y on every pair of codes", "[math][nextafter]",
                   MIXPREC_ALL_TYPES) {
  const oracle& o = oracle_for<TestType>();
  const auto values = ordered_values<TestType>();
  tally t(type_name<TestType>() + " nextafter");
  for (const code_pair& p : test_pairs<TestType>()) {
    const bool x_nan = o.classify(p.x) == code_class::nan, y_nan = o.classify(p.y) == code_class::nan;
    std::uint32_t want = 0;
    if (x_nan || y_nan) {
      want = o.quieted(x_nan ? p.x : p.y);
    } else {
      const double x = o.value(p.x), y = o.value(p.y);
      if (x == y) {
        want = p.y;  // C17 7.12.11.3: y itself (so nextafter(+0, -0) = -0)
      } else {
        const auto at = std::lower_bound(values.begin(), values.end(), std::make_pair(x, std::uint32_t{0}));
        const auto next = y > x ? at + 1 : at - 1;
        want = next->second;
        // Onto zero from below: -0 where the format has it (IEEE nextUp(-denorm_min) = -0).
        if (next->first == 0 && x < 0 && o.has_negative_zero()) want = o.parameters().sign_bit();
      }
    }
    t.check(mixprec::nextafter(from_code<TestType>(p.x), from_code<TestType>(p.y)).bits() == want,
            [&] { return "nextafter(" + hex(p.x) + ", " + hex(p.y) + ")"; });
  }
}

namespace {
template <class T>
constexpr bool has_frexp = mixprec::format_traits<typename T::format>::min_exponent <= -1;
}

TEMPLATE_TEST_CASE("frexp splits every code into m in [0.5, 1) and an exponent, exactly", "[math][frexp]",
                   MIXPREC_ALL_TYPES) {
  if constexpr (has_frexp<TestType>) {
    const oracle& o = oracle_for<TestType>();
    tally t(type_name<TestType>() + " frexp");
    for (std::uint32_t code : unary_codes<TestType>()) {
      std::uint32_t want = code;
      int want_exponent = 0;
      const code_class c = o.classify(code);
      if (c == code_class::nan) {
        want = o.quieted(code);
      } else if (c == code_class::finite && o.value(code) != 0) {
        want = o.code_of(std::frexp(o.value(code), &want_exponent));
      }
      int exponent = 12345;
      const auto m = mixprec::frexp(from_code<TestType>(code), &exponent);
      t.check(m.bits() == want && exponent == want_exponent, [&] { return "frexp(" + hex(code) + ")"; });
    }
  } else {
    // float6_e2m3fn and float4_e2m1fn cannot hold every m in [0.5, 1): frexp does not compile
    // for them (a static_assert says so).
    SUCCEED("frexp is not defined for " << type_name<TestType>());
  }
}

TEMPLATE_TEST_CASE("ldexp scales every code exactly and rounds once past the range", "[math][ldexp]",
                   MIXPREC_ALL_TYPES) {
  const oracle& o = oracle_for<TestType>();
  tally t(type_name<TestType>() + " ldexp");
  std::vector<int> scales = {INT_MIN, -100000, -1000, -300, 300, 1000, 100000, INT_MAX};
  for (int n = -45; n <= 45; ++n) scales.push_back(n);
  for (std::uint32_t code : unary_codes<TestType>()) {
    for (int n : scales) {
      std::uint32_t want = code;
      const code_class c = o.classify(code);
      if (c == code_class::nan) {
        want = o.quieted(code);
      } else if (c == code_class::finite) {
        // |n| >= 400 over- or underflows every format just as 400 does; 2^±400 keeps the
        // product exact in double.
        want = o.code_of(std::ldexp(o.value(code), std::max(-400, std::min(400, n))));
      }
      t.check(mixprec::ldexp(from_code<TestType>(code), n).bits() == want,
              [&] { return "ldexp(" + hex(code) + ", " + std::to_string(n) + ")"; });
    }
  }
}

TEMPLATE_TEST_CASE("floor, ceil, trunc and round give the exact integral value of every code", "[math][floor]",
                   MIXPREC_ALL_TYPES) {
  const oracle& o = oracle_for<TestType>();
  tally t(type_name<TestType>() + " floor ceil trunc round");
  for (std::uint32_t code : unary_codes<TestType>()) {
    const TestType x = from_code<TestType>(code);
    if (o.classify(code) == code_class::nan) {
      const std::uint32_t want = o.quieted(code);
      t.check(mixprec::floor(x).bits() == want && mixprec::ceil(x).bits() == want && mixprec::trunc(x).bits() == want &&
                  mixprec::round(x).bits() == want,
              [&] { return hex(code); });
      continue;
    }
    const double v = o.value(code);
    t.check(mixprec::floor(x).bits() == o.code_of(std::floor(v)) &&
                mixprec::ceil(x).bits() == o.code_of(std::ceil(v)) &&
                mixprec::trunc(x).bits() == o.code_of(std::trunc(v)) &&
                mixprec::round(x).bits() == o.code_of(std::round(v)),
            [&] { return hex(code); });
  }
}
