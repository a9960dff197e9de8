// Compile-time probe: the umbrella header and one bulk conversion (float -> bfloat16).
#include <mixprec/mixprec.hpp>

#include <vector>

int main() {
  const std::vector<float> x(16, 1.0f);
  std::vector<mixprec::bfloat16> y(16);
  mixprec::convert_n(x.data(), x.size(), y.data());
  return y[0].bits() == 0x3F80 ? 0 : 1;
}
