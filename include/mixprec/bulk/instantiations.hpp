// The bulk kernels that the compiled mode builds once (CMake target mixprec::compiled, source
// src/compiled/bulk.cpp): every minifloat type to and from float, on every SIMD path and in every
// rounding mode, for convert_n, convert_stochastic_n, quantize_n and dequantize_n.
//
// With MIXPREC_COMPILED defined (mixprec::compiled defines it for its users), dispatch.hpp
// declares these instantiations `extern`, so a file that converts no longer compiles the kernels
// itself (docs/performance.md, "Compile time", measures both modes).  The library's
// definitions are the same templates, so the bits are the same (tests/bulk run in both modes).
// Pairs not listed here (minifloat to minifloat, double, integers) are instantiated where used,
// as in the header-only mode.
#pragma once

// X(type) for each of the library's minifloat types.
// clang-format off
#define MIXPREC_FOR_EACH_MINIFLOAT(X)                                                       \
  X(::mixprec::float16) X(::mixprec::bfloat16) X(::mixprec::float8_e4m3fn)                  \
  X(::mixprec::float8_e5m2) X(::mixprec::float8_e4m3fnuz) X(::mixprec::float8_e5m2fnuz)     \
  X(::mixprec::float6_e3m2fn) X(::mixprec::float6_e2m3fn) X(::mixprec::float4_e2m1fn)       \
  X(::mixprec::float8_e8m0fnu) X(::mixprec::float8_ue4m3) X(::mixprec::float8_e4m3)         \
  X(::mixprec::float8_e3m4) X(::mixprec::float8_e4m3b11fnuz) X(::mixprec::tfloat32)
// clang-format on

// The instantiations for one type T, preceded by `extern` (declarations) or nothing (definitions);
// inside namespace mixprec::detail.
#define MIXPREC_BULK_INSTANTIATIONS_OF(EXTERN, T)                                                                      \
  EXTERN template void convert_n_serial<float, T>(simd_path, const float*, std::size_t, T*, rounding, overflow, bool); \
  EXTERN template void convert_n_serial<T, float>(simd_path, const T*, std::size_t, float*, rounding, overflow, bool); \
  EXTERN template void convert_n_on<float, T>(simd_path, const float*, std::size_t, T*, rounding, overflow);           \
  EXTERN template void convert_n_on<T, float>(simd_path, const T*, std::size_t, float*, rounding, overflow);           \
  EXTERN template void stochastic_serial<T>(simd_path, const float*, std::size_t, T*, overflow, std::uint64_t,         \
                                            std::uint64_t, stochastic_rule);                                           \
  EXTERN template std::uint32_t quantize_serial<T>(simd_path, const float*, std::size_t, T*, float, rounding,          \
                                                   overflow, bool);                                                    \
  EXTERN template void dequantize_serial<T>(simd_path, const T*, std::size_t, float*, float, bool);

#define MIXPREC_BULK_EXTERN_INSTANTIATIONS_OF(T) MIXPREC_BULK_INSTANTIATIONS_OF(extern, T)
#define MIXPREC_BULK_DEFINE_INSTANTIATIONS_OF(T) MIXPREC_BULK_INSTANTIATIONS_OF(, T)
