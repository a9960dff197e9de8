// The scale rules of the fp8 recipes, transcribed from Transformer Engine (TE) as plain
// functions of floats, usable on the host and, under nvcc, in device code (a CUDA quantise kernel
// can call them per tensor).  Every comparison and division is the one TE makes, in float, in
// the same order; tests/fp8/scale_rules_test.cpp checks them against literal transcriptions.
//
//   delayed_scale_from_amax          TE's fused update (delayed_scaling.cu,
//                                    amax_and_scale_update_impl::kernel_bulk), used for the
//                                    built-in amax algorithms "max" and "most_recent"
//   delayed_scale_from_amax_unfused  TE's Python update (transformer_engine/pytorch,
//                                    _default_sf_compute), used when amax_compute_algo is a
//                                    callable
//   compute_scale_from_amax          current scaling (recipe/recipe_common.cuh,
//                                    compute_scale_from_amax)
//
// Division is IEEE round-to-nearest: on the device __fdiv_rn, as recipe_common.cuh uses so that
// --use_fast_math cannot change the result.
#pragma once

#include <cstdint>

#include "../../config.hpp"
#include "../../detail/bits.hpp"
#include "../../detail/constexpr_math.hpp"

namespace mixprec {
namespace detail {

// std::numeric_limits<float>::max(), (2 - 2^-23) × 2^127.
constexpr float float_max = 0x1.fffffep127f;

MIXPREC_HOST_DEVICE inline bool is_nan_float(float x) noexcept {
  return (bit_cast<std::uint32_t>(x) & 0x7FFF'FFFFu) > 0x7F80'0000u;
}
MIXPREC_HOST_DEVICE inline bool is_inf_float(float x) noexcept {
  return (bit_cast<std::uint32_t>(x) & 0x7FFF'FFFFu) == 0x7F80'0000u;
}
MIXPREC_HOST_DEVICE inline bool is_finite_float(float x) noexcept {
  return (bit_cast<std::uint32_t>(x) & 0x7F80'0000u) != 0x7F80'0000u;
}

MIXPREC_HOST_DEVICE inline float divide_nearest(float a, float b) noexcept {
#if MIXPREC_DEVICE_PASS
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace detail

// Delayed scaling, TE's fused rule (kernel_bulk, "Update scale"): fp8_max / amax scaled down by
// 2^margin when amax is finite and positive, else the previous scale (amax 0: the tensor saw
// no data; inf or NaN: nothing sensible to derive); an infinite result (amax so small that the
// quotient overflows float) becomes FLT_MAX.  scaled_max = fp8_max × 2^-margin
// (delayed_scaled_max below), computed once as TE does on the host.
MIXPREC_HOST_DEVICE inline float delayed_scale_from_amax(float amax, float previous_scale, float scaled_max) noexcept {
  float scale =
      detail::is_finite_float(amax) && amax > 0.0f ? detail::divide_nearest(scaled_max, amax) : previous_scale;
  if (detail::is_inf_float(scale)) scale = detail::float_max;
  return scale;
}

// TE's host computation of scaled_max (amax_and_scale_update_after_reduction):
// fp8_dtype_max(dtype) * std::pow(2.f, -margin).  For the integer margins a recipe takes,
// 2^-margin is exact and so is the product (delayed_scaling::validate keeps it a normal float).
inline float delayed_scaled_max(float fp8_max, int margin) noexcept {
  return fp8_max * static_cast<float>(detail::power_of_two(-margin));
}

// Delayed scaling, TE's Python rule (_default_sf_compute, used with a user amax function):
//   sf = (fp8_max / amax) / (2 ** margin)
//   sf = where(amax > 0, sf, scale);  sf = where(isfinite(amax), sf, scale)
//   sf = where(isinf(sf), FLT_MAX, sf)
// two float divisions as written (docs/fp8.md: how PyTorch may evaluate them instead).
// two_to_margin = 2^margin, exact.
MIXPREC_HOST_DEVICE inline float delayed_scale_from_amax_unfused(float amax, float previous_scale, float fp8_max,
                                                                 float two_to_margin) noexcept {
  float sf = detail::divide_nearest(detail::divide_nearest(fp8_max, amax), two_to_margin);
  if (!(amax > 0.0f)) sf = previous_scale;
  if (!detail::is_finite_float(amax)) sf = previous_scale;
  if (detail::is_inf_float(sf)) sf = detail::float_max;
  return sf;
}

// Current scaling (recipe_common.cuh, compute_scale_from_amax): amax is first raised to
// epsilon; 0, inf and NaN give scale 1; otherwise max_fp8 / amax, with value_for_inf when that
// overflows (TE passes FLT_MAX for float inputs), and with force_pow_2_scales the mantissa bits
// cleared (rounded down to a power of two; FLT_MAX becomes 2^127).
MIXPREC_HOST_DEVICE inline float compute_scale_from_amax(float amax, float max_fp8, bool force_pow_2_scales,
                                                         float epsilon, float value_for_inf) noexcept {
  if (amax < epsilon) amax = epsilon;  // false for a NaN amax, which the next test catches
  if (detail::is_inf_float(amax) || amax == 0.0f || detail::is_nan_float(amax)) return 1.0f;
  float scale = detail::divide_nearest(max_fp8, amax);
  if (detail::is_inf_float(scale)) scale = value_for_inf;
  if (force_pow_2_scales) scale = detail::bit_cast<float>(detail::bit_cast<std::uint32_t>(scale) & 0xFF80'0000u);
  return scale;
}

}  // namespace mixprec
