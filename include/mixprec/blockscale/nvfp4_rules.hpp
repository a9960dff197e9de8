// NVFP4's scale rules as plain float32 functions (docs/blockscale.md, "NVFP4").  An NVFP4 value is
// an e2m1 code q, one ue4m3 scale s per block of 16 and one float per tensor; every operation
// below is one float32 operation, rounded once, in the order the source does it.
//
//   transformer_engine  (TE's reference quantiser, transformer_engine/pytorch/custom_recipes/
//                       reference_nvfp4.py, _quantize_blockwise_reference, which TE's exact test
//                       compares its kernels with; the per-tensor scale is the kernels'
//                       compute_global_encode_scaling_factor_FP4, common/cast/nvfp4/core_nvfp4.cuh)
//     S_enc = fl(2688 / amax), at most FLT_MAX; 1 where amax is 0 or S_enc is 0 (amax = inf)
//     S_dec = fl(1 / S_enc)                           the per-tensor decode scale
//     s     = ue4m3_RNE_satfinite(min(fl(block_amax · fl(S_enc · fl(1/6))), FLT_MAX))
//     e     = s == 0 ? 0 : min(fl(1 / fl(s · S_dec)), FLT_MAX)
//     q     = e2m1(clamp(fl(x · e), -6, 6))           value: fl(fl(q · s) · S_dec)
//   torchao             (torchao/prototype/mx_formats/nvfp4_tensor.py, per_tensor_amax_to_scale and
//                       _nvfp4_quantize with a per-tensor scale; dequantisation get_hp_scales)
//     p     = fl(amax / 2688)                         the per-tensor decode scale
//     s     = ue4m3_RNE(clamp(fl(fl(block_amax / 6) / p), 2^-6, 448))
//     q     = e2m1(clamp(fl(x / fl(p · s)), -6, 6))   value: fl(q · fl(p · s))
//
// 2688 = 448 · 6 (e4m3's max times e2m1's), exact in float.  NaN anywhere makes the amax NaN, then
// the per-tensor scale and every block scale NaN (ue4m3 0x7F); codes of NaN-scale blocks are 0.
// docs/decisions.md ("NVFP4") has every special case and where the sources differ.
#pragma once

#include <cfloat>
#include <cstddef>
#include <cstdint>

#include "../config.hpp"
#include "../convert.hpp"
#include "../detail/bits.hpp"
#include "../types.hpp"

namespace mixprec::blockscale {

constexpr std::size_t nvfp4_block_size = 16;

enum class nvfp4_rule { transformer_engine, torchao };

constexpr const char* to_string(nvfp4_rule r) noexcept {
  return r == nvfp4_rule::transformer_engine ? "transformer_engine" : "torchao";
}

namespace detail {
// e2m1's largest value times e4m3's: 6 × 448.
constexpr float nvfp4_range = 2688.0f;
constexpr std::uint8_t ue4m3_nan_code = 0x7F;

MIXPREC_HOST_DEVICE inline bool is_nan(float x) noexcept { return x != x; }
// min(x, FLT_MAX) that keeps a NaN (torch.min does; fminf would drop it).
MIXPREC_HOST_DEVICE inline float at_most_float_max(float x) noexcept { return x > FLT_MAX ? FLT_MAX : x; }
}  // namespace detail

// |x| as bits: the integer maximum of these over a block is the bits of its amax, +inf if an
// element is infinite and a NaN if one is NaN (a NaN's bits are above infinity's), as torch.amax.
MIXPREC_HOST_DEVICE inline std::uint32_t nvfp4_magnitude_bits(float x) noexcept {
  return mixprec::detail::bit_cast<std::uint32_t>(x) & 0x7FFF'FFFFu;
}

// ---- transformer_engine ----

// S_enc from the tensor's amax.  NaN stays NaN (the Python reference; the kernels' fminf would
// turn it into FLT_MAX and hide it).
MIXPREC_HOST_DEVICE inline float te_nvfp4_encode_scale(float amax) noexcept {
  if (detail::is_nan(amax)) return amax;
  const float scale = detail::at_most_float_max(detail::nvfp4_range / amax);
  return amax == 0.0f || scale == 0.0f ? 1.0f : scale;
}

// fl(S_enc · fl(1/6)): the block amax's multiplier, the reciprocal of 6 folded in as the reference
// and the kernels' default path do.
MIXPREC_HOST_DEVICE inline float te_nvfp4_block_multiplier(float encode_scale) noexcept {
  constexpr float reciprocal_of_6 = 1.0f / 6.0f;
  return encode_scale * reciprocal_of_6;
}

// The block's stored scale: RNE to ue4m3, saturating at 448 (torch.clamp to ±448 then the cast;
// __nv_fp8_e4m3's satfinite conversion in the kernels); NaN gives the NaN code.
MIXPREC_HOST_DEVICE inline float te_nvfp4_unrounded_scale(float block_amax, float block_multiplier) noexcept {
  return detail::at_most_float_max(block_amax * block_multiplier);
}
MIXPREC_HOST_DEVICE inline float8_ue4m3 te_nvfp4_block_scale(float block_amax, float block_multiplier) noexcept {
  return convert<float8_ue4m3>(te_nvfp4_unrounded_scale(block_amax, block_multiplier), rounding::nearest_even,
                               overflow::saturate);
}

// The elements' multiplier e from the stored scale and S_dec: 0 for a zero scale (the kernels;
// the Python reference's min(1/0, FLT_MAX) gives the same values, other codes), NaN for NaN.
// (The float overload takes the scale's value: the quantiser decodes its scales in bulk.)
MIXPREC_HOST_DEVICE inline float te_nvfp4_element_multiplier(float scale_value, float decode_scale) noexcept {
  // The reciprocal is taken for a zero scale too (+inf, then discarded): without a branch before
  // the division the quantiser's loop over a batch of scales vectorises.
  const float multiplier = detail::at_most_float_max(1.0f / (scale_value * decode_scale));
  return scale_value == 0.0f ? 0.0f : multiplier;
}
MIXPREC_HOST_DEVICE inline float te_nvfp4_element_multiplier(float8_ue4m3 scale, float decode_scale) noexcept {
  return te_nvfp4_element_multiplier(static_cast<float>(scale), decode_scale);
}

// ---- torchao ----

// p = fl(amax / 2688) (per_tensor_amax_to_scale: amax / (F8E4M3_MAX * F4_E2M1_MAX)).
MIXPREC_HOST_DEVICE inline float torchao_nvfp4_tensor_scale(float amax) noexcept { return amax / detail::nvfp4_range; }

// The block's stored scale: clamp to [2^-6 (e4m3's smallest normal, torchao's E4M3_EPS), 448],
// then RNE; a NaN (0 / 0 for a zero block of a zero tensor, inf / inf, NaN) stays NaN.
MIXPREC_HOST_DEVICE inline float torchao_nvfp4_unrounded_scale(float block_amax, float tensor_scale) noexcept {
  constexpr float smallest_normal = 0.015625f;  // 2^-6
  float scaled = block_amax / 6.0f / tensor_scale;
  if (scaled < smallest_normal) scaled = smallest_normal;  // comparisons with NaN are false:
  if (scaled > 448.0f) scaled = 448.0f;                    // NaN passes through, as torch.clamp
  return scaled;
}
MIXPREC_HOST_DEVICE inline float8_ue4m3 torchao_nvfp4_block_scale(float block_amax, float tensor_scale) noexcept {
  return convert<float8_ue4m3>(torchao_nvfp4_unrounded_scale(block_amax, tensor_scale), rounding::nearest_even,
                               overflow::saturate);
}

// fl(p · s): what the elements are divided by, and what the codes are multiplied by to decode.
MIXPREC_HOST_DEVICE inline float torchao_nvfp4_block_divisor(float scale_value, float tensor_scale) noexcept {
  return tensor_scale * scale_value;
}
MIXPREC_HOST_DEVICE inline float torchao_nvfp4_block_divisor(float8_ue4m3 scale, float tensor_scale) noexcept {
  return torchao_nvfp4_block_divisor(static_cast<float>(scale), tensor_scale);
}

// ---- elements ----

// The e2m1 code of a scaled element, clamped to ±6 first (both references clamp; a NaN cannot get
// here, see the callers): nearest-even, or stochastic with the k-bit rule of docs/blockscale.md,
// "round away iff floor(fraction × 2^k) + (random mod 2^k) >= 2^k".  `word` is the element's
// random word with its k bits at the top (block_stochastic_rounding::word / aligned), which makes
// convert_stochastic's 32-bit rule this one exactly.
MIXPREC_HOST_DEVICE inline std::uint8_t nvfp4_element_code(float scaled, bool stochastic, std::uint32_t word) noexcept {
  if (scaled > 6.0f) scaled = 6.0f;
  if (scaled < -6.0f) scaled = -6.0f;
  if (!stochastic) return convert<float4_e2m1fn>(scaled, rounding::nearest_even, overflow::saturate).bits();
  return convert_stochastic<float4_e2m1fn>(scaled, word, overflow::saturate).bits();
}

}  // namespace mixprec::blockscale
