// Host models of the CUDA conversion instructions that cuda/convert.cuh uses, for checking on a
// CPU that "instruction + fix-up == the generic conversion" (instruction_fixups_test.cpp).
//
// A model is what the instruction is documented to compute: the rounding is CUDA's own host
// implementation of the same conversion (cuda_fp16.hpp, cuda_bf16.hpp, cuda_fp8.hpp,
// cuda_fp6.hpp, cuda_fp4.hpp, whose device paths are these very instructions), and the special
// values are those the PTX ISA gives (cvt: ".satfinite: NaN stays NaN; |x| > MAX_NORM gives
// sign-preserved MAX_NORM"; without .satfinite, IEEE overflow to infinity).  It models the
// hardware; it does not run it.  The GPU tests (tests/cuda/gpu) run the instructions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#if defined(__has_include)
#if __has_include(<cuda_fp4.h>)
#include <cuda_fp4.h>
#endif
#endif

#include <mixprec/cuda/detail/instruction_fixups.hpp>

#include <cstdint>

namespace instruction_model {

using mixprec::overflow;
using mixprec::detail::bit_cast;
using mixprec::detail::round_mode;
namespace fixups = mixprec::gpu::detail;
namespace formats = mixprec::formats;

inline std::uint16_t half_code(__half h) { return static_cast<__half_raw>(h).x; }
inline std::uint16_t bfloat16_code(__nv_bfloat16 h) { return static_cast<__nv_bfloat16_raw>(h).x; }

// cvt.{rn,rz,rp,rm}.f16.f32 (every architecture)
struct f16_from_f32 {
  using format = formats::float16;
  static constexpr const char* name = "cvt.{rn,rz,rp,rm}.f16.f32";
  static constexpr round_mode modes[] = {round_mode::nearest_even, round_mode::toward_zero, round_mode::upward,
                                         round_mode::downward};
  static std::uint16_t run(float x, round_mode mode) {
    switch (mode) {
      case round_mode::toward_zero:
        return half_code(__float2half_rz(x));
      case round_mode::upward:
        return half_code(__float2half_ru(x));
      case round_mode::downward:
        return half_code(__float2half_rd(x));
      default:
        return half_code(__float2half_rn(x));
    }
  }
  static std::uint16_t finish(std::uint32_t x_bits, std::uint16_t raw, overflow o) {
    return fixups::finish_ieee_conversion<format>(x_bits, raw, o);
  }
};

// cvt.{rn,rz}.bf16.f32 (sm_80+), cvt.{rp,rm}.bf16.f32 (sm_90+)
struct bf16_from_f32 {
  using format = formats::bfloat16;
  static constexpr const char* name = "cvt.{rn,rz,rp,rm}.bf16.f32";
  static constexpr round_mode modes[] = {round_mode::nearest_even, round_mode::toward_zero, round_mode::upward,
                                         round_mode::downward};
  static std::uint16_t run(float x, round_mode mode) {
    switch (mode) {
      case round_mode::toward_zero:
        return bfloat16_code(__float2bfloat16_rz(x));
      case round_mode::upward:
        return bfloat16_code(__float2bfloat16_ru(x));
      case round_mode::downward:
        return bfloat16_code(__float2bfloat16_rd(x));
      default:
        return bfloat16_code(__float2bfloat16_rn(x));
    }
  }
  static std::uint16_t finish(std::uint32_t x_bits, std::uint16_t raw, overflow o) {
    return fixups::finish_ieee_conversion<format>(x_bits, raw, o);
  }
};

// cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 (sm_89+): only the saturating form exists.
template <class Format, __nv_fp8_interpretation_t Interpretation>
struct ofp8_from_f32 {
  using format = Format;
  static constexpr const char* name =
      Interpretation == __NV_E4M3 ? "cvt.rn.satfinite.e4m3x2.f32" : "cvt.rn.satfinite.e5m2x2.f32";
  static constexpr round_mode modes[] = {round_mode::nearest_even};
  static std::uint8_t run(float x, round_mode) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, Interpretation); }
  static std::uint8_t finish(std::uint32_t x_bits, std::uint8_t raw, overflow o) {
    return fixups::finish_satfinite_conversion<format>(x_bits, raw, o);
  }
};
using e4m3_from_f32 = ofp8_from_f32<formats::float8_e4m3fn, __NV_E4M3>;
using e5m2_from_f32 = ofp8_from_f32<formats::float8_e5m2, __NV_E5M2>;

#if defined(__CUDA_FP6_TYPES_EXIST__) && defined(__CUDA_FP4_TYPES_EXIST__)
#define INSTRUCTION_MODEL_HAS_MX 1
// cvt.{rz,rp}{.satfinite}.ue8m0x2.f32 (sm_100 family): the .satfinite choice follows the
// overflow mode, so the model takes both.
struct e8m0_from_f32 {
  using format = formats::float8_e8m0fnu;
  static constexpr const char* name = "cvt.{rz,rp}{.satfinite}.ue8m0x2.f32";
  static constexpr round_mode modes[] = {round_mode::toward_zero, round_mode::upward};
  static std::uint8_t run(float x, round_mode mode, overflow o) {
    return __nv_cvt_float_to_e8m0(x, o == overflow::saturate ? __NV_SATFINITE : __NV_NOSAT,
                                  mode == round_mode::upward ? cudaRoundPosInf : cudaRoundZero);
  }
  static std::uint8_t finish(std::uint32_t x_bits, std::uint8_t raw, overflow o) {
    return fixups::fix_e8m0(x_bits, raw, o);
  }
};

// cvt.rn.satfinite.{e2m3x2,e3m2x2,e2m1x2}.f32 (sm_100 family)
template <class Format>
struct mx_element_from_f32 {
  using format = Format;
  static constexpr const char* name = "cvt.rn.satfinite.{e2m3,e3m2,e2m1}x2.f32";
  static constexpr round_mode modes[] = {round_mode::nearest_even};
  static std::uint8_t run(float x, round_mode) {
    if constexpr (std::is_same<Format, formats::float6_e2m3fn>::value) {
      return __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundNearest);
    } else if constexpr (std::is_same<Format, formats::float6_e3m2fn>::value) {
      return __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundNearest);
    } else {
      return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
    }
  }
  static std::uint8_t finish(std::uint32_t, std::uint8_t raw, overflow) {
    return fixups::finish_mx_element_conversion<format>(raw);
  }
};
#else
#define INSTRUCTION_MODEL_HAS_MX 0
#endif

// Decoding: cvt.f32.f16, and cvt.rn.f16x2.{e4m3x2,e5m2x2} followed by it.
inline std::uint32_t f32_from_f16(std::uint16_t code) {
  __half_raw raw;
  raw.x = code;
  return bit_cast<std::uint32_t>(__half2float(__half(raw)));
}
inline std::uint32_t f32_from_ofp8(std::uint8_t code, __nv_fp8_interpretation_t interpretation) {
  return f32_from_f16(__nv_cvt_fp8_to_halfraw(code, interpretation).x);
}

}  // namespace instruction_model
