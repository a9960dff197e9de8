// mixprec against Eigen's scalar types: the Eigen::half and Eigen::bfloat16 constructors from
// float (round to nearest even) and their conversions back to float.
//
//   eigen_reference [--stride N] [--threads N] [--only TEXT]
//
// See reference_compare.hpp for what is compared and how disagreements are classified;
// docs/references.md for the results.
#include <Eigen/Core>

#include "reference_compare.hpp"

int main(int argc, char** argv) {
  using namespace mixprec;
  mixprec_reference::runner run("eigen_reference", argc, argv);
  if (run.usage_error()) return 2;
  run.from_float<float16>("Eigen::half(float)", rounding::nearest_even, overflow::non_finite, [](float x) {
    return static_cast<std::uint32_t>(Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(x)));
  });
  run.from_float<bfloat16>("Eigen::bfloat16(float)", rounding::nearest_even, overflow::non_finite, [](float x) {
    return static_cast<std::uint32_t>(Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(x)));
  });
  run.to_float<float16>("Eigen::half to float", [](std::uint16_t code) {
    return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(code));
  });
  run.to_float<bfloat16>("Eigen::bfloat16 to float", [](std::uint16_t code) {
    return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(code));
  });
  return run.finish();
}
