// The AVX-512 (F + BW + VL) path: 16 lanes of 32 bits, comparisons into mask registers.  The
// conversion algorithms are the generic ones of kernels.inl, compiled here for this target.
#pragma once

#include "../simd_path.hpp"

#if MIXPREC_X86_SIMD
#include <immintrin.h>

#include <cstdint>

#include "../../detail/convert_bits.hpp"
#include "target.hpp"

MIXPREC_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
// GCC 12's AVX-512 intrinsics pass an intentionally undefined operand (`__m512i __Y = __Y;`)
// that -Wmaybe-uninitialized reports once they are inlined here: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace mixprec::detail::simd_avx512 {

struct ops {
  static constexpr int width = 16;
  using vec = __m512i;
  using mask = __mmask16;
  static constexpr unsigned all_lanes = 0xFFFFu;

  static MIXPREC_SIMD_INLINE vec set1(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static MIXPREC_SIMD_INLINE vec load(const void* p) { return _mm512_loadu_si512(p); }
  static MIXPREC_SIMD_INLINE void store(void* p, vec v) { _mm512_storeu_si512(p, v); }
  static MIXPREC_SIMD_INLINE void stream(void* p, vec v) { _mm512_stream_si512(static_cast<__m512i*>(p), v); }
  // Codes of `Bits` bits (8 or 16), zero-extended to 32-bit lanes, and back (values fit).
  template <int Bits>
  static MIXPREC_SIMD_INLINE vec load_codes(const void* p) {
    if constexpr (Bits == 8) {
      return _mm512_cvtepu8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    } else {
      return _mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
    }
  }
  template <int Bits>
  static MIXPREC_SIMD_INLINE void store_codes(void* p, vec v) {
    if constexpr (Bits == 8) {
      _mm_storeu_si128(static_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
    } else {
      _mm256_storeu_si256(static_cast<__m256i*>(p), _mm512_cvtepi32_epi16(v));
    }
  }

  static MIXPREC_SIMD_INLINE vec and_(vec a, vec b) { return _mm512_and_si512(a, b); }
  static MIXPREC_SIMD_INLINE vec andnot(vec a, vec b) { return _mm512_andnot_si512(a, b); }  // ~a & b
  static MIXPREC_SIMD_INLINE vec or_(vec a, vec b) { return _mm512_or_si512(a, b); }
  static MIXPREC_SIMD_INLINE vec add(vec a, vec b) { return _mm512_add_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec sub(vec a, vec b) { return _mm512_sub_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec min_u(vec a, vec b) { return _mm512_min_epu32(a, b); }
  template <int N>
  static MIXPREC_SIMD_INLINE vec shift_right(vec a) {
    return _mm512_srli_epi32(a, N);
  }
  template <int N>
  static MIXPREC_SIMD_INLINE vec shift_left(vec a) {
    return _mm512_slli_epi32(a, N);
  }
  static MIXPREC_SIMD_INLINE vec shift_right_each(vec a, vec counts) { return _mm512_srlv_epi32(a, counts); }
  static MIXPREC_SIMD_INLINE vec shift_left_each(vec a, vec counts) { return _mm512_sllv_epi32(a, counts); }
  static MIXPREC_SIMD_INLINE vec max_i(vec a, vec b) { return _mm512_max_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec min_i(vec a, vec b) { return _mm512_min_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec sign_fill(vec a) { return _mm512_srai_epi32(a, 31); }
  // Signed 32-bit comparisons (the kernels compare values below 2^31 only).
  static MIXPREC_SIMD_INLINE mask less(vec a, vec b) { return _mm512_cmplt_epi32_mask(a, b); }
  static MIXPREC_SIMD_INLINE mask less_equal(vec a, vec b) { return _mm512_cmple_epi32_mask(a, b); }
  static MIXPREC_SIMD_INLINE mask equal(vec a, vec b) { return _mm512_cmpeq_epi32_mask(a, b); }
  static MIXPREC_SIMD_INLINE mask both(mask a, mask b) { return static_cast<mask>(a & b); }
  static MIXPREC_SIMD_INLINE mask either(mask a, mask b) { return static_cast<mask>(a | b); }
  static MIXPREC_SIMD_INLINE mask but_not(mask a, mask b) { return static_cast<mask>(a & ~b); }
  static MIXPREC_SIMD_INLINE vec select(mask m, vec if_set, vec if_clear) {
    return _mm512_mask_blend_epi32(m, if_clear, if_set);
  }
  static MIXPREC_SIMD_INLINE unsigned lanes(mask m) { return m; }
  // The F16C conversions between float lanes and binary16 in memory.
  template <int Imm>
  static MIXPREC_SIMD_INLINE void store_float_as_half(void* p, vec x) {
    _mm256_storeu_si256(static_cast<__m256i*>(p), _mm512_cvtps_ph(_mm512_castsi512_ps(x), Imm));
  }
  static MIXPREC_SIMD_INLINE vec load_half_as_float(const void* p) {
    return _mm512_castps_si512(_mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p))));
  }
  // round(float lanes × scale) to integers, rounding to nearest even or toward zero as the
  // instruction's own rounding field says (MXCSR.RC is not consulted).
  template <bool TowardZero>
  static MIXPREC_SIMD_INLINE vec round_scaled_to_int(vec float_bits, float scale) {
    const __m512 scaled = _mm512_mul_ps(_mm512_castsi512_ps(float_bits), _mm512_set1_ps(scale));
    return _mm512_cvt_roundps_epi32(scaled,
                                    (TowardZero ? _MM_FROUND_TO_ZERO : _MM_FROUND_TO_NEAREST_INT) | _MM_FROUND_NO_EXC);
  }
  // Bits of float(integer lanes) × scale, for small non-negative integers (exact).
  static MIXPREC_SIMD_INLINE vec int_to_float_bits_scaled(vec a, float scale) {
    return _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(a), _mm512_set1_ps(scale)));
  }
};

#include "kernels.inl"

}  // namespace mixprec::detail::simd_avx512
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
MIXPREC_TARGET_END

// The AVX-512 BF16 extension, in a region of its own so that nothing else is compiled for it.
MIXPREC_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
namespace mixprec::detail::simd_avx512_bf16 {

// float -> bfloat16 by vcvtneps2bf16: round to nearest even, overflow to infinity, as
// convert<bfloat16>(x, nearest_even, non_finite) does, except that the instruction treats float
// subnormal inputs as zero and keeps NaN payloads: those lanes are redone by the scalar function.
template <class To>
void encode_bfloat16_instruction(const float* in, std::size_t n, To* out) {
  using ops = simd_avx512::ops;
  using vec = ops::vec;
  constexpr std::size_t width = ops::width;
  const vec absolute = ops::set1(0x7FFFFFFFu), infinity = ops::set1(0x7F800000u), min_normal = ops::set1(0x00800000u);
  const vec zero = ops::set1(0);
  std::size_t i = 0;
  for (; i + width <= n; i += width) {
    const vec x = ops::load(in + i);
    const vec magnitude = ops::and_(x, absolute);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), (__m256i)_mm512_cvtneps_pbh(_mm512_castsi512_ps(x)));
    const ops::mask redo = ops::either(ops::less(infinity, magnitude),
                                       ops::but_not(ops::less(magnitude, min_normal), ops::equal(magnitude, zero)));
    const unsigned lanes = ops::lanes(redo);
    if (lanes != 0) {
      for (std::size_t lane = 0; lane < width; ++lane) {
        if ((lanes >> lane & 1u) != 0) {
          out[i + lane] = convert_value<To>(in[i + lane], round_mode::nearest_even, overflow::non_finite, 0);
        }
      }
    }
  }
  for (; i < n; ++i) out[i] = convert_value<To>(in[i], round_mode::nearest_even, overflow::non_finite, 0);
}

}  // namespace mixprec::detail::simd_avx512_bf16
MIXPREC_TARGET_END
#endif
