// parse<T> under every rounding and overflow mode against the independent oracle
// (tests/support/reference_format.hpp over exact fractions): decimal and hexadecimal text at,
// just above and just below every value and every midpoint of the 8-bit and smaller formats
// and of a sample of float16 / bfloat16, in short and very long spellings, plus random text.
//
// "Just above a midpoint" by 10^-30 relative is the case that reading through double gets
// wrong: the nearest double is the midpoint itself, which then rounds to even.
#include <mixprec/io.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "all_formats.hpp"
#include "exact_text.hpp"
#include "reference_format.hpp"

using namespace mixprec;

namespace {

// Every breakpoint of a format, as doubles: its positive values and the midpoints between
// neighbours, from the one below the smallest value (with 0) to the one above max (with
// max + one unit, where rounding to nearest overflows).  `stride` > 1 takes a sample.
std::vector<double> breakpoints(const mixprec_test::format_parameters& p, unsigned stride) {
  std::vector<double> values;
  for (std::uint32_t code = 0; code <= p.magnitude_mask(); ++code) {
    if (mixprec_test::classify(p, code) != mixprec_test::code_class::finite) continue;
    const double v = mixprec_test::textbook_value(p, code);
    if (v > 0) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  const double max = values.back();
  values.push_back(max + std::ldexp(1.0, std::ilogb(max) - p.mantissa_bits));
  std::vector<double> points;
  double below = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const bool edge = i < 40 || i + 40 > values.size();
    if (edge || i % stride == 0) {
      points.push_back((below + values[i]) / 2);
      if (i + 1 < values.size()) points.push_back(values[i]);
    }
    below = values[i];
  }
  return points;
}

// Text for b, and for b ± 10^-k just past b's last digit (zeros digits in between): the
// last is the largest decimal of its length below b.
std::vector<std::string> texts_around(double b, std::size_t zeros) {
  io_test::decimal_digits d = io_test::exact_digits(b);
  std::vector<std::string> texts{io_test::text_of(d)};
  io_test::decimal_digits up = d, down = d;
  up.digits += std::string(zeros, '0') + "1";
  --down.digits.back();  // the last digit is never 0
  down.digits += std::string(zeros + 1, '9');
  texts.push_back(io_test::text_of(up));
  texts.push_back(io_test::text_of(down));
  return texts;
}

template <class T>
class oracle_check {
 public:
  oracle_check() : oracle_(mixprec_test::parameters_of<T>()) {}

  // parse<T>(text) in every mode against the oracle's rounding of the exact value.
  void check(const std::string& text) {
    const io_test::exact_value v = io_test::exact_value_of(text);
    typename mixprec_test::reference_format<io_test::fraction>::position where{};
    if (!v.magnitude.is_zero()) where = oracle_.locate(v.magnitude, io_test::no_hint);
    for (const rounding r : mixprec_test::all_roundings) {
      for (const overflow o : mixprec_test::all_overflows) {
        const std::uint32_t expected =
            v.magnitude.is_zero() ? oracle_.zero(v.negative, o) : oracle_.round(v.negative, where, r, o);
        const std::uint32_t actual = parse<T>(text, r, o).bits();
        ++checks_;
        if (expected != actual && ++failures_ <= 5) {
          FAIL_CHECK(format_name<typename T::format>()
                     << " parse(\"" << text.substr(0, 80) << "\", " << to_string(r) << ", " << to_string(o)
                     << "): expected code " << expected << ", got " << actual);
        }
      }
    }
  }
  void check_both_signs(const std::string& text) {
    check(text);
    check("-" + text);
  }

  unsigned long checks() const { return checks_; }
  unsigned long failures() const { return failures_; }

 private:
  mixprec_test::reference_format<io_test::fraction> oracle_;
  unsigned long checks_ = 0, failures_ = 0;
};

template <class T>
void check_around_breakpoints(unsigned stride) {
  oracle_check<T> oracle;
  for (const double b : breakpoints(mixprec_test::parameters_of<T>(), stride)) {
    for (const std::string& text : texts_around(b, 30)) oracle.check_both_signs(text);
    for (const std::string& text : texts_around(b, 520)) oracle.check_both_signs(text);  // > 500 digits
    for (const int digits : {1, 3, 6, 17}) {  // rounded spellings, as people write them
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "%.*g", digits, b);
      oracle.check_both_signs(buffer);
    }
    // Hexadecimal: exact, and one bit in the 80th place above.
    char hex[64];
    std::snprintf(hex, sizeof hex, "%a", b);
    std::string text = hex;
    oracle.check_both_signs(text);
    const std::size_t p = text.find('p');
    const std::string tail = std::string(19, '0') + "1";
    text = text.find('.') == std::string::npos ? text.substr(0, p) + "." + tail + text.substr(p)
                                               : text.substr(0, p) + tail + text.substr(p);
    oracle.check_both_signs(text);
  }
  INFO(oracle.checks() << " checks");
  CHECK(oracle.failures() == 0);
  CHECK(oracle.checks() > 0);
}

}  // namespace

TEMPLATE_TEST_CASE("parse rounds correctly in every mode at and around every breakpoint of the small formats",
                   "[io][parse]", mixprec::float8_e4m3fn, mixprec::float8_e5m2, mixprec::float8_e4m3fnuz,
                   mixprec::float8_e5m2fnuz, mixprec::float6_e3m2fn, mixprec::float6_e2m3fn, mixprec::float4_e2m1fn,
                   mixprec::float8_e8m0fnu, mixprec::float8_ue4m3, mixprec::float8_e4m3, mixprec::float8_e3m4,
                   mixprec::float8_e4m3b11fnuz) {
  check_around_breakpoints<TestType>(1);
}

TEMPLATE_TEST_CASE("parse rounds correctly in every mode around a sample of float16 and bfloat16 breakpoints",
                   "[io][parse]", mixprec::float16, mixprec::bfloat16) {
  check_around_breakpoints<TestType>(31);
}

TEST_CASE("parse rounds correctly in every mode around a sample of tfloat32 breakpoints", "[io][parse]") {
  check_around_breakpoints<mixprec::tfloat32>(251);  // 2^19 codes: about as many samples as above
}

TEMPLATE_TEST_CASE("parse rounds random decimal text correctly in every mode", "[io][parse]", MIXPREC_ALL_TYPES) {
  using T = TestType;
  using traits = format_traits<typename T::format>;
  oracle_check<T> oracle;
  std::mt19937_64 random(20240611);
  // Decimal exponents from well below the smallest value to well above max.
  const int low = static_cast<int>(std::floor((traits::min_quantum_exponent - 4) * 0.30103));
  const int high = static_cast<int>(std::ceil((traits::max_exponent + 3) * 0.30103));
  std::uniform_int_distribution<int> length(1, 40), digit(0, 9), exponent(low, high);
  for (int i = 0; i < 1500; ++i) {
    std::string digits;
    const int n = length(random);
    for (int k = 0; k < n; ++k) digits += static_cast<char>('0' + digit(random));
    oracle.check_both_signs(digits.substr(0, 1) + "." + digits.substr(1) + "e" + std::to_string(exponent(random)));
  }
  CHECK(oracle.failures() == 0);
}

TEMPLATE_TEST_CASE("parse rounds huge and tiny exponents like the values they stand for", "[io][parse]",
                   MIXPREC_ALL_TYPES) {
  oracle_check<TestType> oracle;
  for (const char* text :
       {"1e400", "1e-400", "9.99e5000", "1e-5000", "0e5000", "0.000e-5000", "0x1p5000", "0x1p-5000", "0x0p9"}) {
    oracle.check_both_signs(text);
  }
  CHECK(oracle.failures() == 0);
  // Past anything an oracle fraction can hold: the same as the exponents above.
  for (const rounding r : mixprec_test::all_roundings) {
    for (const overflow o : mixprec_test::all_overflows) {
      CHECK(parse<TestType>("1e99999", r, o).bits() == parse<TestType>("1e400", r, o).bits());
      CHECK(parse<TestType>("-1e-99999", r, o).bits() == parse<TestType>("-1e-400", r, o).bits());
      CHECK(parse<TestType>("12e999999999999999999999", r, o).bits() == parse<TestType>("1e400", r, o).bits());
      CHECK(parse<TestType>("-1e-999999999999999999999", r, o).bits() == parse<TestType>("-1e-400", r, o).bits());
      CHECK(parse<TestType>("0x1p-99999999999999", r, o).bits() == parse<TestType>("0x1p-5000", r, o).bits());
    }
  }
}
