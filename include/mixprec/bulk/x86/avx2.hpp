// The AVX2 path: 8 lanes of 32 bits, comparisons as all-ones lanes.  The conversion algorithms
// are the generic ones of kernels.inl, compiled here for this target.
#pragma once

#include "../simd_path.hpp"

#if MIXPREC_X86_SIMD
#include <immintrin.h>

#include <cstdint>

#include "../../detail/convert_bits.hpp"
#include "target.hpp"

MIXPREC_TARGET_BEGIN("avx2,fma,f16c")
namespace mixprec::detail::simd_avx2 {

struct ops {
  static constexpr int width = 8;
  using vec = __m256i;
  using mask = __m256i;
  static constexpr unsigned all_lanes = 0xFFu;

  static MIXPREC_SIMD_INLINE vec set1(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
  static MIXPREC_SIMD_INLINE vec load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static MIXPREC_SIMD_INLINE void store(void* p, vec v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  static MIXPREC_SIMD_INLINE void stream(void* p, vec v) { _mm256_stream_si256(static_cast<__m256i*>(p), v); }
  template <int Bits>
  static MIXPREC_SIMD_INLINE vec load_codes(const void* p) {
    if constexpr (Bits == 8) {
      return _mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
    } else {
      return _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    }
  }
  template <int Bits>
  static MIXPREC_SIMD_INLINE void store_codes(void* p, vec v) {
    // packus works within 128-bit halves: [a0..a3 a0..a3 | a4..a7 a4..a7]; gather the low
    // quarter of each half.  The values fit, so the saturation never acts.
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0b1000);
    if constexpr (Bits == 8) {
      const __m256i bytes = _mm256_packus_epi16(words, words);
      _mm_storel_epi64(static_cast<__m128i*>(p), _mm256_castsi256_si128(bytes));
    } else {
      _mm_storeu_si128(static_cast<__m128i*>(p), _mm256_castsi256_si128(words));
    }
  }

  static MIXPREC_SIMD_INLINE vec and_(vec a, vec b) { return _mm256_and_si256(a, b); }
  static MIXPREC_SIMD_INLINE vec andnot(vec a, vec b) { return _mm256_andnot_si256(a, b); }
  static MIXPREC_SIMD_INLINE vec or_(vec a, vec b) { return _mm256_or_si256(a, b); }
  static MIXPREC_SIMD_INLINE vec add(vec a, vec b) { return _mm256_add_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec sub(vec a, vec b) { return _mm256_sub_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec min_u(vec a, vec b) { return _mm256_min_epu32(a, b); }
  template <int N>
  static MIXPREC_SIMD_INLINE vec shift_right(vec a) {
    return _mm256_srli_epi32(a, N);
  }
  template <int N>
  static MIXPREC_SIMD_INLINE vec shift_left(vec a) {
    return _mm256_slli_epi32(a, N);
  }
  static MIXPREC_SIMD_INLINE vec shift_right_each(vec a, vec counts) { return _mm256_srlv_epi32(a, counts); }
  static MIXPREC_SIMD_INLINE vec shift_left_each(vec a, vec counts) { return _mm256_sllv_epi32(a, counts); }
  static MIXPREC_SIMD_INLINE vec max_i(vec a, vec b) { return _mm256_max_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec min_i(vec a, vec b) { return _mm256_min_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec sign_fill(vec a) { return _mm256_srai_epi32(a, 31); }
  static MIXPREC_SIMD_INLINE mask less(vec a, vec b) { return _mm256_cmpgt_epi32(b, a); }
  static MIXPREC_SIMD_INLINE mask less_equal(vec a, vec b) {
    return _mm256_xor_si256(_mm256_cmpgt_epi32(a, b), _mm256_set1_epi32(-1));
  }
  static MIXPREC_SIMD_INLINE mask equal(vec a, vec b) { return _mm256_cmpeq_epi32(a, b); }
  static MIXPREC_SIMD_INLINE mask both(mask a, mask b) { return _mm256_and_si256(a, b); }
  static MIXPREC_SIMD_INLINE mask either(mask a, mask b) { return _mm256_or_si256(a, b); }
  static MIXPREC_SIMD_INLINE mask but_not(mask a, mask b) { return _mm256_andnot_si256(b, a); }
  static MIXPREC_SIMD_INLINE vec select(mask m, vec if_set, vec if_clear) {
    return _mm256_blendv_epi8(if_clear, if_set, m);
  }
  static MIXPREC_SIMD_INLINE unsigned lanes(mask m) {
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(m)));
  }
  template <int Imm>
  static MIXPREC_SIMD_INLINE void store_float_as_half(void* p, vec x) {
    _mm_storeu_si128(static_cast<__m128i*>(p), _mm256_cvtps_ph(_mm256_castsi256_ps(x), Imm));
  }
  static MIXPREC_SIMD_INLINE vec load_half_as_float(const void* p) {
    return _mm256_castps_si256(_mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p))));
  }
  template <bool TowardZero>
  static MIXPREC_SIMD_INLINE vec round_scaled_to_int(vec float_bits, float scale) {
    const __m256 scaled = _mm256_mul_ps(_mm256_castsi256_ps(float_bits), _mm256_set1_ps(scale));
    return _mm256_cvttps_epi32(
        _mm256_round_ps(scaled, (TowardZero ? _MM_FROUND_TO_ZERO : _MM_FROUND_TO_NEAREST_INT) | _MM_FROUND_NO_EXC));
  }
  static MIXPREC_SIMD_INLINE vec int_to_float_bits_scaled(vec a, float scale) {
    return _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(scale)));
  }
};

#include "kernels.inl"

}  // namespace mixprec::detail::simd_avx2
MIXPREC_TARGET_END
#endif
