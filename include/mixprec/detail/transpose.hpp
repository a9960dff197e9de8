// Block transposes of 32-bit words: floats, or pairs of bf16 codes, moved and never computed on
// (so any bits, NaN payloads included, arrive as they left).  gemm's packing transposes operand
// blocks with it (gemm/detail/sources.hpp, packing.hpp) and the MX layouts their column-wise
// blocks (mx/quantize.hpp).
//
//   transpose_words(in, in_stride, rows, cols, out, out_stride, path);
//       word c of row r of `in` becomes word r of row c of `out`, strides in bytes
//
// In blocks of 16 x 16 on the AVX-512 paths and 8 x 8 on AVX2, each compiled in its target
// region (bulk/x86/target.hpp); the edges, and every other path, move word by word.
#pragma once

#include <cstddef>
#include <cstring>

#include "../bulk/simd_path.hpp"

#if MIXPREC_X86_SIMD
#include <immintrin.h>

#include "../bulk/x86/target.hpp"

MIXPREC_TARGET_BEGIN("avx2,fma")
namespace mixprec::detail::transpose_avx2 {

// Word c of row r of `in` to word r of row c of `out`, for an 8 x 8 block of 32-bit words,
// strides in bytes.
inline void transpose_8x8(const unsigned char* in, std::size_t in_stride, unsigned char* out, std::size_t out_stride) {
  __m256 r[8], t[8], u[8];
  for (std::size_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(in + i * in_stride));
  for (std::size_t i = 0; i < 8; i += 2) {  // 32-bit interleave within 128-bit halves
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (std::size_t i = 0; i < 8; i += 4) {  // 64-bit: 4 x 4 transposes within each half
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (std::size_t q = 0; q < 4; ++q) {  // halves: rows 0-3 and 4-7 of columns q and q + 4
    _mm256_storeu_ps(reinterpret_cast<float*>(out + q * out_stride), _mm256_permute2f128_ps(u[q], u[q + 4], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(out + (q + 4) * out_stride),
                     _mm256_permute2f128_ps(u[q], u[q + 4], 0x31));
  }
}

}  // namespace mixprec::detail::transpose_avx2
MIXPREC_TARGET_END

MIXPREC_AVX512_REGION_BEGIN("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")
namespace mixprec::detail::transpose_avx512 {

// Word c of row r of `in` to word r of row c of `out`, for a 16 x 16 block of 32-bit words
// (floats or pairs of bf16 codes; moved, never computed on), strides in bytes.
inline void transpose_16x16(const unsigned char* in, std::size_t in_stride, unsigned char* out,
                            std::size_t out_stride) {
  __m512 r[16], t[16], u[16];
  for (std::size_t i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(reinterpret_cast<const float*>(in + i * in_stride));
  for (std::size_t i = 0; i < 16; i += 2) {  // 32-bit interleave within 128-bit lanes
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (std::size_t i = 0; i < 16; i += 4) {  // 64-bit: lane L of u[i + q] is rows i..i+3, column 4L + q
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
    const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (std::size_t q = 0; q < 4; ++q) {  // 4 x 4 transpose of 128-bit lanes across the row groups
    const __m512 v0 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0x44), v1 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0xEE);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0x44);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0xEE);
    _mm512_storeu_ps(reinterpret_cast<float*>(out + q * out_stride), _mm512_shuffle_f32x4(v0, v2, 0x88));
    _mm512_storeu_ps(reinterpret_cast<float*>(out + (4 + q) * out_stride), _mm512_shuffle_f32x4(v0, v2, 0xDD));
    _mm512_storeu_ps(reinterpret_cast<float*>(out + (8 + q) * out_stride), _mm512_shuffle_f32x4(v1, v3, 0x88));
    _mm512_storeu_ps(reinterpret_cast<float*>(out + (12 + q) * out_stride), _mm512_shuffle_f32x4(v1, v3, 0xDD));
  }
}

}  // namespace mixprec::detail::transpose_avx512
MIXPREC_AVX512_REGION_END
#endif

namespace mixprec::detail {

inline void transpose_words(const unsigned char* in, std::size_t in_stride, std::size_t rows, std::size_t cols,
                            unsigned char* out, std::size_t out_stride, simd_path path) {
  const auto move = [&](std::size_t r, std::size_t c) {
    std::memcpy(out + c * out_stride + 4 * r, in + r * in_stride + 4 * c, 4);
  };
  std::size_t block = 1;
#if MIXPREC_X86_SIMD
  block = path == simd_path::avx512 || path == simd_path::avx512_bf16 ? 16 : path == simd_path::avx2 ? 8 : 1;
#else
  (void)path;
#endif
  std::size_t r0 = 0;
  for (; block > 1 && r0 + block <= rows; r0 += block) {
    std::size_t c0 = 0;
    for (; c0 + block <= cols; c0 += block) {
#if MIXPREC_X86_SIMD
      const unsigned char* from = in + r0 * in_stride + 4 * c0;
      unsigned char* to = out + c0 * out_stride + 4 * r0;
      if (block == 16) {
        transpose_avx512::transpose_16x16(from, in_stride, to, out_stride);
      } else {
        transpose_avx2::transpose_8x8(from, in_stride, to, out_stride);
      }
#endif
    }
    for (std::size_t c = c0; c < cols; ++c) {
      for (std::size_t r = r0; r < r0 + block; ++r) move(r, c);
    }
  }
  for (std::size_t c = 0; c < cols; ++c) {
    for (std::size_t r = r0; r < rows; ++r) move(r, c);
  }
}

}  // namespace mixprec::detail
