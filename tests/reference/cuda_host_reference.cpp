// mixprec against CUDA's own conversions (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h, cuda_fp6.h,
// cuda_fp4.h), compiled by the C++ compiler as host code: every float -> T mode CUDA offers,
// mapped to the (rounding, overflow) pair of mixprec it implements, and every T -> float decode.
//
//   cuda_host_reference [--stride N] [--threads N] [--only TEXT]
//
// See reference_compare.hpp for what is compared and how disagreements are classified;
// docs/references.md for the results.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#if defined(__has_include)
#if __has_include(<cuda_fp4.h>)
#include <cuda_fp4.h>
#endif
#endif

#include "reference_compare.hpp"

namespace {

using namespace mixprec;
using mixprec_reference::runner;

std::uint32_t code_of(__half h) { return static_cast<__half_raw>(h).x; }
std::uint32_t code_of(__nv_bfloat16 b) { return static_cast<__nv_bfloat16_raw>(b).x; }

template <class Native>
Native with_code(std::uint8_t code) {
  Native native;
  native.__x = code;
  return native;
}

void fp16_and_bf16(runner& run) {
  // IEEE 754 rounding-direction suffixes: rn nearest-even, rz toward zero, rd down, ru up.
  run.from_float<float16>("CUDA __float2half_rn", rounding::nearest_even, overflow::non_finite,
                          [](float x) { return code_of(__float2half_rn(x)); });
  run.from_float<float16>("CUDA __float2half_rz", rounding::toward_zero, overflow::non_finite,
                          [](float x) { return code_of(__float2half_rz(x)); });
  run.from_float<float16>("CUDA __float2half_rd", rounding::downward, overflow::non_finite,
                          [](float x) { return code_of(__float2half_rd(x)); });
  run.from_float<float16>("CUDA __float2half_ru", rounding::upward, overflow::non_finite,
                          [](float x) { return code_of(__float2half_ru(x)); });
  run.from_float<bfloat16>("CUDA __float2bfloat16_rn", rounding::nearest_even, overflow::non_finite,
                           [](float x) { return code_of(__float2bfloat16_rn(x)); });
  run.from_float<bfloat16>("CUDA __float2bfloat16_rz", rounding::toward_zero, overflow::non_finite,
                           [](float x) { return code_of(__float2bfloat16_rz(x)); });
  run.from_float<bfloat16>("CUDA __float2bfloat16_rd", rounding::downward, overflow::non_finite,
                           [](float x) { return code_of(__float2bfloat16_rd(x)); });
  run.from_float<bfloat16>("CUDA __float2bfloat16_ru", rounding::upward, overflow::non_finite,
                           [](float x) { return code_of(__float2bfloat16_ru(x)); });
  run.to_float<float16>("CUDA __half2float", [](std::uint16_t code) {
    __half_raw raw;
    raw.x = code;
    return __half2float(__half(raw));
  });
  run.to_float<bfloat16>("CUDA __bfloat162float", [](std::uint16_t code) {
    __nv_bfloat16_raw raw;
    raw.x = code;
    return __bfloat162float(__nv_bfloat16(raw));
  });
}

void fp8(runner& run) {
  // Round to nearest even always; __NV_SATFINITE clamps to ±max (inf included), __NV_NOSAT
  // gives NaN (e4m3) or inf (e5m2) beyond the range.
  run.from_float<float8_e4m3fn>("CUDA __nv_cvt_float_to_fp8 E4M3 SATFINITE", rounding::nearest_even, overflow::saturate,
                                [](float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); });
  run.from_float<float8_e4m3fn>("CUDA __nv_cvt_float_to_fp8 E4M3 NOSAT", rounding::nearest_even, overflow::non_finite,
                                [](float x) { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3); });
  run.from_float<float8_e5m2>("CUDA __nv_cvt_float_to_fp8 E5M2 SATFINITE", rounding::nearest_even, overflow::saturate,
                              [](float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); });
  run.from_float<float8_e5m2>("CUDA __nv_cvt_float_to_fp8 E5M2 NOSAT", rounding::nearest_even, overflow::non_finite,
                              [](float x) { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2); });
  run.to_float<float8_e4m3fn>("CUDA __nv_fp8_e4m3 to float",
                              [](std::uint8_t code) { return static_cast<float>(with_code<__nv_fp8_e4m3>(code)); });
  run.to_float<float8_e5m2>("CUDA __nv_fp8_e5m2 to float",
                            [](std::uint8_t code) { return static_cast<float>(with_code<__nv_fp8_e5m2>(code)); });
}

#if defined(__CUDA_FP6_TYPES_EXIST__) && defined(__CUDA_FP4_TYPES_EXIST__)
void mx_types(runner& run) {
  // fp6 and fp4 accept cudaRoundNearest (ties to even) and cudaRoundZero and always saturate
  // to ±max; NaN gives +max.
  run.from_float<float6_e2m3fn>("CUDA __nv_cvt_float_to_fp6 E2M3 cudaRoundNearest", rounding::nearest_even,
                                overflow::saturate,
                                [](float x) { return __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundNearest); });
  run.from_float<float6_e2m3fn>("CUDA __nv_cvt_float_to_fp6 E2M3 cudaRoundZero", rounding::toward_zero,
                                overflow::saturate,
                                [](float x) { return __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundZero); });
  run.from_float<float6_e3m2fn>("CUDA __nv_cvt_float_to_fp6 E3M2 cudaRoundNearest", rounding::nearest_even,
                                overflow::saturate,
                                [](float x) { return __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundNearest); });
  run.from_float<float6_e3m2fn>("CUDA __nv_cvt_float_to_fp6 E3M2 cudaRoundZero", rounding::toward_zero,
                                overflow::saturate,
                                [](float x) { return __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundZero); });
  run.from_float<float4_e2m1fn>("CUDA __nv_cvt_float_to_fp4 E2M1 cudaRoundNearest", rounding::nearest_even,
                                overflow::saturate,
                                [](float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest); });
  run.from_float<float4_e2m1fn>("CUDA __nv_cvt_float_to_fp4 E2M1 cudaRoundZero", rounding::toward_zero,
                                overflow::saturate,
                                [](float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundZero); });
  // e8m0 accepts cudaRoundZero and cudaRoundPosInf (which rounds |x| up); __NV_SATFINITE clamps
  // to [2^-127, 2^127].
  run.from_float<float8_e8m0fnu>("CUDA __nv_cvt_float_to_e8m0 cudaRoundZero SATFINITE", rounding::toward_zero,
                                 overflow::saturate,
                                 [](float x) { return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundZero); });
  run.from_float<float8_e8m0fnu>("CUDA __nv_cvt_float_to_e8m0 cudaRoundZero NOSAT", rounding::toward_zero,
                                 overflow::non_finite,
                                 [](float x) { return __nv_cvt_float_to_e8m0(x, __NV_NOSAT, cudaRoundZero); });
  run.from_float<float8_e8m0fnu>("CUDA __nv_cvt_float_to_e8m0 cudaRoundPosInf SATFINITE", rounding::upward,
                                 overflow::saturate,
                                 [](float x) { return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf); });
  run.from_float<float8_e8m0fnu>("CUDA __nv_cvt_float_to_e8m0 cudaRoundPosInf NOSAT", rounding::upward,
                                 overflow::non_finite,
                                 [](float x) { return __nv_cvt_float_to_e8m0(x, __NV_NOSAT, cudaRoundPosInf); });
  run.to_float<float6_e2m3fn>("CUDA __nv_fp6_e2m3 to float",
                              [](std::uint8_t code) { return static_cast<float>(with_code<__nv_fp6_e2m3>(code)); });
  run.to_float<float6_e3m2fn>("CUDA __nv_fp6_e3m2 to float",
                              [](std::uint8_t code) { return static_cast<float>(with_code<__nv_fp6_e3m2>(code)); });
  run.to_float<float4_e2m1fn>("CUDA __nv_fp4_e2m1 to float",
                              [](std::uint8_t code) { return static_cast<float>(with_code<__nv_fp4_e2m1>(code)); });
  run.to_float<float8_e8m0fnu>("CUDA __nv_fp8_e8m0 to float",
                               [](std::uint8_t code) { return static_cast<float>(with_code<__nv_fp8_e8m0>(code)); });
}
#endif

}  // namespace

int main(int argc, char** argv) {
  runner run("cuda_host_reference", argc, argv);
  if (run.usage_error()) return 2;
  fp16_and_bf16(run);
  fp8(run);
#if defined(__CUDA_FP6_TYPES_EXIST__) && defined(__CUDA_FP4_TYPES_EXIST__)
  mx_types(run);
#else
  std::printf("this CUDA toolkit has no fp6 / fp4 / e8m0 types (they came with CUDA 12.8)\n");
#endif
  return run.finish();
}
