// A consumer of the installed (or add_subdirectory'd) library: the umbrella header must compile
// and work with nothing but the mixprec::mixprec target.
#include <mixprec/mixprec.hpp>

#include <cstdio>

int main() {
  const mixprec::bfloat16 x(3.0f);
  const mixprec::float8_e4m3fn y =
      mixprec::convert<mixprec::float8_e4m3fn>(1e9f, mixprec::rounding::nearest_even, mixprec::overflow::saturate);
  const bool ok = static_cast<float>(x * x) == 9.0f && y.bits() == 0x7E;
  std::printf("consumer: bf16 3*3 = %g, e4m3 saturated = 0x%02X: %s\n", static_cast<double>(x * x), y.bits(),
              ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
