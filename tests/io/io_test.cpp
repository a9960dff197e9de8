// io.hpp on hand-picked cases: the notation of to_string, the grammar and error messages of
// parse, rounding at the places double rounding would get wrong, very long and very large
// input, and the stream operators.  (round_trip_test.cpp and parse_oracle_test.cpp check
// every code and every breakpoint against an exact oracle.)
#include <mixprec/io.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <iomanip>
#include <limits>
#include <locale>
#include <sstream>
#include <string>

#include "all_formats.hpp"

using namespace mixprec;
using Catch::Matchers::Contains;

namespace {
template <class T>
std::string shortest(double x) {
  return to_string(T(x));
}
template <class T>
std::string shortest_code(unsigned code) {
  return to_string(T::from_bits(static_cast<typename T::storage_type>(code)));
}
// A locale whose decimal point is a comma, to show that shortest output ignores locales.
struct comma_point : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
};
}  // namespace

TEST_CASE("to_string prints the shortest decimal that reads back", "[io][to_string]") {
  CHECK(shortest<float16>(0.1) == "0.1");
  CHECK(shortest<float16>(1.0 / 3) == "0.3333");
  CHECK(shortest<float16>(1.5) == "1.5");
  CHECK(shortest<float16>(-2.0) == "-2");
  CHECK(shortest<bfloat16>(0.1) == "0.1");
  // Extremes: the shortest text is not the exact value when a shorter one rounds back.
  CHECK(to_string(std::numeric_limits<float16>::max()) == "65500");  // 65504
  CHECK(to_string(std::numeric_limits<float16>::lowest()) == "-65500");
  CHECK(to_string(std::numeric_limits<float16>::denorm_min()) == "6e-08");  // 2^-24
  CHECK(to_string(std::numeric_limits<float16>::min()) == "0.00006104");    // 2^-14
  CHECK(to_string(std::numeric_limits<bfloat16>::max()) == "3.39e+38");
  CHECK(to_string(std::numeric_limits<bfloat16>::denorm_min()) == "9e-41");
  CHECK(to_string(std::numeric_limits<float8_e4m3fn>::max()) == "450");    // 448; 464 is the tie that rounds back
  CHECK(to_string(std::numeric_limits<float8_e4m3fnuz>::max()) == "240");  // 256 would overflow
  CHECK(to_string(std::numeric_limits<float8_e5m2>::max()) == "60000");    // 57344
  CHECK(to_string(std::numeric_limits<float6_e3m2fn>::max()) == "30");     // 28: nothing overflows in fp6
  CHECK(to_string(std::numeric_limits<float4_e2m1fn>::max()) == "6");
  CHECK(to_string(std::numeric_limits<float8_e8m0fnu>::max()) == "2e+38");     // 2^127
  CHECK(to_string(std::numeric_limits<float8_e8m0fnu>::lowest()) == "6e-39");  // 2^-127
  CHECK(to_string(std::numeric_limits<float8_e4m3fn>::epsilon()) == "0.13");   // 0.125: 0.12 reads as 0.1171875
}

TEST_CASE("to_string writes plain notation for exponents in [-5, 16) and scientific otherwise", "[io][to_string]") {
  CHECK(shortest<bfloat16>(1e15) == "1000000000000000");
  CHECK(shortest<bfloat16>(1e16) == "1e+16");
  CHECK(shortest<bfloat16>(123456.0) == "123400");
  CHECK(shortest<bfloat16>(1e-5) == "0.00001");
  CHECK(shortest<bfloat16>(1e-6) == "1e-06");
  CHECK(shortest<bfloat16>(-1.5e-7) == "-1.5e-07");
  CHECK(shortest<bfloat16>(2.5e-30) == "2.5e-30");
  CHECK(shortest<float16>(0.00012345) == "0.0001235");
}

TEST_CASE("to_string spells zeros, infinities and NaNs", "[io][to_string]") {
  CHECK(shortest_code<float16>(0x0000) == "0");
  CHECK(shortest_code<float16>(0x8000) == "-0");
  CHECK(shortest_code<float16>(0x7C00) == "inf");
  CHECK(shortest_code<float16>(0xFC00) == "-inf");
  CHECK(shortest_code<float16>(0x7E00) == "nan");
  CHECK(shortest_code<float16>(0xFE00) == "-nan");
  CHECK(shortest_code<float16>(0x7C01) == "nan");  // signalling, with a payload: still "nan"
  CHECK(shortest_code<float8_e4m3fn>(0x7F) == "nan");
  CHECK(shortest_code<float8_e4m3fn>(0xFF) == "-nan");
  CHECK(shortest_code<float8_e4m3fnuz>(0x80) == "nan");  // the one NaN has the sign bit set but no sign
  CHECK(shortest_code<float8_e4m3fnuz>(0x00) == "0");
  CHECK(shortest_code<float8_e8m0fnu>(0xFF) == "nan");
  CHECK(shortest_code<float6_e2m3fn>(0x20) == "-0");
}

TEST_CASE("parse accepts the documented grammar", "[io][parse]") {
  CHECK(parse<float16>("1").bits() == 0x3C00);
  CHECK(parse<float16>("+1").bits() == 0x3C00);
  CHECK(parse<float16>("-1.5").bits() == 0xBE00);
  CHECK(parse<float16>(".5").bits() == 0x3800);
  CHECK(parse<float16>("5.").bits() == 0x4500);
  CHECK(parse<float16>("00012.5000").bits() == 0x4A40);
  CHECK(parse<float16>("1e3").bits() == 0x63D0);
  CHECK(parse<float16>("1E+3").bits() == 0x63D0);
  CHECK(parse<float16>("1000e-3").bits() == 0x3C00);
  CHECK(parse<float16>("0.001e3").bits() == 0x3C00);
  CHECK(parse<float16>("0x1.8p3").bits() == 0x4A00);  // 12
  CHECK(parse<float16>("0X1P-2").bits() == 0x3400);
  CHECK(parse<float16>("-0x.8").bits() == 0xB800);
  CHECK(parse<float16>("0xAbC").bits() == parse<float16>("2748").bits());
  CHECK(parse<float16>("inf").bits() == 0x7C00);
  CHECK(parse<float16>("-INFINITY").bits() == 0xFC00);
  CHECK(parse<float16>("Inf").bits() == 0x7C00);
  CHECK(parse<float16>("nan").bits() == 0x7E00);
  CHECK(parse<float16>("-NaN").bits() == 0xFE00);
  CHECK(parse<float16>("-0").bits() == 0x8000);
  CHECK(parse<float16>("0e999").bits() == 0x0000);
}

TEST_CASE("parse follows the conversion rules of each format at its edges", "[io][parse]") {
  CHECK(parse<float8_e4m3fnuz>("-0").bits() == 0x00);  // no -0
  CHECK(parse<float8_e4m3fn>("inf").bits() == 0x7F);   // no infinity: NaN ...
  CHECK(parse<float8_e4m3fn>("-inf", rounding::nearest_even, overflow::saturate).bits() == 0xFE);  // ... or -max
  CHECK(parse<float8_e4m3fn>("464").bits() == 0x7E);                                               // tie: even 448
  CHECK(parse<float8_e4m3fn>("464.000000000000000000000000000001").bits() == 0x7F);                // NaN
  CHECK(parse<float8_e8m0fnu>("0").bits() == 0xFF);                                                // no zero: NaN
  CHECK(parse<float8_e8m0fnu>("-1").bits() == 0xFF);
  CHECK(parse<float8_e8m0fnu>("-1", rounding::nearest_even, overflow::saturate).bits() == 0x00);
  CHECK(parse<float8_e8m0fnu>("3").bits() == 0x81);                 // tie 1.5 × 2^1 goes up to 4
  CHECK(parse<float8_e8m0fnu>("1e-50").bits() == 0x00);             // below 2^-127: 2^-127 in every mode
  CHECK(parse<float6_e3m2fn>("1e9").bits() == 0x1F);                // no infinity, no NaN: max
  CHECK(parse<float4_e2m1fn>("nan").bits() == 0x7);                 // NaN into a format without NaN: +max, as convert
  CHECK(parse<float16>("65520").bits() == 0x7C00);                  // the tie above max overflows ...
  CHECK(parse<float16>("65519.999999999999999").bits() == 0x7BFF);  // ... just below it does not
  CHECK(parse<float16>("1e9", rounding::toward_zero).bits() == 0x7BFF);
  CHECK(parse<float16>("-1e9", rounding::upward).bits() == 0xFBFF);
  CHECK(parse<float16>("1e9", rounding::to_odd).bits() == 0x7BFF);
  CHECK(parse<float16>("-1e-30").bits() == 0x8000);
  CHECK(parse<float16>("-1e-30", rounding::downward).bits() == 0x8001);
  CHECK(parse<float16>("1e-30", rounding::to_odd).bits() == 0x0001);
}

TEST_CASE("parse rounds the exact decimal, never through double", "[io][parse]") {
  // 1 + 2^-11 is the float16 midpoint between 1 and 1 + 2^-10.  Text 10^-30 above it reads
  // as the midpoint in double, which would round to even (1); the exact value rounds up.
  CHECK(parse<float16>("1.00048828125").bits() == 0x3C00);
  CHECK(parse<float16>("1.000488281250000000000000000001").bits() == 0x3C01);
  CHECK(parse<float16>("1.000488281249999999999999999999").bits() == 0x3C00);
  CHECK(parse<float16>("1.00048828125", rounding::nearest_away).bits() == 0x3C01);
  CHECK(parse<float16>("1.000488281249999999999999999999", rounding::nearest_away).bits() == 0x3C00);
  // A value plus 10^-40: directed modes see that it is not the value.
  CHECK(parse<float16>("1.0000000000000000000000000000000000000001", rounding::upward).bits() == 0x3C01);
  CHECK(parse<float16>("1.0000000000000000000000000000000000000001", rounding::toward_zero).bits() == 0x3C00);
  CHECK(parse<float16>("0.9999999999999999999999999999999999999999", rounding::downward).bits() == 0x3BFF);
  CHECK(parse<float16>("0.9999999999999999999999999999999999999999", rounding::to_odd).bits() == 0x3BFF);
  // bfloat16: the midpoint between 1 and 1 + 2^-7, and a hair above it.
  CHECK(parse<bfloat16>("1.00390625").bits() == 0x3F80);
  CHECK(parse<bfloat16>("1.00390625000000000000000000000000000000000000000001").bits() == 0x3F81);
}

TEST_CASE("parse reads any number of digits", "[io][parse]") {
  const std::string midpoint = "1.00048828125";
  CHECK(parse<float16>(midpoint + std::string(800, '0')).bits() == 0x3C00);
  CHECK(parse<float16>(midpoint + std::string(800, '0') + "1").bits() == 0x3C01);
  CHECK(parse<float16>("0." + std::string(1000, '0') + "1e1001").bits() == 0x3C00);
  CHECK(parse<float16>(std::string(1000, '0') + "1").bits() == 0x3C00);
  CHECK(parse<float16>("1" + std::string(600, '0') + "e-600").bits() == 0x3C00);
  CHECK(parse<float16>("9" + std::string(100000, '9')).bits() == 0x7C00);
  CHECK(parse<float16>("0." + std::string(100000, '0') + "1").bits() == 0x0000);
  CHECK(parse<float16>("0." + std::string(100000, '0') + "1", rounding::upward).bits() == 0x0001);
  CHECK(parse<float16>("0x1.0000000000000000000000000000000000001p0", rounding::upward).bits() == 0x3C01);
}

TEST_CASE("parse handles huge and tiny exponents", "[io][parse]") {
  CHECK(parse<float16>("1e99999").bits() == 0x7C00);
  CHECK(parse<float16>("-1e99999").bits() == 0xFC00);
  CHECK(parse<float16>("1e99999", rounding::toward_zero).bits() == 0x7BFF);
  CHECK(parse<float16>("1e-99999").bits() == 0x0000);
  CHECK(parse<float16>("-1e-99999").bits() == 0x8000);
  CHECK(parse<float16>("1e-99999", rounding::upward).bits() == 0x0001);
  CHECK(parse<float16>("1e99999999999999999999999999999999").bits() == 0x7C00);
  CHECK(parse<float16>("1e-99999999999999999999999999999999").bits() == 0x0000);
  CHECK(parse<float16>("0x1p99999999999").bits() == 0x7C00);
  CHECK(parse<float16>("0x1p-99999999999", rounding::upward).bits() == 0x0001);
  CHECK(parse<bfloat16>("1e-400").bits() == 0x0000);  // below double's range too
  CHECK(parse<bfloat16>("1e-400", rounding::upward).bits() == 0x0001);
  CHECK(parse<bfloat16>("1e400", rounding::downward).bits() == 0x7F7F);
  CHECK(parse<float8_e8m0fnu>("1e-99999", rounding::toward_zero).bits() == 0x00);
  CHECK(parse<float8_e8m0fnu>("1e99999").bits() == 0xFF);
}

TEST_CASE("parse rejects malformed text with a message that quotes it and says what is wrong", "[io][parse]") {
  const auto message = [](const std::string& text) {
    try {
      (void)parse<float16>(text);
    } catch (const parse_error& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  CHECK(message("") == "mixprec::parse<float16>(\"\"): empty text; expected a sign, a digit, '.', \"inf\" or \"nan\"");
  CHECK(message("1e") ==
        "mixprec::parse<float16>(\"1e\"): the text ends early; expected a sign or a digit of the exponent");
  CHECK(message("--1") ==
        "mixprec::parse<float16>(\"--1\"): unexpected '-' at offset 1; expected a digit, '.', \"inf\" or \"nan\"");
  CHECK_THAT(message("1.2.3"), Contains("\"1.2.3\"") && Contains("unexpected '.' at offset 3"));
  CHECK_THAT(message("abc"), Contains("\"abc\"") && Contains("unexpected 'a' at offset 0"));
  CHECK_THAT(message("1 2"),
             Contains("\"1 2\"") && Contains("unexpected ' ' at offset 1") && Contains("the end of the text"));
  CHECK_THAT(message("1.5x"), Contains("unexpected 'x' at offset 3"));
  CHECK_THAT(message(" 1"), Contains("unexpected ' ' at offset 0"));
  CHECK_THAT(message("1e5e5"), Contains("unexpected 'e' at offset 3"));
  CHECK_THAT(message("0x"), Contains("ends early") && Contains("hexadecimal digit"));
  CHECK_THAT(message("0x1p"), Contains("ends early"));
  CHECK_THAT(message("0x.p1"), Contains("unexpected 'p' at offset 3"));
  CHECK_THAT(message("infin"), Contains("ends early") && Contains("\"infinity\""));
  CHECK_THAT(message("nan(1)"), Contains("unexpected '(' at offset 3") && Contains("expected the end of the text"));
  CHECK_THAT(message("infx"), Contains("unexpected 'x' at offset 3; expected 'i' (of \"infinity\") or the end"));
  CHECK_THAT(message("+"), Contains("ends early"));
  CHECK_THAT(message("."), Contains("ends early") && Contains("a digit"));
  CHECK_THAT(message("e5"), Contains("unexpected 'e' at offset 0"));
  CHECK_THAT(message("1,5"), Contains("unexpected ',' at offset 1"));
  CHECK_THAT(message(std::string("1\0", 2)), Contains("unexpected byte \"\\x00\" at offset 1"));
  // Long text is shortened in the message, with its length.
  const std::string long_text = std::string(1000, '1') + "x";
  const std::string long_message = message(long_text);
  CHECK(long_message.size() < 250);
  CHECK_THAT(long_message, Contains("...\" (1001 characters)") && Contains("at offset 1000"));
  // The type is named.
  CHECK_THROWS_WITH(parse<float8_e4m3fn>("?"), Contains("mixprec::parse<float8_e4m3fn>(\"?\")"));
  CHECK_THROWS_AS(parse<bfloat16>("1..2"), parse_error);
  CHECK_THROWS_AS(parse<float8_e8m0fnu>("1 "), mixprec::error);
}

TEST_CASE("operator<< prints the shortest form by default, with width, fill and flags", "[io][stream]") {
  const auto print = [](auto&& manipulate, float16 x) {
    std::ostringstream os;
    manipulate(os);
    os << x;
    return os.str();
  };
  const auto none = [](std::ostream&) {};
  CHECK(print(none, float16(0.1)) == "0.1");
  CHECK(print(none, std::numeric_limits<float16>::infinity()) == "inf");
  CHECK(print([](std::ostream& os) { os << std::setw(8); }, float16(1.5)) == "     1.5");
  CHECK(print([](std::ostream& os) { os << std::setw(8) << std::setfill('*') << std::left; }, float16(-1.5)) ==
        "-1.5****");
  CHECK(print([](std::ostream& os) { os << std::setw(8) << std::setfill('0') << std::internal; }, float16(-1.5)) ==
        "-00001.5");
  CHECK(print([](std::ostream& os) { os << std::setw(2); }, float16(-1.5)) == "-1.5");
  CHECK(print([](std::ostream& os) { os << std::showpos; }, float16(1.5)) == "+1.5");
  CHECK(print([](std::ostream& os) { os << std::uppercase; }, std::numeric_limits<float16>::infinity()) == "INF");
  CHECK(print([](std::ostream& os) { os << std::uppercase; }, float16(-6e-8)) == "-6E-08");
  // With floatfield set, the exact value through double's formatting.
  CHECK(print([](std::ostream& os) { os << std::fixed << std::setprecision(3); }, float16(0.1)) == "0.100");
  CHECK(print([](std::ostream& os) { os << std::fixed << std::setprecision(12); }, float16(0.1)) == "0.099975585938");
  CHECK(print([](std::ostream& os) { os << std::scientific << std::setprecision(2); }, float16(1500.0)) == "1.50e+03");
  CHECK(print([](std::ostream& os) { os << std::hexfloat; }, float16(1.5)) == "0x1.8p+0");
  CHECK(print([](std::ostream& os) { os << std::fixed << std::setprecision(1) << std::setw(7) << std::setfill('_'); },
              float16(2.0)) == "____2.0");
  // The width applies once, as for every formatted output.
  std::ostringstream os;
  os << std::setw(5) << float16(1.0) << float16(2.0);
  CHECK(os.str() == "    12");
  // The global and the stream's locale never change the shortest form.
  std::ostringstream localised;
  localised.imbue(std::locale(std::locale::classic(), new comma_point));
  localised << float16(1.5) << ' ' << std::fixed << std::setprecision(1) << float16(1.5);
  CHECK(localised.str() == "1.5 1,5");
}

TEST_CASE("operator>> reads the longest number and stops at the first other character", "[io][stream]") {
  float16 x(0.0);
  std::istringstream in("1.5,2");
  CHECK(static_cast<bool>(in >> x));
  CHECK(x.bits() == 0x3E00);
  CHECK(in.peek() == ',');
  std::string rest;
  in >> rest;
  CHECK(rest == ",2");

  std::istringstream several("  -2.5e1\n0x1p4 inf nan 7");
  float16 a(0.0), b(0.0), c(0.0), d(0.0), e(0.0);
  several >> a >> b >> c >> d >> e;
  CHECK(static_cast<bool>(several));
  CHECK(static_cast<double>(a) == -25.0);
  CHECK(static_cast<double>(b) == 16.0);
  CHECK(c.bits() == 0x7C00);
  CHECK(d.bits() == 0x7E00);
  CHECK(static_cast<double>(e) == 7.0);
  CHECK(several.eof());

  // Characters read past the longest whole number are put back.
  const auto read = [](const std::string& text, float16& value) {
    std::istringstream is(text);
    is >> value;
    std::string left;
    is.clear(is.rdstate() & ~std::ios_base::failbit);
    std::getline(is, left);
    return left;
  };
  float16 y(0.0);
  CHECK(read("1e+x", y) == "e+x");
  CHECK(y.bits() == 0x3C00);
  CHECK(read("0x", y) == "x");
  CHECK(y.bits() == 0x0000);
  CHECK(read("2.5e", y) == "e");
  CHECK(y.bits() == 0x4100);
  CHECK(read("infinite", y) == "inite");
  CHECK(y.bits() == 0x7C00);
  CHECK(read("0x1p-", y) == "p-");
  CHECK(y.bits() == 0x3C00);
}

TEST_CASE("operator>> without a number sets failbit and leaves the value unchanged", "[io][stream]") {
  for (const char* text : {"abc", "", "   ", "-", ".", "+x", "-.e1", "in", "nax"}) {
    float16 x(3.0);
    std::istringstream in(text);
    in >> x;
    INFO("input \"" << text << "\"");
    CHECK(in.fail());
    CHECK(!in.bad());
    CHECK(x.bits() == 0x4200);
  }
  // Nothing is consumed when the first character cannot start a number.
  float16 x(3.0);
  std::istringstream in("abc");
  in >> x;
  in.clear();
  CHECK(in.peek() == 'a');
  // With skipws off, leading space is not a number.
  std::istringstream spaced(" 1");
  spaced >> std::noskipws >> x;
  CHECK(spaced.fail());
  CHECK(x.bits() == 0x4200);
  // End of input after a number: eofbit, not failbit.
  std::istringstream ends("1.5");
  ends >> x;
  CHECK(ends.eof());
  CHECK(!ends.fail());
  CHECK(x.bits() == 0x3E00);
}

TEMPLATE_TEST_CASE("operator<< and operator>> round-trip every code", "[io][stream]", MIXPREC_ALL_TYPES) {
  using T = TestType;
  using traits = format_traits<typename T::format>;
  std::stringstream s;
  for (unsigned code = 0; code < mixprec_test::code_count<T>(); code += 7) {
    s << T::from_bits(static_cast<typename T::storage_type>(code)) << ' ';
  }
  for (unsigned code = 0; code < mixprec_test::code_count<T>(); code += 7) {
    T x;
    REQUIRE(static_cast<bool>(s >> x));
    if (traits::is_nan(code)) {
      CHECK(traits::is_nan(x.bits()));
    } else {
      CHECK(x.bits() == code);
    }
  }
}
