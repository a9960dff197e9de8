// The code of the README's first example, compiled and run by the tests so that the README
// cannot drift from what the library does.
#include <mixprec/mixprec.hpp>

#include <cstdint>
#include <iostream>
#include <limits>

int main() {
  using namespace mixprec;

  bfloat16 w(0.1f);  // rounds to nearest even
  // 1e9 is far above e4m3fn's range: saturation gives its max, 448
  float8_e4m3fn q = convert<float8_e4m3fn>(1e9f, rounding::nearest_even, overflow::saturate);
  // a double is rounded once, never through float: 1 + 2^-10 (through float: 1)
  float16 h = float16(1.0 + 0x1p-11 + 0x1p-40);
  float16 s = float16(1.5f) + float16(2.25f);  // arithmetic rounds once: 3.75
  // 1.1 lies 0.4 of the way from 1.0 to 1.25: it rounds up for 40% of uniform random words
  std::uint32_t random_bits = 0x9999999Au;
  float8_e5m2 r = convert_stochastic<float8_e5m2>(1.1f, random_bits);
  std::cout << w << ' ' << static_cast<float>(q) << ' ' << h << ' ' << s << ' ' << r << ' '
            << std::numeric_limits<float8_e4m3fn>::max() << '\n';
  // prints: 0.1 448 1.001 3.75 1.2 450
  // (<< writes the shortest decimal that reads back to the same value: in float8_e5m2 "1.2"
  // reads back as 1.25, in float8_e4m3fn "450" as 448; static_cast<float> shows exact values.)
}
