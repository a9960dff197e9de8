// The narrow integers (intn.hpp, intn_convert.hpp): ml_dtypes' construction and arithmetic on
// every code and pair of codes, numeric_limits, and the rounded conversions against
// intn_oracle.hpp on every breakpoint, in every mode.
#include <mixprec/intn.hpp>
#include <mixprec/intn_convert.hpp>
#include <mixprec/intn_io.hpp>
#include <mixprec/io.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <type_traits>
#include <vector>

#include "intn_oracle.hpp"

using namespace mixprec;

namespace {

template <class F>
void for_each_intn(F f) {
  f(int4{});
  f(uint4{});
  f(int2{});
  f(uint2{});
  f(int1{});
  f(uint1{});
}

constexpr rounding every_rounding[] = {rounding::nearest_even, rounding::nearest_away, rounding::toward_zero,
                                       rounding::upward,       rounding::downward,     rounding::to_odd,
                                       rounding::nearest_zero};

}  // namespace

TEST_CASE("intn types are one byte, trivial, with ml_dtypes' ranges", "[intn]") {
  static_assert(sizeof(int4) == 1 && std::is_trivially_copyable<int4>::value && std::is_standard_layout<int4>::value);
  static_assert(std::is_trivial<uint1>::value);
  static_assert(int4::min_value == -8 && int4::max_value == 7 && uint4::max_value == 15);
  static_assert(int2::min_value == -2 && int2::max_value == 1 && uint2::max_value == 3);
  static_assert(int1::min_value == -1 && int1::max_value == 0 && uint1::max_value == 1);
  // constexpr construction, arithmetic and conversion
  static_assert(int4(7) + int4(1) == int4(-8));
  static_assert(static_cast<float>(int4(-3)) == -3.0f);
  static_assert(convert<int4>(2.5f) == 2 && convert<int4>(3.5, rounding::nearest_even) == 4);
  static_assert(int4{}.bits() == 0);
  CHECK(detail::intn_name<4, false>() == "uint4");
}

TEST_CASE("every code decodes to its two's complement or unsigned value, exactly in float and double", "[intn]") {
  for_each_intn([](auto tag) {
    using T = decltype(tag);
    for (unsigned code = 0; code < (1u << T::bits_per_value); ++code) {
      const T x = T::from_bits(static_cast<std::uint8_t>(code));
      const int expected = intn_oracle::wrap(code, T::bits_per_value, T::is_signed);
      CHECK(x.value() == expected);
      CHECK(static_cast<float>(x) == static_cast<float>(expected));
      CHECK(static_cast<double>(x) == static_cast<double>(expected));
      CHECK(static_cast<int>(x) == expected);
      CHECK(x.bits() == code);
      CHECK(T(expected) == x);  // construction from the value gives the code back
    }
  });
}

TEST_CASE("from_bits rejects codes with bits above the width, naming the code and the limit", "[intn]") {
  CHECK_THROWS_WITH(int4::from_bits(0x1F),
                    "int4::from_bits: 31 has bits set above bit 3 (the type's codes are 0 to 15)");
  CHECK_THROWS_AS(uint1::from_bits(2), invalid_encoding);
}

TEST_CASE("arithmetic on every pair of codes follows ml_dtypes: wrap modulo 2^N, truncating / and %", "[intn]") {
  for_each_intn([](auto tag) {
    using T = decltype(tag);
    constexpr int bits = T::bits_per_value;
    constexpr bool s = T::is_signed;
    const auto w = [](long long v) { return intn_oracle::wrap(v, bits, s); };
    for (int a = T::min_value; a <= T::max_value; ++a) {
      const T x(a);
      CHECK((-x).value() == w(-a));
      CHECK((~x).value() == w(~a));
      CHECK((+x).value() == a);
      T inc = x, dec = x;
      CHECK((++inc).value() == w(a + 1));
      CHECK((dec--).value() == a);
      CHECK(dec.value() == w(a - 1));
      for (int amount = 0; amount < 10; ++amount) {
        CHECK((x << amount).value() == w(static_cast<long long>(a) << amount));
        CHECK((x >> amount).value() == w(a >> amount));
      }
      for (int b = T::min_value; b <= T::max_value; ++b) {
        const T y(b);
        INFO(a << " and " << b);
        CHECK((x + y).value() == w(a + b));
        CHECK((x - y).value() == w(a - b));
        CHECK((x * y).value() == w(a * b));
        CHECK((x / y).value() == (b == 0 ? 0 : w(a / b)));
        CHECK((x % y).value() == (b == 0 ? 0 : w(a % b)));
        CHECK((x & y).value() == w(a & b));
        CHECK((x | y).value() == w(a | b));
        CHECK((x ^ y).value() == w(a ^ b));
        CHECK((x == y) == (a == b));
        CHECK((x != y) == (a != b));
        CHECK((x < y) == (a < b));
        CHECK((x <= y) == (a <= b));
        CHECK((x > y) == (a > b));
        CHECK((x >= y) == (a >= b));
        CHECK((x < b) == (a < b));
        CHECK((a >= y) == (a >= b));
        T z = x;
        z += y;
        CHECK(z == x + y);
        z = x;
        z /= y;
        CHECK(z == x / y);
      }
    }
  });
  CHECK(int4(-8) / int4(-1) == int4(-8));  // 8 wraps
  CHECK(uint4(15) + uint4(1) == uint4(0));
}

TEST_CASE("construction from integers wraps and from floats is ml_dtypes' truncating cast", "[intn]") {
  for_each_intn([](auto tag) {
    using T = decltype(tag);
    constexpr int bits = T::bits_per_value;
    for (long long v : {0LL, 1LL, -1LL, 7LL, 8LL, 9LL, -9LL, 16LL, 255LL, 256LL, -129LL, 1LL << 40, -(1LL << 62)}) {
      CHECK(T(v).value() == intn_oracle::wrap(v, bits, T::is_signed));
    }
    CHECK(T(std::uint64_t{~0ull}).value() == intn_oracle::wrap(-1, bits, T::is_signed));
    const double inputs[] = {0.0,  -0.0, 0.4,      0.5,       0.6,          1.5,          2.5,           -0.5,
                             -1.5, -2.7, 7.9,      8.0,       9.0,          15.5,         16.0,          17.0,
                             -8.0, -9.0, -100.0,   1e10,      2147483647.0, 2147483647.5, -2147483648.0, -2147483648.5,
                             3e9,  -3e9, INFINITY, -INFINITY, NAN,          1e-300};
    for (double x : inputs) {
      INFO(x);
      CHECK(T(x).value() == intn_oracle::ml_dtypes_cast(x, bits, T::is_signed));
      const auto f = static_cast<float>(x);
      CHECK(T(f).value() == intn_oracle::ml_dtypes_cast(f, bits, T::is_signed));
      CHECK(T(float16(f)).value() == intn_oracle::ml_dtypes_cast(static_cast<double>(float16(f)), bits, T::is_signed));
    }
  });
}

TEST_CASE("numeric_limits follow ml_dtypes' intN_numeric_limits_base", "[intn]") {
  using L = std::numeric_limits<int4>;
  static_assert(L::is_specialized && L::is_integer && L::is_exact && L::is_signed && L::is_bounded);
  static_assert(!L::has_infinity && !L::has_quiet_NaN && !L::is_iec559 && L::is_modulo);
  static_assert(L::digits == 3 && std::numeric_limits<uint4>::digits == 4 && std::numeric_limits<int1>::digits == 0);
  static_assert(L::digits10 == 0 && L::radix == 2);
  static_assert(L::min() == int4(-8) && L::lowest() == int4(-8) && L::max() == int4(7));
  static_assert(std::numeric_limits<uint2>::max() == uint2(3) && std::numeric_limits<uint2>::min() == uint2(0));
  static_assert(!std::numeric_limits<uint2>::is_signed);
}

TEST_CASE("rounded conversion: every mode, every breakpoint k and k + 1/2 and their neighbours, clamped", "[intn]") {
  for_each_intn([](auto tag) {
    using T = decltype(tag);
    constexpr int bits = T::bits_per_value;
    std::vector<double> inputs = {INFINITY, -INFINITY, NAN, -NAN, 1e300, -1e300, 0x1p-1074, -0x1p-1074, 255.5, 256.0};
    for (int k2 = -48; k2 <= 48; ++k2) {
      const double b = k2 / 2.0;
      inputs.push_back(b);
      for (double d = b, up = b, i = 0; i < 3; ++i) {
        d = std::nextafter(d, -1e9);
        up = std::nextafter(up, 1e9);
        inputs.push_back(d);
        inputs.push_back(up);
        inputs.push_back(std::nextafter(static_cast<float>(b), static_cast<float>(d) - 1.0f));
        inputs.push_back(std::nextafter(static_cast<float>(b), static_cast<float>(up) + 1.0f));
      }
    }
    for (double x : inputs) {
      for (rounding r : every_rounding) {
        for (overflow o : {overflow::non_finite, overflow::saturate}) {
          INFO(x << ' ' << to_string(r) << ' ' << to_string(o));
          CHECK(convert<T>(x, r, o).value() == intn_oracle::converted(x, r, bits, T::is_signed));
          const auto f = static_cast<float>(x);
          CHECK(convert<T>(f, r, o).value() == intn_oracle::converted(f, r, bits, T::is_signed));
        }
      }
    }
  });
}

TEST_CASE("rounded conversion from every minifloat code, from integers and from other intn", "[intn]") {
  for (unsigned code = 0; code < 256; ++code) {
    const auto x = float8_e4m3fn::from_bits(static_cast<std::uint8_t>(code));
    const auto h = float4_e2m1fn::from_bits(static_cast<std::uint8_t>(code & 0xF));
    for (rounding r : every_rounding) {
      CHECK(convert<int4>(x, r).value() == intn_oracle::converted(static_cast<double>(x), r, 4, true));
      CHECK(convert<uint2>(h, r).value() == intn_oracle::converted(static_cast<double>(h), r, 2, false));
    }
  }
  CHECK(convert<int4>(100) == 7);
  CHECK(convert<int4>(-100LL) == -8);
  CHECK(convert<uint4>(-1) == 0);
  CHECK(convert<uint4>(~0ull) == 15);
  CHECK(convert<int2>(int4(-8)) == -2);
  CHECK(convert<uint1>(int4(5)) == 1);
  // 5 lies halfway between e2m1's 4 and 6: ties to even give 4, upward 6; 7 is beyond its max
  CHECK(static_cast<float>(convert<float4_e2m1fn>(int4(5))) == 4.0f);
  CHECK(static_cast<float>(convert<float4_e2m1fn>(int4(5), rounding::upward)) == 6.0f);
  CHECK(static_cast<float>(convert<float4_e2m1fn>(int4(7))) == 6.0f);
  CHECK(convert<float>(uint4(15)) == 15.0f);
}

TEST_CASE("stochastic rounding moves up for exactly floor(frac * 2^32) random words", "[intn]") {
  // Away from zero iff random >= 2^32 - floor(frac * 2^32) (round_pack.hpp's carry): check the
  // threshold word and its neighbour for a sweep of fractions, and the equal-probability rule.
  for (int step = 1; step < 64; ++step) {
    const float frac = static_cast<float>(step) / 64.0f + 0x1p-20f;
    const auto fixed = static_cast<std::uint64_t>(static_cast<double>(frac) * 0x1p32);
    const auto threshold = static_cast<std::uint32_t>((std::uint64_t{1} << 32) - fixed);
    for (float whole : {0.0f, 2.0f, -3.0f}) {
      const float x = whole < 0 ? whole - frac : whole + frac;
      const int toward = static_cast<int>(whole), away = whole < 0 ? toward - 1 : toward + 1;
      INFO(x);
      CHECK(convert_stochastic<int4>(x, threshold).value() == away);
      CHECK(convert_stochastic<int4>(x, threshold - 1).value() == toward);
      CHECK(convert_stochastic<int4>(x, 0u).value() == toward);
      CHECK(convert_stochastic<int4>(x, ~0u).value() == away);
      CHECK(convert_stochastic<int4>(static_cast<double>(x), threshold).value() == away);
      CHECK(convert_stochastic<int4>(x, 0x7FFFFFFFu, overflow::saturate, stochastic_rule::equal_probability).value() ==
            toward);
      CHECK(convert_stochastic<int4>(x, 0x80000000u, overflow::saturate, stochastic_rule::equal_probability).value() ==
            away);
    }
  }
  CHECK(convert_stochastic<int4>(3.0f, ~0u) == 3);  // integers never move
  CHECK(convert_stochastic<int4>(7.5f, ~0u) == 7);  // then the clamp
  CHECK(convert_stochastic<uint4>(-0.5f, ~0u) == 0);
  CHECK(convert_stochastic<int4>(NAN, ~0u) == 0);
}

TEST_CASE("text: << writes the value, parse reads integers and names the range it breaks", "[intn][io]") {
  std::ostringstream os;
  os << int4(-8) << ' ' << uint4(15) << ' ' << int1(-1);
  CHECK(os.str() == "-8 15 -1");
  for_each_intn([](auto tag) {
    using T = decltype(tag);
    for (int v = T::min_value; v <= T::max_value; ++v) CHECK(parse<T>(std::to_string(v)) == T(v));
  });
  CHECK(parse<int4>("+7") == 7);
  CHECK(parse<int4>("-0") == 0);
  CHECK_THROWS_WITH(parse<int4>("8"), "mixprec::parse<int4>(\"8\"): 8 is outside int4's range [-8, 7]");
  CHECK_THROWS_WITH(parse<uint2>("-1"), "mixprec::parse<uint2>(\"-1\"): -1 is outside uint2's range [0, 3]");
  CHECK_THROWS_WITH(parse<int4>("123456789012345678901234"),
                    "mixprec::parse<int4>(\"123456789012345678901234\"): 123456789012345678901234 is outside int4's "
                    "range [-8, 7]");
  CHECK_THROWS_WITH(parse<int4>("2.5"), "mixprec::parse<int4>(\"2.5\"): unexpected '.' at offset 1; expected a digit");
  CHECK_THROWS_AS(parse<int4>(""), parse_error);
  CHECK_THROWS_AS(parse<int4>("-"), parse_error);
  CHECK(parse<float8_e4m3fn>("448") == float8_e4m3fn(448.0f));  // the minifloats' parse is unchanged
}
