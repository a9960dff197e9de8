// Conversions in device code on the hardware's conversion instructions, bit-identical to the
// host's scalar conversions (mixprec::convert) on every input.
//
//   mixprec::gpu::convert<To>(x, rounding, overflow)      float -> any mixprec type
//   mixprec::gpu::convert_pair<To>(x0, x1, y0, y1, r, o)  two at once (the packed x2 forms)
//   mixprec::gpu::to_float(v)                             any mixprec type -> float
//
// Each is __host__ __device__: on the host, and in device code where no instruction gives the
// requested mode's result, it is the generic conversion itself.  Where one does, the
// instruction runs and its raw result goes through the fix-up of
// detail/instruction_fixups.hpp that makes it mixprec's result:
//
//   target          modes                                   instruction (architecture)                fix-up
//   float16         nearest_even, toward_zero, up, down      cvt.{rn,rz,rp,rm}.f16.f32 (all)          NaN sign;
//   saturate: inf -> max bfloat16        nearest_even, toward_zero                cvt.{rn,rz}.bf16.f32 (sm_80+) NaN
//   sign; saturate: inf -> max
//                   upward, downward                         cvt.{rp,rm}.bf16.f32 (sm_90+)            same
//   float8_e4m3fn   nearest_even                             cvt.rn.satfinite.e4m3x2.f32 (sm_89+)     NaN sign;
//   non_finite: NaN past 464 float8_e5m2     nearest_even                             cvt.rn.satfinite.e5m2x2.f32
//   (sm_89+)     NaN; non_finite: inf from 61440 float8_e8m0fnu  toward_zero, upward
//   cvt.{rz,rp}{.satfinite}.ue8m0x2.f32      zero, negatives, NaN float6_*, float4_e2m1fn  nearest_even
//   cvt.rn.satfinite.{e2m3,e3m2,e2m1}x2.f32  none (NaN -> +max already) (the last three on the sm_100 family:
//   sm_100a/f, sm_110f, sm_120f) decoding: float16 by cvt.f32.f16; e4m3/e5m2 by cvt.rn.f16x2.e4m3x2 (sm_89+) or a shift
//   (e5m2 is float16's top byte), then cvt.f32.f16; bfloat16 by a shift.  NaN codes fixed up.
//
// Every other (format, mode) pair, and older architectures, use the generic conversion.
// docs/cuda.md explains each instruction's difference and why the fix-up is exact;
// tests/cuda/instruction_fixups_test.cpp checks the argument on a model of the instructions,
// tests/cuda/gpu compares the device with the host over every float on a GPU.
//
// The instructions are written without .ftz, so subnormal inputs and results are kept whatever
// -ftz / --use_fast_math says.
#pragma once

#include <nv/target>

#include <cstdint>
#include <type_traits>

#include "../convert.hpp"
#include "../types.hpp"
#include "detail/instruction_fixups.hpp"

// The sm_100 family's conversions to e8m0, fp6 and fp4 (the condition CUDA's own cuda_fp8.h
// uses; <nv/target> has no test for family-specific features).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FAMILY_SPECIFIC__)
#if __CUDA_ARCH_FAMILY_SPECIFIC__ >= 1000 && __CUDA_ARCH_FAMILY_SPECIFIC__ < 1300
#define MIXPREC_GPU_HAS_MX_CONVERSIONS 1
#endif
#endif
#if !defined(MIXPREC_GPU_HAS_MX_CONVERSIONS)
#define MIXPREC_GPU_HAS_MX_CONVERSIONS 0
#endif

namespace mixprec::gpu {
namespace detail {

using mixprec::detail::code_access;

// The instruction path of one format: encode(x, mode, o, code) returns false where there is
// none (the caller then converts generically).  Device code only.
template <class Format>
struct generic_only {
  __device__ static bool encode(float, round_mode, overflow, code_t<Format>&) { return false; }
  __device__ static bool encode_pair(float, float, round_mode, overflow, code_t<Format>&, code_t<Format>&) {
    return false;
  }
  __device__ static bool decode(code_t<Format>, float&) { return false; }
  __device__ static bool decode_pair(code_t<Format>, code_t<Format>, float&, float&) { return false; }
};
template <class Format>
struct hardware : generic_only<Format> {};

__device__ inline float half_bits_to_float(std::uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

template <class Format>
__device__ inline float decoded_through_half(code_t<Format> code, std::uint16_t half) {
  return bit_cast<float>(fix_decoded_nan<Format>(code, bit_cast<std::uint32_t>(half_bits_to_float(half))));
}

// float16 and bfloat16: one instruction per element in up to four modes (convert_one), a packed
// nearest-even one for two (convert_two_nearest), both finished by finish_ieee_conversion.
// cvt.rn.{f16,bf16}x2.f32 d, a, b puts a in the upper half (PTX ISA, cvt): a = x1, b = x0.
template <class Derived, class F>
struct ieee16_hardware : generic_only<F> {
  __device__ static std::uint16_t finish(float x, std::uint16_t raw, overflow o) {
    return finish_ieee_conversion<F>(bit_cast<std::uint32_t>(x), raw, o);
  }
  __device__ static bool encode(float x, round_mode mode, overflow o, std::uint16_t& out) {
    std::uint16_t raw = 0;
    if (!Derived::convert_one(x, mode, raw)) return false;
    out = finish(x, raw, o);
    return true;
  }
  __device__ static bool encode_pair(float x0, float x1, round_mode mode, overflow o, std::uint16_t& y0,
                                     std::uint16_t& y1) {
    std::uint32_t raw = 0;
    if (mode != round_mode::nearest_even || !Derived::convert_two_nearest(x0, x1, raw)) return false;
    y0 = finish(x0, static_cast<std::uint16_t>(raw & 0xFFFFu), o);
    y1 = finish(x1, static_cast<std::uint16_t>(raw >> 16), o);
    return true;
  }
  __device__ static bool decode_pair(std::uint16_t c0, std::uint16_t c1, float& y0, float& y1) {
    return Derived::decode(c0, y0) && Derived::decode(c1, y1);
  }
};

template <>
struct hardware<formats::float16> : ieee16_hardware<hardware<formats::float16>, formats::float16> {
  __device__ static bool convert_one(float x, round_mode mode, std::uint16_t& raw) {
    switch (mode) {
      case round_mode::nearest_even:
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(raw) : "f"(x));
        return true;
      case round_mode::toward_zero:
        asm("cvt.rz.f16.f32 %0, %1;" : "=h"(raw) : "f"(x));
        return true;
      case round_mode::upward:
        asm("cvt.rp.f16.f32 %0, %1;" : "=h"(raw) : "f"(x));
        return true;
      case round_mode::downward:
        asm("cvt.rm.f16.f32 %0, %1;" : "=h"(raw) : "f"(x));
        return true;
      default:
        return false;
    }
  }
  __device__ static bool convert_two_nearest(float x0, float x1, std::uint32_t& raw) {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(raw) : "f"(x1), "f"(x0));
    return true;
  }
  __device__ static bool decode(std::uint16_t code, float& out) {
    out = decoded_through_half<formats::float16>(code, code);
    return true;
  }
};

template <>
struct hardware<formats::bfloat16> : ieee16_hardware<hardware<formats::bfloat16>, formats::bfloat16> {
  __device__ static bool convert_one(float x, round_mode mode, std::uint16_t& raw) {
    bool done = false;
    switch (mode) {
      case round_mode::nearest_even:
        NV_IF_TARGET(NV_PROVIDES_SM_80, (asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(raw) : "f"(x)); done = true;))
        break;
      case round_mode::toward_zero:
        NV_IF_TARGET(NV_PROVIDES_SM_80, (asm("cvt.rz.bf16.f32 %0, %1;" : "=h"(raw) : "f"(x)); done = true;))
        break;
      case round_mode::upward:
        NV_IF_TARGET(NV_PROVIDES_SM_90, (asm("cvt.rp.bf16.f32 %0, %1;" : "=h"(raw) : "f"(x)); done = true;))
        break;
      case round_mode::downward:
        NV_IF_TARGET(NV_PROVIDES_SM_90, (asm("cvt.rm.bf16.f32 %0, %1;" : "=h"(raw) : "f"(x)); done = true;))
        break;
      default:
        break;
    }
    return done;
  }
  __device__ static bool convert_two_nearest(float x0, float x1, std::uint32_t& raw) {
    bool done = false;
    NV_IF_TARGET(NV_PROVIDES_SM_80, (asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(raw) : "f"(x1), "f"(x0)); done = true;))
    return done;
  }
  __device__ static bool decode(std::uint16_t code, float& out) {
    out = bit_cast<float>(widen_bfloat16_bits(code));
    return true;
  }
};

// The OFP8 formats: only a saturating, nearest-even instruction exists (sm_89+).
template <class F>
struct fp8_hardware {
  __device__ static std::uint8_t finish(float x, std::uint8_t raw, overflow o) {
    return finish_satfinite_conversion<F>(bit_cast<std::uint32_t>(x), raw, o);
  }
  __device__ static std::uint16_t convert_two(float x0, float x1) {
    std::uint16_t raw = 0;
    if constexpr (std::is_same<F, formats::float8_e4m3fn>::value) {
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(raw) : "f"(x1), "f"(x0));
    } else {
      asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(raw) : "f"(x1), "f"(x0));
    }
    return raw;
  }
  __device__ static bool encode_pair(float x0, float x1, round_mode mode, overflow o, std::uint8_t& y0,
                                     std::uint8_t& y1) {
    if (mode != round_mode::nearest_even) return false;
    bool done = false;
    NV_IF_TARGET(NV_PROVIDES_SM_89, (const std::uint16_t raw = convert_two(x0, x1);
                                     y0 = finish(x0, static_cast<std::uint8_t>(raw & 0xFFu), o);
                                     y1 = finish(x1, static_cast<std::uint8_t>(raw >> 8), o); done = true;))
    return done;
  }
  __device__ static bool encode(float x, round_mode mode, overflow o, std::uint8_t& out) {
    std::uint8_t unused = 0;
    return encode_pair(x, 0.0f, mode, o, out, unused);
  }
  // cvt.rn.f16x2.e4m3x2 d, a: the upper byte of a goes to the upper half of d.  e5m2 is the top
  // byte of a float16 on every architecture.
  __device__ static bool decode_pair(std::uint8_t c0, std::uint8_t c1, float& y0, float& y1) {
    if constexpr (std::is_same<F, formats::float8_e5m2>::value) {
      y0 = decoded_through_half<F>(c0, static_cast<std::uint16_t>(c0 << 8));
      y1 = decoded_through_half<F>(c1, static_cast<std::uint16_t>(c1 << 8));
      return true;
    } else {
      bool done = false;
      NV_IF_TARGET(NV_PROVIDES_SM_89,
                   (const auto packed = static_cast<std::uint16_t>(c0 | (c1 << 8)); std::uint32_t halves = 0;
                    asm("cvt.rn.f16x2.e4m3x2 %0, %1;"
                        : "=r"(halves)
                        : "h"(packed));
                    y0 = decoded_through_half<F>(c0, static_cast<std::uint16_t>(halves & 0xFFFFu));
                    y1 = decoded_through_half<F>(c1, static_cast<std::uint16_t>(halves >> 16)); done = true;))
      return done;
    }
  }
  __device__ static bool decode(std::uint8_t code, float& out) {
    float unused = 0;
    return decode_pair(code, 0, out, unused);
  }
};

template <>
struct hardware<formats::float8_e4m3fn> : fp8_hardware<formats::float8_e4m3fn> {};
template <>
struct hardware<formats::float8_e5m2> : fp8_hardware<formats::float8_e5m2> {};

#if MIXPREC_GPU_HAS_MX_CONVERSIONS
template <>
struct hardware<formats::float8_e8m0fnu> : generic_only<formats::float8_e8m0fnu> {
  __device__ static bool encode(float x, round_mode mode, overflow o, std::uint8_t& out) {
    std::uint16_t raw = 0;
    const bool saturate = o == overflow::saturate;
    if (mode == round_mode::toward_zero && saturate) {
      asm("cvt.rz.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(raw) : "f"(0.0f), "f"(x));
    } else if (mode == round_mode::toward_zero) {
      asm("cvt.rz.ue8m0x2.f32 %0, %1, %2;" : "=h"(raw) : "f"(0.0f), "f"(x));
    } else if (mode == round_mode::upward && saturate) {
      asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(raw) : "f"(0.0f), "f"(x));
    } else if (mode == round_mode::upward) {
      asm("cvt.rp.ue8m0x2.f32 %0, %1, %2;" : "=h"(raw) : "f"(0.0f), "f"(x));
    } else {
      return false;
    }
    out = fix_e8m0(bit_cast<std::uint32_t>(x), static_cast<std::uint8_t>(raw & 0xFFu), o);
    return true;
  }
  __device__ static bool encode_pair(float x0, float x1, round_mode mode, overflow o, std::uint8_t& y0,
                                     std::uint8_t& y1) {
    return encode(x0, mode, o, y0) && encode(x1, mode, o, y1);
  }
};

// fp6 / fp4: nearest-even with saturation is the only mode, and it is mixprec's nearest_even in
// both overflow modes (no infinity or NaN to produce; a NaN gives +max in both, decisions.md §1).
template <class F>
struct mx_element_hardware : generic_only<F> {
  __device__ static bool encode(float x, round_mode mode, overflow, std::uint8_t& out) {
    if (mode != round_mode::nearest_even) return false;
    std::uint16_t raw = 0;
    if constexpr (std::is_same<F, formats::float6_e2m3fn>::value) {
      asm("cvt.rn.satfinite.e2m3x2.f32 %0, %1, %2;" : "=h"(raw) : "f"(0.0f), "f"(x));
    } else if constexpr (std::is_same<F, formats::float6_e3m2fn>::value) {
      asm("cvt.rn.satfinite.e3m2x2.f32 %0, %1, %2;" : "=h"(raw) : "f"(0.0f), "f"(x));
    } else {
      asm("{ .reg .b8 pair; cvt.rn.satfinite.e2m1x2.f32 pair, %1, %2; mov.b16 %0, {pair, 0}; }"
          : "=h"(raw)
          : "f"(0.0f), "f"(x));
    }
    out = finish_mx_element_conversion<F>(raw);
    return true;
  }
  __device__ static bool encode_pair(float x0, float x1, round_mode mode, overflow o, std::uint8_t& y0,
                                     std::uint8_t& y1) {
    return encode(x0, mode, o, y0) && encode(x1, mode, o, y1);
  }
};
template <>
struct hardware<formats::float6_e2m3fn> : mx_element_hardware<formats::float6_e2m3fn> {};
template <>
struct hardware<formats::float6_e3m2fn> : mx_element_hardware<formats::float6_e3m2fn> {};
template <>
struct hardware<formats::float4_e2m1fn> : mx_element_hardware<formats::float4_e2m1fn> {};
#endif

template <class T>
struct is_minifloat : std::false_type {};
template <class Format>
struct is_minifloat<minifloat<Format>> : std::true_type {};

// Out of line on the device: the directed modes (their instruction switch, or the generic
// conversion) and the generic decode.  Only nearest-even conversions and the instruction decodes
// are inlined into the kernels' unrolled loops; with every mode inlined into every element,
// kernels grew huge and the compiler took minutes per kernel, for the paths that are not the
// fast ones.
template <class To>
__device__ __noinline__ To convert_other_modes(float x, rounding r, overflow o) noexcept {
  code_t<typename To::format> code = 0;
  if (hardware<typename To::format>::encode(x, mixprec::detail::to_round_mode(r), o, code)) {
    return code_access::make<To>(code);
  }
  return mixprec::convert<To>(x, r, o);
}
template <class To, class From>
__device__ __noinline__ To generic_convert(From x, rounding r, overflow o) noexcept {
  return mixprec::convert<To>(x, r, o);
}
template <class From>
__device__ __noinline__ float generic_to_float(From x) noexcept {
  return static_cast<float>(x);
}

}  // namespace detail

template <class To>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE To convert(float x, rounding r = rounding::nearest_even,
                                                    overflow o = overflow::non_finite) noexcept {
  if constexpr (std::is_same<To, float>::value) {
    return x;
  } else {
    static_assert(detail::is_minifloat<To>::value, "gpu::convert converts float to a mixprec type");
    using format = typename To::format;
    NV_IF_TARGET(NV_IS_DEVICE,
                 (detail::code_t<format> code = 0;
                  if (r == rounding::nearest_even &&
                      detail::hardware<format>::encode(x, mixprec::detail::round_mode::nearest_even, o, code)) {
                    return detail::code_access::make<To>(code);
                  } return detail::convert_other_modes<To>(x, r, o);))
    return mixprec::convert<To>(x, r, o);
  }
}

template <class To>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE void convert_pair(float x0, float x1, To& y0, To& y1,
                                                           rounding r = rounding::nearest_even,
                                                           overflow o = overflow::non_finite) noexcept {
  if constexpr (std::is_same<To, float>::value) {
    y0 = x0;
    y1 = x1;
  } else {
    using format = typename To::format;
    NV_IF_TARGET(
        NV_IS_DEVICE,
        (detail::code_t<format> c0 = 0; detail::code_t<format> c1 = 0;
         if (r == rounding::nearest_even &&
             detail::hardware<format>::encode_pair(x0, x1, mixprec::detail::round_mode::nearest_even, o, c0, c1)) {
           y0 = detail::code_access::make<To>(c0);
           y1 = detail::code_access::make<To>(c1);
           return;
         }))
    y0 = gpu::convert<To>(x0, r, o);
    y1 = gpu::convert<To>(x1, r, o);
  }
}

template <class From>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE float to_float(From v) noexcept {
  if constexpr (std::is_same<From, float>::value) {
    return v;
  } else {
    static_assert(detail::is_minifloat<From>::value, "gpu::to_float decodes a mixprec type");
    NV_IF_TARGET(NV_IS_DEVICE, (float f = 0; if (detail::hardware<typename From::format>::decode(v.bits(), f)) return f;
                                return detail::generic_to_float(v);))
    return static_cast<float>(v);
  }
}

template <class From>
MIXPREC_HOST_DEVICE MIXPREC_FORCE_INLINE void to_float_pair(From v0, From v1, float& y0, float& y1) noexcept {
  if constexpr (std::is_same<From, float>::value) {
    y0 = v0;
    y1 = v1;
  } else {
    NV_IF_TARGET(NV_IS_DEVICE,
                 (if (detail::hardware<typename From::format>::decode_pair(v0.bits(), v1.bits(), y0, y1)) return;))
    y0 = gpu::to_float(v0);
    y1 = gpu::to_float(v1);
  }
}

}  // namespace mixprec::gpu
