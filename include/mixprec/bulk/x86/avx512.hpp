// The AVX-512 (F + BW + VL) path: 16 lanes of 32 bits, comparisons into mask registers.  The
// conversion algorithms are the generic ones of kernels.inl, compiled here for this target.
#pragma once

#include "../simd_path.hpp"

#if MIXPREC_X86_SIMD
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../../detail/constexpr_math.hpp"
#include "../../detail/convert_bits.hpp"
#include "../../detail/philox.hpp"
#include "../../minifloat.hpp"
#include "target.hpp"

MIXPREC_AVX512_REGION_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
namespace mixprec::detail::simd_avx512 {

struct ops {
  static constexpr int width = 16;
  using vec = __m512i;
  using mask = __mmask16;
  static constexpr unsigned all_lanes = 0xFFFFu;
  static constexpr std::size_t register_bytes = 64;
  static constexpr bool has_half_instructions = true;  // F16C

  static MIXPREC_SIMD_INLINE vec set1(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static MIXPREC_SIMD_INLINE vec load(const void* p) { return _mm512_loadu_si512(p); }
  // Stores of 16, 32 and 64 bytes; `stream` asks for a non-temporal store (the address is then
  // aligned to the store's size).
  static MIXPREC_SIMD_INLINE void store_bytes(void* p, __m128i v, bool stream) {
    if (stream) {
      _mm_stream_si128(static_cast<__m128i*>(p), v);
    } else {
      _mm_storeu_si128(static_cast<__m128i*>(p), v);
    }
  }
  static MIXPREC_SIMD_INLINE void store_bytes(void* p, __m256i v, bool stream) {
    if (stream) {
      _mm256_stream_si256(static_cast<__m256i*>(p), v);
    } else {
      _mm256_storeu_si256(static_cast<__m256i*>(p), v);
    }
  }
  // Codes of `Group` vectors packed into one 64-byte store (2 of 16-bit codes, 4 of 8-bit).
  template <int Bits, std::size_t Group>
  static MIXPREC_SIMD_INLINE void store_code_group(void* p, const vec* codes, bool stream) {
    __m512i packed;
    if constexpr (Bits == 16) {
      static_assert(Group == 2, "two vectors of 16-bit codes fill a register");
      packed = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(codes[0])),
                                  _mm512_cvtepi32_epi16(codes[1]), 1);
    } else {
      static_assert(Bits == 8 && Group == 4, "four vectors of 8-bit codes fill a register");
      packed = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(codes[0]));
      packed = _mm512_inserti32x4(packed, _mm512_cvtepi32_epi8(codes[1]), 1);
      packed = _mm512_inserti32x4(packed, _mm512_cvtepi32_epi8(codes[2]), 2);
      packed = _mm512_inserti32x4(packed, _mm512_cvtepi32_epi8(codes[3]), 3);
    }
    store(p, packed, stream);
  }
  static MIXPREC_SIMD_INLINE void store(void* p, vec v, bool stream) {
    if (stream) {
      _mm512_stream_si512(static_cast<__m512i*>(p), v);
    } else {
      _mm512_storeu_si512(p, v);
    }
  }
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
  static MIXPREC_SIMD_INLINE void store_codes(void* p, vec v, bool stream) {
    if constexpr (Bits == 4) {
      // Two codes per byte, lane 2k's in the low nibble (mx/packing.hpp): a 64-bit shift brings
      // lane 2k + 1's code next to lane 2k's in the low byte of each 64-bit lane, which vpmovqb
      // keeps.  The codes must be below 16.
      const __m128i bytes = _mm512_cvtepi64_epi8(_mm512_or_si512(v, _mm512_srli_epi64(v, 28)));
      if (stream) {
        _mm_stream_si64(static_cast<long long*>(p), _mm_cvtsi128_si64(bytes));
      } else {
        _mm_storel_epi64(static_cast<__m128i*>(p), bytes);
      }
    } else if constexpr (Bits == 6) {
      // Four codes in three bytes (mx/packing.hpp: e0 | e1 << 6 | e2 << 12 | e3 << 18): lane 4g + i
      // shifted left by 6i, each group of four ORed into its first lane, those four lanes
      // compressed into the low quarter and their low three bytes written as twelve by a masked
      // byte store (no non-temporal store of that size: `stream` is not used; through a buffer
      // and memcpy, MXFP6 rows took 103 µs in cache against 91).  The codes must be below 64.
      (void)stream;
      const __m512i shifted = _mm512_sllv_epi32(v, _mm512_set4_epi32(18, 12, 6, 0));
      const __m512i pairs = _mm512_or_si512(shifted, _mm512_srli_epi64(shifted, 32));
      const __m512i groups = _mm512_or_si512(pairs, _mm512_bsrli_epi128(pairs, 8));
      const __m128i firsts = _mm512_castsi512_si128(_mm512_maskz_compress_epi32(0x1111, groups));
      const __m128i bytes =
          _mm_shuffle_epi8(firsts, _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1));
      _mm_mask_storeu_epi8(p, 0x0FFF, bytes);
    } else if constexpr (Bits == 8) {
      store_bytes(p, _mm512_cvtepi32_epi8(v), stream);
    } else {
      store_bytes(p, _mm512_cvtepi32_epi16(v), stream);
    }
  }

  static MIXPREC_SIMD_INLINE vec and_(vec a, vec b) { return _mm512_and_si512(a, b); }
  static MIXPREC_SIMD_INLINE vec andnot(vec a, vec b) { return _mm512_andnot_si512(a, b); }  // ~a & b
  static MIXPREC_SIMD_INLINE vec or_(vec a, vec b) { return _mm512_or_si512(a, b); }
  static MIXPREC_SIMD_INLINE vec or_and(vec a, vec b, vec c) {
    return _mm512_ternarylogic_epi32(a, b, c, 0xF8);
  }  // a | (b & c)
  static MIXPREC_SIMD_INLINE vec add(vec a, vec b) { return _mm512_add_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec sub(vec a, vec b) { return _mm512_sub_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec min_u(vec a, vec b) { return _mm512_min_epu32(a, b); }
  static MIXPREC_SIMD_INLINE vec max_u(vec a, vec b) { return _mm512_max_epu32(a, b); }
  static MIXPREC_SIMD_INLINE std::uint32_t horizontal_max_u(vec a) {
    return static_cast<std::uint32_t>(_mm512_reduce_max_epu32(a));
  }
  // Lane j: the largest unsigned lane of v[j], for 16 vectors at once.  Each step halves the
  // lanes a vector holds of each of its inputs and doubles the inputs it holds: 256-bit halves,
  // then 128-bit quarters, then 64-bit and 32-bit pairs (46 instructions against 16 reductions
  // of 9 each).  The last step leaves input 4i + k in lane 4k + i: one permutation sorts them.
  static MIXPREC_SIMD_INLINE vec horizontal_max_u_each(const vec* v) {
    vec halves[8], quarters[4], pairs[2];
    for (std::size_t p = 0; p < 8; ++p) {  // [v0 lanes 0-7 | v1 lanes 0-7] against the upper lanes
      halves[p] = _mm512_max_epu32(_mm512_shuffle_i32x4(v[2 * p], v[2 * p + 1], 0x44),
                                   _mm512_shuffle_i32x4(v[2 * p], v[2 * p + 1], 0xEE));
    }
    for (std::size_t p = 0; p < 4; ++p) {  // quarter k: input 4p + k's four partial maxima
      quarters[p] = _mm512_max_epu32(_mm512_shuffle_i32x4(halves[2 * p], halves[2 * p + 1], 0x88),
                                     _mm512_shuffle_i32x4(halves[2 * p], halves[2 * p + 1], 0xDD));
    }
    for (std::size_t p = 0; p < 2; ++p) {  // quarter k: inputs 8p + k and 8p + 4 + k, two each
      pairs[p] = _mm512_max_epu32(_mm512_unpacklo_epi64(quarters[2 * p], quarters[2 * p + 1]),
                                  _mm512_unpackhi_epi64(quarters[2 * p], quarters[2 * p + 1]));
    }
    const __m512 low = _mm512_castsi512_ps(pairs[0]), high = _mm512_castsi512_ps(pairs[1]);
    const vec each = _mm512_max_epu32(_mm512_castps_si512(_mm512_shuffle_ps(low, high, 0x88)),
                                      _mm512_castps_si512(_mm512_shuffle_ps(low, high, 0xDD)));
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), each);
  }
  static MIXPREC_SIMD_INLINE vec multiply_float(vec float_bits, float factor) {
    return _mm512_castps_si512(_mm512_mul_ps(_mm512_castsi512_ps(float_bits), _mm512_set1_ps(factor)));
  }
  static MIXPREC_SIMD_INLINE vec add_float(vec a, vec b) {
    return _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)));
  }
  static MIXPREC_SIMD_INLINE vec subtract_float(vec a, vec b) {
    return _mm512_castps_si512(_mm512_sub_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)));
  }
  // The value, hidden from the optimiser: a product passed through it is never fused with a
  // later addition (the compiler may contract a multiply and an add into an FMA otherwise).
  static MIXPREC_SIMD_INLINE vec opaque(vec a) {
    asm("" : "+v"(a));
    return a;
  }
  static MIXPREC_SIMD_INLINE vec divide_float(vec float_bits, float divisor) {
    return _mm512_castps_si512(_mm512_div_ps(_mm512_castsi512_ps(float_bits), _mm512_set1_ps(divisor)));
  }
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
  // F16C: float lanes to binary16 codes in 32-bit lanes, and binary16 in memory to floats.
  template <int Imm>
  static MIXPREC_SIMD_INLINE vec float_to_half_lanes(vec x) {
    return _mm512_cvtepu16_epi32(_mm512_cvtps_ph(_mm512_castsi512_ps(x), Imm));
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
  // Lanes whose float is neither NaN nor subnormal (zero and infinity included): the lanes the
  // conversion instructions get right.  |x| - 2^-126, read unsigned, is above the range of
  // finite normal floats exactly for NaNs and for subnormals other than zero.
  static MIXPREC_SIMD_INLINE mask not_special_or_subnormal(vec x) {
    const vec shifted = _mm512_sub_epi32(_mm512_and_si512(x, set1(0x7FFFFFFFu)), set1(0x00800000u));
    return static_cast<mask>(~_mm512_mask_cmpneq_epu32_mask(_mm512_cmpgt_epu32_mask(shifted, set1(0x7F000000u)),
                                                            shifted, set1(0xFF800000u)));
  }
  // Bits of float(integer lanes) × scale, for small non-negative integers (exact).
  static MIXPREC_SIMD_INLINE vec int_to_float_bits_scaled(vec a, float scale) {
    return _mm512_castps_si512(_mm512_mul_ps(_mm512_cvtepi32_ps(a), _mm512_set1_ps(scale)));
  }
  // For Philox-4x32 (kernels::philox_lanes): the low and high 32 bits of each lane times m,
  // lane numbers 0, 1, ..., and the 4 x 4 transposition that turns one block per lane into
  // consecutive words: on input w[k] lane l holds word k of block l; on output e[j] lane t
  // holds word (16j + t) % 4 of block (16j + t) / 4.
  static MIXPREC_SIMD_INLINE vec xor_(vec a, vec b) { return _mm512_xor_si512(a, b); }
  static MIXPREC_SIMD_INLINE vec multiply_low(vec a, std::uint32_t m) { return _mm512_mullo_epi32(a, set1(m)); }
  static MIXPREC_SIMD_INLINE vec multiply_high(vec a, std::uint32_t m) {
    const vec even = _mm512_mul_epu32(a, set1(m));                        // 64-bit products, even lanes
    const vec odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), set1(m));  // odd lanes
    return _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  }
  static MIXPREC_SIMD_INLINE vec lane_numbers() {
    return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  }
  static MIXPREC_SIMD_INLINE void transpose_blocks(const vec* w, vec* e) {
    // Within each 128-bit quarter q: u[r] gets the four words of block 4q + r.
    const vec t0 = _mm512_unpacklo_epi32(w[0], w[1]), t1 = _mm512_unpacklo_epi32(w[2], w[3]);
    const vec t2 = _mm512_unpackhi_epi32(w[0], w[1]), t3 = _mm512_unpackhi_epi32(w[2], w[3]);
    const vec u0 = _mm512_unpacklo_epi64(t0, t1), u1 = _mm512_unpackhi_epi64(t0, t1);
    const vec u2 = _mm512_unpacklo_epi64(t2, t3), u3 = _mm512_unpackhi_epi64(t2, t3);
    // e[j] = quarter j of u0, u1, u2, u3 (blocks 4j ... 4j + 3).
    const vec v0 = _mm512_shuffle_i32x4(u0, u1, 0x44), v1 = _mm512_shuffle_i32x4(u2, u3, 0x44);  // q 0, 1
    const vec v2 = _mm512_shuffle_i32x4(u0, u1, 0xEE), v3 = _mm512_shuffle_i32x4(u2, u3, 0xEE);  // q 2, 3
    e[0] = _mm512_shuffle_i32x4(v0, v1, 0x88);
    e[1] = _mm512_shuffle_i32x4(v0, v1, 0xDD);
    e[2] = _mm512_shuffle_i32x4(v2, v3, 0x88);
    e[3] = _mm512_shuffle_i32x4(v2, v3, 0xDD);
  }
};

#include "../kernels.inl"
#include "half_kernels.inl"

}  // namespace mixprec::detail::simd_avx512
MIXPREC_AVX512_REGION_END

// The AVX-512 BF16 extension, in a region of its own so that nothing else is compiled for it.
MIXPREC_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
namespace mixprec::detail::simd_avx512_bf16 {

// float -> bfloat16 by vcvtneps2bf16: round to nearest even, overflow to infinity, as
// convert<bfloat16>(x, nearest_even, non_finite) does, except that the instruction treats float
// subnormal inputs as zero and keeps NaN payloads: those lanes are redone by the scalar function.
template <class To>
void encode_bfloat16_instruction(const float* in, std::size_t n, To* out, bool stream) {
  using ops = simd_avx512::ops;
  using vec = ops::vec;
  constexpr std::size_t width = ops::width;
  auto redo = [&](std::size_t at, ops::mask ok) {
    const unsigned done = ops::lanes(ok);
    if (done == ops::all_lanes) return;
    for (std::size_t lane = 0; lane < width; ++lane) {
      if ((done >> lane & 1u) == 0) {
        out[at + lane] = convert_value<To>(in[at + lane], round_mode::nearest_even, overflow::non_finite, 0);
      }
    }
  };
  std::size_t i = 0;
  for (; i + 2 * width <= n; i += 2 * width) {  // two vectors fill one 64-byte store
    const vec low = ops::load(in + i), high = ops::load(in + i + width);
    ops::store(out + i, (__m512i)_mm512_cvtne2ps_pbh(_mm512_castsi512_ps(high), _mm512_castsi512_ps(low)), stream);
    redo(i, ops::not_special_or_subnormal(low));
    redo(i + width, ops::not_special_or_subnormal(high));
  }
  for (; i < n; ++i) out[i] = convert_value<To>(in[i], round_mode::nearest_even, overflow::non_finite, 0);
}

}  // namespace mixprec::detail::simd_avx512_bf16
MIXPREC_TARGET_END
#endif
