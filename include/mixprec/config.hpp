// mixprec — configuration macros shared by every header.
//
// Only this header looks at the compiler: everything else uses the macros below, so that a
// plain host build, an nvcc build and a CUDA device pass read the same code.
#pragma once

#define MIXPREC_VERSION_MAJOR 0
#define MIXPREC_VERSION_MINOR 1
#define MIXPREC_VERSION_PATCH 0

#if __cplusplus < 201703L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#error "mixprec needs C++17 or later"
#endif

// Functions usable on the host and, under nvcc, on the device.
#if defined(__CUDACC__)
#define MIXPREC_HOST_DEVICE __host__ __device__
#else
#define MIXPREC_HOST_DEVICE
#endif

// Before a __host__ __device__ function template that calls a function its caller supplies (a
// policy's rule, a host lambda): nvcc then accepts a host-only callee where the template is used
// only from host code.  It checks nothing for device instantiations either, so device code must
// reach such a template through a __device__ callee of its own (cuda/loss_scaler.cuh does).
#if defined(__CUDACC__)
#define MIXPREC_HOST_DEVICE_CALLS_CALLER_FUNCTION _Pragma("nv_exec_check_disable")
#else
#define MIXPREC_HOST_DEVICE_CALLS_CALLER_FUNCTION
#endif

// True while nvcc compiles the device side of a translation unit.
#if defined(__CUDA_ARCH__)
#define MIXPREC_DEVICE_PASS 1
#else
#define MIXPREC_DEVICE_PASS 0
#endif

// Bit casts between float/double and their integer images are constexpr where the compiler
// offers __builtin_bit_cast (GCC >= 11, Clang >= 9, MSVC >= 19.27, nvcc >= 11.x).  Without it
// the conversions from and to float/double still work, only not in constant expressions.
#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define MIXPREC_HAS_BUILTIN_BIT_CAST 1
#endif
#endif
#if !defined(MIXPREC_HAS_BUILTIN_BIT_CAST) && defined(_MSC_VER) && _MSC_VER >= 1927
#define MIXPREC_HAS_BUILTIN_BIT_CAST 1
#endif
#if !defined(MIXPREC_HAS_BUILTIN_BIT_CAST)
#define MIXPREC_HAS_BUILTIN_BIT_CAST 0
#endif

#if MIXPREC_HAS_BUILTIN_BIT_CAST
#define MIXPREC_BIT_CAST_CONSTEXPR constexpr
#else
#define MIXPREC_BIT_CAST_CONSTEXPR
#endif

// Forced inlining for the conversion fast path: once inlined with a constant rounding mode it
// folds to a handful of instructions; left out of line (GCC does so when a translation unit
// uses it from many places) each call pays for the generic mode switch.
#if defined(__CUDACC__)
#define MIXPREC_FORCE_INLINE __forceinline__
#elif defined(__GNUC__) || defined(__clang__)
#define MIXPREC_FORCE_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define MIXPREC_FORCE_INLINE __forceinline
#else
#define MIXPREC_FORCE_INLINE inline
#endif

// The small functions of the bulk kernels (bulk/kernels.inl): always inlined, so that a kernel
// is one loop of vector instructions.
#define MIXPREC_SIMD_INLINE MIXPREC_FORCE_INLINE

// MIXPREC_UNROLL(n): unroll the next loop n times.  GCC and Clang read "#pragma GCC unroll n";
// nvcc's front end does not know it and warns (error 1675-D under -Werror all-warnings) in every
// .cu file that includes the host kernels, so under nvcc it expands to nothing: the unrolled
// loops are host SIMD kernels, which a .cu file compiles but never runs on the device.
// MIXPREC_PRAGMA(text): #pragma text, from inside a macro.
#define MIXPREC_PRAGMA(text) _Pragma(#text)
#if defined(__NVCC__) || defined(__CUDACC__)
#define MIXPREC_UNROLL(n)
#elif defined(__GNUC__)
#define MIXPREC_UNROLL(n) MIXPREC_PRAGMA(GCC unroll n)
#else
#define MIXPREC_UNROLL(n)
#endif

// Marks a path that cannot be taken: lets the optimiser, and static analysers that do not model
// bit-counting builtins, drop impossible cases (e.g. shifts by 64 or more after
// count_leading_zeros).
#if defined(__GNUC__) || defined(__clang__)
#define MIXPREC_UNREACHABLE() __builtin_unreachable()
#elif defined(_MSC_VER)
#define MIXPREC_UNREACHABLE() __assume(0)
#else
#define MIXPREC_UNREACHABLE() ((void)0)
#endif
