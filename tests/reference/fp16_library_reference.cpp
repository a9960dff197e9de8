// mixprec against the FP16 library (Marat Dukhan's <fp16.h>): fp16_ieee_from_fp32_value (round
// to nearest even, overflow to infinity) and the decoders fp16_ieee_to_fp32_value and
// fp16_ieee_to_fp32_bits.
//
//   fp16_library_reference [--stride N] [--threads N] [--only TEXT]
//
// See reference_compare.hpp for what is compared and how disagreements are classified;
// docs/references.md for the results.
#include <fp16.h>

#include "reference_compare.hpp"

int main(int argc, char** argv) {
  using namespace mixprec;
  mixprec_reference::runner run("fp16_library_reference", argc, argv);
  if (run.usage_error()) return 2;
  run.from_float<float16>("FP16 fp16_ieee_from_fp32_value", rounding::nearest_even, overflow::non_finite,
                          [](float x) { return static_cast<std::uint32_t>(fp16_ieee_from_fp32_value(x)); });
  run.to_float<float16>("FP16 fp16_ieee_to_fp32_value",
                        [](std::uint16_t code) { return fp16_ieee_to_fp32_value(code); });
  run.to_float<float16>("FP16 fp16_ieee_to_fp32_bits",
                        [](std::uint16_t code) { return mixprec_reference::float_of(fp16_ieee_to_fp32_bits(code)); });
  return run.finish();
}
