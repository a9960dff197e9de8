// The OCP Microscaling (MX) formats v1.0: element types, the block size, and the rules that
// pick a block's shared scale.  Plain functions of integers and floats, usable on the host
// and, under nvcc, in device code (a CUDA quantise kernel can call them per block).
//
// An MX block is k = 32 elements P_i of one element type and one shared scale X, an e8m0 power
// of two; the value of element i is X × P_i (OCP MX v1.0 §5).  The concrete formats (§5.3):
//
//   MXFP8  float8_e4m3fn (emax_elem 8, max 448), float8_e5m2 (emax_elem 15, max 57344)
//   MXFP6  float6_e3m2fn (emax_elem 4, max 28),  float6_e2m3fn (emax_elem 2, max 7.5)
//   MXFP4  float4_e2m1fn (emax_elem 2, max 6)
//   MXINT8 mxint8_element (emax_elem 0, max 127/64; mx/int8_element.hpp)
//
// emax_elem is the exponent of the element type's largest normal (format_traits::max_exponent;
// 0 for MXINT8, whose values k/64 lie below 2).
//
// The scale of a block from its amax = max |V_i|, four rules (mx_scale_rule; the names of
// torchao's ScaleCalculationMode, torchao/prototype/mx_formats/config.py, in brackets):
//
//   ocp       [FLOOR] OCP MX v1.0 §6.3, Algorithm 1: shared_exp = floor(log2(amax)) - emax_elem,
//             X = 2^shared_exp, then each P_i = quantize_to_element_format(V_i / X) with
//             saturation.  shared_exp is clamped below at -127 (e8m0's smallest value, as the
//             authors' reference microsoft/microxcaling, mx/mx_ops.py _quantize_mx, clamps it);
//             a block of zeros takes the smallest scale, 2^-127.  The largest element may then
//             exceed the element's max (V/X up to 2^(emax_elem+1)) and saturates to it.
//   round_up  [RCEIL] Transformer Engine's MXFP8 rule (common/util/ptx_arch_spec.cuh,
//             float_to_e8m0, on amax × Quantized_Limits<T>::max_norm_rcp,
//             common/cast/mxfp8/quantize_mxfp8.cuh): X = 2^ceil(log2(amax / max_elem)), the
//             smallest power of two with V/X <= max, so nothing saturates; max_norm_rcp is
//             float(1.0 / max_elem) (utils.cuh).  torchao's RCEIL (mx_tensor.py, _to_mx_rceil)
//             computes the same code for every finite amax.
//   ceil      [CEIL] torchao's to_mx: the exponent field of amax, less 127, plus 1 when its
//             mantissa field is not 0, minus emax_elem: ceil(log2(amax)) - emax_elem for a
//             normal amax (V/X <= 2^emax_elem, below the element's max: nothing saturates).
//   even      [EVEN] torchao's to_mx: amax rounded to the element's mantissa bits m first
//             (2^(22 - m) added to its bits, the mantissa field then cleared: halves up), then
//             the ocp rule on the result; the top element saturates only by less than its
//             rounding would move it.
//
// For ceil and even as torchao computes them: the exponent field reads -127 for a subnormal
// amax (so ceil gives -126 for every non-zero subnormal, and even's rounding may carry a
// subnormal into field 1); the exponent is clamped to [-127, 128] and 128 becomes code 255, the
// NaN scale (reached by MXINT8 under ceil for amax above 2^127, never by the float elements);
// and the finiteness test is of the rounded amax, so under even an amax that rounds up to 2^128
// takes the NaN scale.
//
// A block holding an infinity or a NaN gets the NaN scale (e8m0 0xFF) under every rule: its
// amax has no logarithm (log2(inf) = inf exceeds e8m0's range, log2(NaN) is NaN; microxcaling
// and torchao set such scales to NaN), and a NaN scale makes every element of the block NaN
// (§5.2).  Transformer Engine instead gives an inf amax the scale 2^127 and ignores NaNs in the
// amax (docs/fp8.md compares them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../config.hpp"
#include "../detail/bits.hpp"
#include "../format.hpp"
#include "../types.hpp"
#include "int8_element.hpp"

namespace mixprec {

constexpr std::size_t mx_block_size = 32;

// mixprec's names (ocp and round_up predate ceil and even): to_string gives them, torchao_name
// torchao's ScaleCalculationMode member.
enum class mx_scale_rule { ocp, round_up, ceil, even };

constexpr bool is_mx_scale_rule(mx_scale_rule r) noexcept {
  return r == mx_scale_rule::ocp || r == mx_scale_rule::round_up || r == mx_scale_rule::ceil ||
         r == mx_scale_rule::even;
}

constexpr const char* to_string(mx_scale_rule r) noexcept {
  switch (r) {
    case mx_scale_rule::ocp:
      return "ocp";
    case mx_scale_rule::round_up:
      return "round_up";
    case mx_scale_rule::ceil:
      return "ceil";
    case mx_scale_rule::even:
      return "even";
  }
  return "unknown";
}

constexpr const char* torchao_name(mx_scale_rule r) noexcept {
  switch (r) {
    case mx_scale_rule::ocp:
      return "FLOOR";
    case mx_scale_rule::round_up:
      return "RCEIL";
    case mx_scale_rule::ceil:
      return "CEIL";
    case mx_scale_rule::even:
      return "EVEN";
  }
  return "unknown";
}

// The e8m0 code of the NaN scale, and of X = 1.
constexpr std::uint8_t mx_nan_scale_code = 0xFF;
constexpr std::uint8_t mx_unit_scale_code = 127;

template <class T>
struct is_mx_element
    : std::integral_constant<bool, std::is_same<T, float8_e4m3fn>::value || std::is_same<T, float8_e5m2>::value ||
                                       std::is_same<T, float6_e3m2fn>::value || std::is_same<T, float6_e2m3fn>::value ||
                                       std::is_same<T, float4_e2m1fn>::value ||
                                       std::is_same<T, mxint8_element>::value> {};

// What the MX layer needs of an element type, derived from its format.
template <class T>
struct mx_element {
  static_assert(is_mx_element<T>::value,
                "MX elements are float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, "
                "float4_e2m1fn or mxint8_element");
  using traits = format_traits<typename T::format>;
  static constexpr int bits = traits::total_bits;
  static constexpr int emax = traits::max_exponent;  // emax_elem
  // The mantissa bits m that the even rule rounds amax to.
  static constexpr int mantissa_bits = traits::mantissa_bits;
  // Every value is a multiple of 2^min_quantum_exponent and has at most significant_bits bits.
  static constexpr int min_quantum_exponent = traits::min_quantum_exponent;
  static constexpr int significant_bits = traits::precision;
  // Bytes of one block's packed elements: 32 for fp8, 24 for fp6, 16 for fp4.
  static constexpr std::size_t block_bytes = mx_block_size * static_cast<std::size_t>(bits) / 8;
  // The largest finite value: the significand of the largest finite code × 2^emax_elem.
  static constexpr double max_value = static_cast<double>((traits::max_finite_magnitude & traits::mantissa_mask) |
                                                          (std::uint64_t{1} << traits::mantissa_bits)) /
                                      static_cast<double>(std::uint64_t{1} << traits::mantissa_bits) *
                                      static_cast<double>(std::uint64_t{1} << emax);
  // Transformer Engine's Quantized_Limits<T>::max_norm_rcp: 1.0 / max_norm in double, then float.
  static constexpr float max_value_reciprocal = static_cast<float>(1.0 / max_value);
  // Whether a code is ±0 (its magnitude bits clear).
  static constexpr bool is_zero_code(unsigned code) noexcept { return (code & ((1u << (bits - 1)) - 1u)) == 0; }
  // Whether the bulk kernels' vector encode and decode take the type (bulk/kernels.inl).
  static constexpr bool vector_kernels = true;
};

// MXINT8: k/64 for k in [-128, 127].  Its top binade [1, 2) holds 6 bits after the point (the
// even rule's m); 128 and 127 need 1 and 7 significant bits.  Encoded and decoded by the scalar
// kernels of mx/quantize.hpp.
template <>
struct mx_element<mxint8_element> {
  static constexpr int bits = 8;
  static constexpr int emax = 0;
  static constexpr int mantissa_bits = mxint8_element::fraction_bits;
  static constexpr int min_quantum_exponent = -mxint8_element::fraction_bits;
  static constexpr int significant_bits = 7;
  static constexpr std::size_t block_bytes = mx_block_size;
  static constexpr double max_value = 127.0 / 64.0;
  static constexpr float max_value_reciprocal = static_cast<float>(1.0 / max_value);
  static constexpr bool is_zero_code(unsigned code) noexcept { return (code & 0xFFu) == 0; }
  static constexpr bool vector_kernels = false;
};

// The rules that read the exponent field of amax (ocp, ceil, even; torchao's to_mx for FLOOR,
// CEIL and EVEN, mx_tensor.py), as an e8m0 code: amax given as float bits with the sign clear
// (NaN bits above infinity's), m the element's mantissa bits for even.  The exponent is the field
// minus 127 (-127 for subnormals and 0), minus emax_elem, clamped to [-127, 128] and biased by
// 127; 128 gives 0xFF, the NaN scale, as a non-finite (rounded) amax does.  For ocp, a normal
// amax's field minus 127 is floor(log2(amax)) (§6.3 Algorithm 1); a subnormal amax or 0 has
// floor(log2) <= -127, which the clamp takes to code 0 as well.  The largest ocp code, for
// FLT_MAX (field 254), is 254 - emax_elem: within e8m0's range.
MIXPREC_HOST_DEVICE constexpr std::uint8_t mx_scale_code_from_exponent(std::uint32_t amax_bits, int emax_elem,
                                                                       int mantissa_bits, mx_scale_rule rule) noexcept {
  if (amax_bits >= 0x7F80'0000u) return mx_nan_scale_code;
  if (rule == mx_scale_rule::even) {
    amax_bits = (amax_bits + (std::uint32_t{1} << (22 - mantissa_bits))) & 0xFF80'0000u;
    if (amax_bits >= 0x7F80'0000u) return mx_nan_scale_code;  // rounded up to 2^128 (torchao: inf, NaN scale)
  }
  int e = static_cast<int>(amax_bits >> 23) - 127 - emax_elem;
  if (rule == mx_scale_rule::ceil && (amax_bits & 0x7F'FFFFu) != 0) ++e;
  e = e < -127 ? -127 : e > 128 ? 128 : e;
  return static_cast<std::uint8_t>(e + 127);
}

// OCP MX v1.0 §6.3 Algorithm 1, lines 1-2, as an e8m0 code (see above).
MIXPREC_HOST_DEVICE constexpr std::uint8_t mx_scale_code_ocp(std::uint32_t amax_bits, int emax_elem) noexcept {
  return mx_scale_code_from_exponent(amax_bits, emax_elem, 0, mx_scale_rule::ocp);
}

// Transformer Engine's float_to_e8m0 (ptx_arch_spec.cuh, the path for GPUs before Blackwell;
// Blackwell's cvt.rp.satfinite.ue8m0x2.f32 gives the same for every finite input): the e8m0 code
// of val rounded up to a power of two, 0xFF for NaN, 0xFE (2^127) for infinity and saturation,
// 0 (2^-127) for 0 and everything up to 2^-127.
MIXPREC_HOST_DEVICE inline std::uint8_t transformer_engine_float_to_e8m0(float val) noexcept {
  const std::uint32_t bits = detail::bit_cast<std::uint32_t>(val);
  if ((bits & 0x7FFF'FFFFu) > 0x7F80'0000u) return 0xFF;
  if ((bits & 0x7FFF'FFFFu) == 0x7F80'0000u) return 0xFE;
  if (val == 0.0f) return 0x00;
  auto exponent = static_cast<std::uint8_t>(bits >> 23);  // the sign is 0 for an amax
  const std::uint32_t mantissa = bits & 0x7F'FFFFu;
  if ((mantissa > 0 && exponent != 0xFE) && !(exponent == 0 && mantissa <= 0x40'0000u)) ++exponent;
  return exponent;
}

// The round_up rule: Transformer Engine's code of amax × max_norm_rcp, except that a block with
// an infinity or a NaN takes the NaN scale (see above).
MIXPREC_HOST_DEVICE inline std::uint8_t mx_scale_code_round_up(std::uint32_t amax_bits,
                                                               float max_value_reciprocal) noexcept {
  if (amax_bits >= 0x7F80'0000u) return mx_nan_scale_code;
  return transformer_engine_float_to_e8m0(detail::bit_cast<float>(amax_bits) * max_value_reciprocal);
}

template <class T>
MIXPREC_HOST_DEVICE inline std::uint8_t mx_scale_code(std::uint32_t amax_bits, mx_scale_rule rule) noexcept {
  if (rule == mx_scale_rule::round_up) {
    return mx_scale_code_round_up(amax_bits, mx_element<T>::max_value_reciprocal);
  }
  return mx_scale_code_from_exponent(amax_bits, mx_element<T>::emax, mx_element<T>::mantissa_bits, rule);
}

// X = 2^(code - 127) as a float (2^-127 is a float subnormal, exact); NaN for 0xFF.
MIXPREC_HOST_DEVICE inline float mx_scale_value(std::uint8_t code) noexcept {
  if (code == mx_nan_scale_code) return detail::bit_cast<float>(0x7FC0'0000u);
  return code == 0 ? detail::bit_cast<float>(0x0040'0000u) : detail::bit_cast<float>(std::uint32_t{code} << 23);
}

// 1 / X = 2^(127 - code) as a float, the multiplier of quantisation (as Transformer Engine's
// exp2f_rcp, ptx.cuh): 2^-127 for code 254 is a float subnormal, exact.  Not for 0xFF.
MIXPREC_HOST_DEVICE inline float mx_scale_reciprocal(std::uint8_t code) noexcept {
  return code == 254 ? detail::bit_cast<float>(0x0040'0000u) : detail::bit_cast<float>(std::uint32_t(254 - code) << 23);
}

}  // namespace mixprec
