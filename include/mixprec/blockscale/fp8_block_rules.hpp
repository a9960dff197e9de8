// The scale rules of fp8 block scaling (1×128 and 128×128 blocks) as plain float32 functions:
// a block's amax, the scale it is quantised with and the decode scale kept beside it.  Every
// operation is one float32 operation, rounded once, in the order the source does it
// (docs/blockscale.md, "FP8 block scaling"; docs/decisions.md, section 13, where they differ).
//
//   transformer_engine            TE's kernels (transformer_engine/common/transpose/
//                                 quantize_transpose_{vector,square}_blockwise.cu, through
//                                 compute_scale_from_types in recipe/recipe_common.cuh):
//     amax  = fmaxf over |x| (a NaN element is skipped)
//     scale = compute_scale_from_amax(amax, fp8_max, pow2, eps, value_for_inf)
//             (scaling/fp8/scale_rules.hpp: 1 for amax 0, inf or NaN; value_for_inf when
//             fp8_max / amax overflows; pow2 clears the mantissa bits)
//     q     = fp8_satfinite(x · scale)          decode scale: 1 / scale
//   transformer_engine_reference  the Python reference TE's exact tests compare the kernels with
//                                 (tests/pytorch/references/quantize_scale_calc.py,
//                                 scale_from_amax_tensor; blockwise_quantizer_reference.py):
//     amax  = torch.amax over |x| (a NaN element makes it NaN), then max(amax, eps)
//     scale = fp8_max / amax, value_for_inf where that is inf; pow2: 2^(frexp exponent − 1),
//             then 0 where amax is inf; finally 1 where amax is 0
//     q     = fp8(clamp(x · scale, ±fp8_max))  decode scale: 1 / scale
//   deepseek_v3                   DeepSeek-V3's released kernels (inference/kernel.py,
//                                 act_quant_kernel and weight_quant_kernel):
//     amax  = tl.max over |x| (a NaN element is skipped, as fmaxf)
//     s     = amax / fp8_max                    (no epsilon, no power of two; s is the decode scale)
//     q     = fp8_satfinite(x / s)              (a block of zeros gives 0 / 0 = NaN codes)
//
// value_for_inf is the largest finite value of the *input* type (TE's TypeInfo<IType>):
// FLT_MAX = (2 − 2^-23) · 2^127 for float input, (2 − 2^-7) · 2^127 = 0x1.FEp127 for bfloat16.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../config.hpp"
#include "../detail/bits.hpp"
#include "../scaling/fp8/format.hpp"
#include "../scaling/fp8/scale_rules.hpp"
#include "../types.hpp"

namespace mixprec::blockscale {

constexpr std::size_t fp8_block_size = 128;

enum class fp8_block_rule { transformer_engine, transformer_engine_reference, deepseek_v3 };

constexpr const char* to_string(fp8_block_rule r) noexcept {
  switch (r) {
    case fp8_block_rule::transformer_engine:
      return "transformer_engine";
    case fp8_block_rule::transformer_engine_reference:
      return "transformer_engine_reference";
    case fp8_block_rule::deepseek_v3:
      return "deepseek_v3";
  }
  return "invalid fp8_block_rule";
}

// The largest finite value of an input type, TE's value_for_inf.
template <class In>
MIXPREC_HOST_DEVICE constexpr float value_for_inf() noexcept {
  static_assert(std::is_same<In, float>::value || std::is_same<In, bfloat16>::value,
                "fp8 block scaling reads float or bfloat16 input");
  // bfloat16 0'11111110'1111111 = (1 + 127 · 2^-7) · 2^127
  return std::is_same<In, float>::value ? mixprec::detail::float_max : 0x1.FEp127f;
}

namespace detail {

// One step of an amax that skips NaNs, as fmaxf(amax, |x|) does (TE's kernels, Triton's tl.max).
inline float amax_skipping_nan(float amax, float x) noexcept {
  const float a = std::fabs(x);
  return a > amax ? a : amax;
}

// One step of an amax that a NaN poisons, as torch.amax does.
inline float amax_keeping_nan(float amax, float x) noexcept {
  const float a = std::fabs(x);
  if (mixprec::detail::is_nan_float(amax) || mixprec::detail::is_nan_float(a))
    return mixprec::detail::bit_cast<float>(0x7FC0'0000u);
  return a > amax ? a : amax;
}

// 2^(e − 1) for the exponent e that std::frexp gives: the largest power of two <= a finite,
// positive, normal x; 0.5 for x = 0 and for NaN (frexp stores exponent 0 for them in glibc, which
// PyTorch's CPU frexp calls).  On the device CUDA's frexpf and ldexpf, exact as the host's (0 and
// ±inf give exponent 0 there too), so that gpu::fp8_block_quantize calls this rule.
MIXPREC_HOST_DEVICE inline float frexp_power_of_two(float x) noexcept {
  int exponent = 0;
#if MIXPREC_DEVICE_PASS
  (void)frexpf(x, &exponent);
#else
  (void)std::frexp(x, &exponent);
#endif
  if (mixprec::detail::is_nan_float(x)) exponent = 0;
#if MIXPREC_DEVICE_PASS
  return ldexpf(1.0f, exponent - 1);
#else
  return std::ldexp(1.0f, exponent - 1);
#endif
}

}  // namespace detail

// transformer_engine: the scale the kernels multiply by.
MIXPREC_HOST_DEVICE inline float te_block_scale(float amax, float fp8_max, bool power_2_scales, float epsilon,
                                                float inf_value) noexcept {
  return compute_scale_from_amax(amax, fp8_max, power_2_scales, epsilon, inf_value);
}

// transformer_engine_reference: scale_from_amax_tensor, step by step.
MIXPREC_HOST_DEVICE inline float te_reference_block_scale(float amax, float fp8_max, bool power_2_scales, float epsilon,
                                                          float inf_value) noexcept {
  if (!mixprec::detail::is_nan_float(amax) && amax < epsilon) amax = epsilon;  // torch.max(amax, eps) keeps NaN
  float scale = mixprec::detail::divide_nearest(fp8_max, amax);
  if (mixprec::detail::is_inf_float(scale)) scale = inf_value;  // scale == inf (never -inf: amax >= 0)
  if (power_2_scales) {
    scale = detail::frexp_power_of_two(scale);
    if (mixprec::detail::is_inf_float(amax)) scale = 0.0f;
  }
  if (amax == 0.0f) scale = 1.0f;
  return scale;
}

// deepseek_v3: the decode scale s = amax / fp8_max (also the value kept with the block).
MIXPREC_HOST_DEVICE inline float deepseek_block_scale(float amax, float fp8_max) noexcept {
  return mixprec::detail::divide_nearest(amax, fp8_max);
}

}  // namespace mixprec::blockscale
