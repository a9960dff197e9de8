// A consumer of the installed (or add_subdirectory'd) library: the umbrella header must compile
// and work with nothing but the mixprec::mixprec target (and, built a second time, through
// mixprec::compiled, whose convert_n kernels come from the static library).
#include <mixprec/mixprec.hpp>

#include <cstdio>

int main() {
  const mixprec::bfloat16 x(3.0f);
  const mixprec::float8_e4m3fn y =
      mixprec::convert<mixprec::float8_e4m3fn>(1e9f, mixprec::rounding::nearest_even, mixprec::overflow::saturate);
  const float in[3] = {1.0f, 3.0f, 1e9f};
  mixprec::float8_e4m3fn out[3];
  mixprec::convert_n(in, 3, out, mixprec::rounding::nearest_even, mixprec::overflow::saturate);
  const bool ok = static_cast<float>(x * x) == 9.0f && y.bits() == 0x7E && out[0].bits() == 0x38 &&
                  out[1].bits() == 0x44 && out[2].bits() == 0x7E;
  std::printf("consumer: bf16 3*3 = %g, e4m3 saturated = 0x%02X, convert_n = 0x%02X 0x%02X 0x%02X: %s\n",
              static_cast<double>(x * x), y.bits(), out[0].bits(), out[1].bits(), out[2].bits(), ok ? "OK" : "WRONG");
  return ok ? 0 : 1;
}
