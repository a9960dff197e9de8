// CUDA's own low-precision types as mixprec values, both ways, by a bit copy:
//
//   __half                     <-> float16          __nv_fp8_e8m0  <-> float8_e8m0fnu  (CUDA >= 12.8)
//   __nv_bfloat16              <-> bfloat16         __nv_fp6_e3m2  <-> float6_e3m2fn   (CUDA >= 12.8)
//   __nv_fp8_e4m3              <-> float8_e4m3fn    __nv_fp6_e2m3  <-> float6_e2m3fn   (CUDA >= 12.8)
//   __nv_fp8_e5m2              <-> float8_e5m2      __nv_fp4_e2m1  <-> float4_e2m1fn   (CUDA >= 12.8)
//
//   __half h = ...;
//   mixprec::float16 x(h);            // the same code, no rounding
//   __half back = static_cast<__half>(x);
//
// Each pair has one encoding (IEEE 754 binary16, bfloat16, OFP8, OCP MX), so the conversion is
// a copy of the code and nothing else; tests/interop/cuda_interop_test.cpp checks every code
// both ways and against CUDA's own float conversion.  Value conversions with CUDA's rounding
// rules are not involved: `mixprec::float16(static_cast<float>(h))` would round through float.
//
// Opt-in: this header includes the CUDA headers itself (they compile as plain host C++ too),
// so only code that includes it needs the CUDA toolkit's include directory.  The functions are
// __host__ __device__ under nvcc.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

// fp6, fp4 and the e8m0 scale type came with CUDA 12.8 (cuda_fp4.h includes cuda_fp6.h, which
// includes cuda_fp8.h); older toolkits have none of them.
#if defined(__has_include)
#if __has_include(<cuda_fp4.h>)
#include <cuda_fp4.h>
#endif
#endif
#if defined(__CUDA_FP6_TYPES_EXIST__) && defined(__CUDA_FP4_TYPES_EXIST__)
#define MIXPREC_INTEROP_CUDA_HAS_MX_TYPES 1
#else
#define MIXPREC_INTEROP_CUDA_HAS_MX_TYPES 0
#endif

#include "../types.hpp"

namespace mixprec {
namespace detail {

// The fp8 / fp6 / fp4 / e8m0 classes hold their code in the public byte `__x` (fp6 and fp4 in
// its low bits, as mixprec does).  Bits above the format's width are not part of the code:
// CUDA's decoders ignore them, and they are cleared on the way in, so that a mixprec value
// never carries them (decisions.md §5).
template <class Native, class Format>
struct cuda_byte_type_format {
  using format = Format;
  using storage = typename format_traits<Format>::storage_type;
  static_assert(sizeof(Native) == sizeof(storage) && std::is_trivially_copyable<Native>::value,
                "a CUDA byte type is one trivially copyable byte");

  MIXPREC_HOST_DEVICE static storage to_bits(const Native& native) noexcept {
    return static_cast<storage>(native.__x & format_traits<Format>::code_mask);
  }
  MIXPREC_HOST_DEVICE static Native from_bits(storage bits) noexcept {
    Native native;
    native.__x = bits;
    return native;
  }
};

// A 16-bit CUDA type whose code is reached through its `Raw` struct (member x).
template <class Native, class Raw, class Format>
struct cuda_raw_type_format {
  using format = Format;
  static_assert(sizeof(Native) == 2 && std::is_trivially_copyable<Native>::value,
                "a CUDA 16-bit type is two trivially copyable bytes");

  MIXPREC_HOST_DEVICE static std::uint16_t to_bits(const Native& native) noexcept { return static_cast<Raw>(native).x; }
  MIXPREC_HOST_DEVICE static Native from_bits(std::uint16_t bits) noexcept {
    Raw raw;
    raw.x = bits;
    return Native(raw);
  }
};

}  // namespace detail

namespace interop {

// __half and __nv_bfloat16 keep their code private; their __half_raw / __nv_bfloat16_raw
// conversions (both directions, host and device) are the documented way to reach it.
template <>
struct native_format<__half> : detail::cuda_raw_type_format<__half, __half_raw, formats::float16> {};
template <>
struct native_format<__nv_bfloat16>
    : detail::cuda_raw_type_format<__nv_bfloat16, __nv_bfloat16_raw, formats::bfloat16> {};

// OFP8 E4M3 (NaN S.1111.111, no infinity) and E5M2 (IEEE-style).
template <>
struct native_format<__nv_fp8_e4m3> : detail::cuda_byte_type_format<__nv_fp8_e4m3, formats::float8_e4m3fn> {};
template <>
struct native_format<__nv_fp8_e5m2> : detail::cuda_byte_type_format<__nv_fp8_e5m2, formats::float8_e5m2> {};

#if MIXPREC_INTEROP_CUDA_HAS_MX_TYPES
// OCP MX: the unsigned power-of-two scale (0xFF NaN), FP6 E3M2 / E2M3 and FP4 E2M1 (finite only).
template <>
struct native_format<__nv_fp8_e8m0> : detail::cuda_byte_type_format<__nv_fp8_e8m0, formats::float8_e8m0fnu> {};
template <>
struct native_format<__nv_fp6_e3m2> : detail::cuda_byte_type_format<__nv_fp6_e3m2, formats::float6_e3m2fn> {};
template <>
struct native_format<__nv_fp6_e2m3> : detail::cuda_byte_type_format<__nv_fp6_e2m3, formats::float6_e2m3fn> {};
template <>
struct native_format<__nv_fp4_e2m1> : detail::cuda_byte_type_format<__nv_fp4_e2m1, formats::float4_e2m1fn> {};
#endif

}  // namespace interop
}  // namespace mixprec
