// What turns a CUDA conversion instruction's result into mixprec's result, bit for bit.
//
// The device conversions (cuda/convert.cuh) run a `cvt` instruction and pass its raw result
// through one of the functions below.  They are plain __host__ __device__ C++ so that the
// argument that "instruction + fix-up == the generic conversion" can be checked on a CPU:
// tests/cuda/instruction_fixups_test.cpp feeds them a host model of each instruction (CUDA's
// own host implementation of the same conversion, cuda_fp16.hpp / cuda_bf16.hpp / cuda_fp8.hpp
// / cuda_fp6.hpp / cuda_fp4.hpp, plus the PTX ISA's special-value rules) and compares with
// detail::convert_bits over every float.  That models the hardware; it does not run it (the GPU
// tests in tests/cuda/gpu do, on a machine that has one).
//
// Each fix-up decides from the *input* (NaN, |x| past the overflow threshold, x <= 0), never
// from the instruction's special outputs, so the NaN bits an instruction produces (PTX ISA,
// cvt: "the result is NaN", canonical 0x7FFF for f16/bf16) do not matter.  docs/cuda.md has the
// table of instructions, their differences and these fixes.
#pragma once

#include <cstdint>

#include "../../detail/convert_bits.hpp"
#include "../../types.hpp"

namespace mixprec::gpu::detail {

using mixprec::detail::bit_cast;
using mixprec::detail::round_mode;
using mixprec::detail::special_codes;

constexpr std::uint32_t float_sign_bit = 0x8000'0000u;
constexpr std::uint32_t float_magnitude_bits = 0x7FFF'FFFFu;
constexpr std::uint32_t float_infinity_bits = 0x7F80'0000u;

MIXPREC_HOST_DEVICE constexpr bool float_bits_are_nan(std::uint32_t bits) noexcept {
  return (bits & float_magnitude_bits) > float_infinity_bits;
}

template <class Format>
using code_t = typename format_traits<Format>::storage_type;

// 1. NaN in: the instruction gives some NaN (f16/bf16: 0x7FFF; e4m3/e5m2: 0x7F, sign dropped).
//    mixprec gives the format's canonical quiet NaN with the input's sign (decisions.md §1).
template <class To>
MIXPREC_HOST_DEVICE constexpr code_t<To> fix_nan(std::uint32_t x_bits, code_t<To> instruction) noexcept {
  if (!float_bits_are_nan(x_bits)) return instruction;
  return special_codes<To>::template nan<ieee_binary32>((x_bits & float_sign_bit) != 0, x_bits);
}

// 2. overflow::saturate from an instruction without .satfinite (an IEEE-style target): the only
//    infinities it produces are the ones saturate turns into ±max (±inf in, or a finite value
//    rounded past max), so ±inf out becomes ±max.  Apply after fix_nan: a NaN code is not inf.
template <class To>
MIXPREC_HOST_DEVICE constexpr code_t<To> saturate_infinity(code_t<To> code) noexcept {
  using traits = format_traits<To>;
  static_assert(traits::has_infinity, "only IEEE-style formats have an infinity to saturate");
  if ((code & traits::magnitude_mask) != traits::infinity_magnitude) return code;
  return static_cast<code_t<To>>((code & traits::sign_mask) | traits::max_finite_magnitude);
}

// The smallest float magnitude (as bits) that round-to-nearest-even sends past To's largest
// finite value: max + half an ulp when max's last bit is odd (the tie goes up, as in every
// IEEE-style format, whose max ends in all ones), one float above that when it is even (e4m3fn:
// max 448 = 0'1111'110, the tie 464 goes to 448, and 480 would be the NaN code).
template <class To>
struct nearest_overflow {
  using traits = format_traits<To>;
  static_assert(traits::mantissa_bits < 23 && traits::max_exponent <= 127, "max and its half ulp are floats");
  static constexpr std::uint32_t max_bits = static_cast<std::uint32_t>(mixprec::detail::convert_bits<To, ieee_binary32>(
      traits::max_finite_magnitude, round_mode::nearest_even, overflow::non_finite, 0));
  static constexpr std::uint32_t midpoint_bits = max_bits + (std::uint32_t{1} << (22 - traits::mantissa_bits));
  // With no mantissa bits (e8m0) the last kept bit is the hidden one, which is odd.
  static constexpr bool max_is_odd = traits::mantissa_bits == 0 || (traits::max_finite_magnitude & 1) != 0;
  static constexpr std::uint32_t first_overflowing = max_is_odd ? midpoint_bits : midpoint_bits + 1;
};

// 3. overflow::non_finite from an instruction that only saturates (cvt.rn.satfinite.e4m3x2.f32,
//    .e5m2x2: PTX gives sign-preserved MAX_NORM for |x| > MAX_NORM and for ±inf).  Where
//    nearest-even would overflow, non_finite wants inf (e5m2) or NaN (e4m3fn), with the sign.
template <class To>
MIXPREC_HOST_DEVICE constexpr code_t<To> unsaturate(std::uint32_t x_bits, code_t<To> instruction) noexcept {
  const std::uint32_t magnitude = x_bits & float_magnitude_bits;
  if (magnitude < nearest_overflow<To>::first_overflowing || magnitude > float_infinity_bits) return instruction;
  return special_codes<To>::non_finite((x_bits & float_sign_bit) != 0);
}

// 4. e8m0 (cvt.rz / cvt.rp {.satfinite}.ue8m0x2.f32, sm_100 family): the instruction rounds |x|
//    (the sign is ignored) and gives 2^-127 for ±0; mixprec's e8m0 has no zero and no negatives
//    (decisions.md §4): NaN gives NaN, zero and negative inputs (-inf included) give NaN under
//    non_finite and 2^-127 under saturate.  Positive inputs, +inf included, agree.
MIXPREC_HOST_DEVICE constexpr std::uint8_t fix_e8m0(std::uint32_t x_bits, std::uint8_t instruction,
                                                    overflow o) noexcept {
  using codes = special_codes<formats::float8_e8m0fnu>;
  if (float_bits_are_nan(x_bits))
    return static_cast<std::uint8_t>(format_traits<formats::float8_e8m0fnu>::quiet_nan_code);
  if ((x_bits & float_sign_bit) != 0 || x_bits == 0) return codes::out_of_domain(o);
  return instruction;
}

// 5. Decoding (code -> float) through the instructions (cvt.rn.f16x2.e4m3x2 / .e5m2x2, then
//    cvt.f32.f16): exact for every number; a NaN code gives mixprec's float NaN (payload kept
//    and quieted for IEEE-style codes, decisions.md §1) instead of the instruction's.
template <class From>
MIXPREC_HOST_DEVICE constexpr std::uint32_t fix_decoded_nan(code_t<From> code, std::uint32_t instruction) noexcept {
  if (!format_traits<From>::is_nan(code)) return instruction;
  return mixprec::detail::convert_bits<From, ieee_binary32>(code, round_mode::nearest_even, overflow::non_finite, 0);
}

// 6. A float product as the host computes it.  CUDA's mul.f32 returns the canonical NaN
//    0x7FFFFFFF for any NaN operand; x86 (SSE/AVX) and AArch64 return the first NaN operand,
//    quieted, with its sign and payload.  The element-wise kernels (quantise, dequantise,
//    unscale, scale) multiply with this fix so that a NaN keeps its sign into the conversion
//    (a negative NaN becomes a negative e4m3/bf16 NaN on both sides).  An invalid product
//    (inf × 0) gives x86's default NaN, 0xFFC00000 ("QNaN floating-point indefinite", Intel SDM
//    vol. 1 §4.8.3.7); AArch64 hosts give 0x7FC00000 there, the one case where the device follows
//    x86 rather than the host it runs beside.  With two NaN operands the host's result depends on
//    the instruction's operand order; the kernels' second operand is a scale, never NaN in a scaler.
MIXPREC_HOST_DEVICE constexpr std::uint32_t fix_product_nan(std::uint32_t a_bits, std::uint32_t b_bits,
                                                            std::uint32_t product_bits) noexcept {
  constexpr std::uint32_t quiet_bit = 0x0040'0000u;
  constexpr std::uint32_t x86_default_nan = 0xFFC0'0000u;
  if (float_bits_are_nan(a_bits)) return a_bits | quiet_bit;
  if (float_bits_are_nan(b_bits)) return b_bits | quiet_bit;
  return float_bits_are_nan(product_bits) ? x86_default_nan : product_bits;
}

// The compositions the device code applies, one per kind of instruction.
//
// cvt.{rn,rz,rp,rm}.{f16,bf16}.f32 (no .satfinite): IEEE rounding with overflow to inf.
template <class To>
MIXPREC_HOST_DEVICE constexpr code_t<To> finish_ieee_conversion(std::uint32_t x_bits, code_t<To> raw,
                                                                overflow o) noexcept {
  const code_t<To> code = fix_nan<To>(x_bits, raw);
  return o == overflow::saturate ? saturate_infinity<To>(code) : code;
}

// cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32: nearest-even with saturation.
template <class To>
MIXPREC_HOST_DEVICE constexpr code_t<To> finish_satfinite_conversion(std::uint32_t x_bits, code_t<To> raw,
                                                                     overflow o) noexcept {
  const code_t<To> code = fix_nan<To>(x_bits, raw);
  return o == overflow::non_finite ? unsaturate<To>(x_bits, code) : code;
}

// cvt.rn.satfinite.{e2m3x2,e3m2x2,e2m1x2}.f32: the code is in the low bits of its lane.
template <class To>
MIXPREC_HOST_DEVICE constexpr code_t<To> finish_mx_element_conversion(std::uint32_t raw_lane) noexcept {
  return static_cast<code_t<To>>(raw_lane & format_traits<To>::code_mask);
}

// bfloat16 -> float needs no instruction: the code shifted left by 16 is the float, except that
// a signalling NaN would stay signalling (mixprec quiets it), which fix_decoded_nan handles.
MIXPREC_HOST_DEVICE constexpr std::uint32_t widen_bfloat16_bits(std::uint16_t code) noexcept {
  return fix_decoded_nan<formats::bfloat16>(code, static_cast<std::uint32_t>(code) << 16);
}

}  // namespace mixprec::gpu::detail
