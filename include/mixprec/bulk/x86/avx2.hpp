// The AVX2 path: 8 lanes of 32 bits, comparisons as all-ones lanes.  The conversion algorithms
// are the generic ones of kernels.inl, compiled here for this target.
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

MIXPREC_TARGET_BEGIN("avx2,fma,f16c")
namespace mixprec::detail::simd_avx2 {

struct ops {
  static constexpr int width = 8;
  using vec = __m256i;
  using mask = __m256i;
  static constexpr unsigned all_lanes = 0xFFu;
  static constexpr std::size_t register_bytes = 32;
  static constexpr bool has_half_instructions = true;  // F16C

  static MIXPREC_SIMD_INLINE vec set1(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
  static MIXPREC_SIMD_INLINE vec load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  // Stores of 8, 16 and 32 bytes; `stream` asks for a non-temporal store (the address is then
  // aligned to the store's size).
  static MIXPREC_SIMD_INLINE void store_low_8_bytes(void* p, __m128i v, bool stream) {
    if (stream) {
      _mm_stream_si64(static_cast<long long*>(p), _mm_cvtsi128_si64(v));
    } else {
      _mm_storel_epi64(static_cast<__m128i*>(p), v);
    }
  }
  static MIXPREC_SIMD_INLINE void store_bytes(void* p, __m128i v, bool stream) {
    if (stream) {
      _mm_stream_si128(static_cast<__m128i*>(p), v);
    } else {
      _mm_storeu_si128(static_cast<__m128i*>(p), v);
    }
  }
  // Codes of `Group` vectors packed into one 32-byte store (2 of 16-bit codes, 4 of 8-bit).
  // packus works within 128-bit halves; permute4x64 (0, 2, 1, 3) puts the quarters in order.
  template <int Bits, std::size_t Group>
  static MIXPREC_SIMD_INLINE void store_code_group(void* p, const vec* codes, bool stream) {
    if constexpr (Bits == 16) {
      static_assert(Group == 2, "two vectors of 16-bit codes fill a register");
      store(p, _mm256_permute4x64_epi64(_mm256_packus_epi32(codes[0], codes[1]), 0b11011000), stream);
    } else {
      static_assert(Bits == 8 && Group == 4, "four vectors of 8-bit codes fill a register");
      const __m256i words01 = _mm256_permute4x64_epi64(_mm256_packus_epi32(codes[0], codes[1]), 0b11011000);
      const __m256i words23 = _mm256_permute4x64_epi64(_mm256_packus_epi32(codes[2], codes[3]), 0b11011000);
      store(p, _mm256_permute4x64_epi64(_mm256_packus_epi16(words01, words23), 0b11011000), stream);
    }
  }
  static MIXPREC_SIMD_INLINE void store(void* p, vec v, bool stream) {
    if (stream) {
      _mm256_stream_si256(static_cast<__m256i*>(p), v);
    } else {
      _mm256_storeu_si256(static_cast<__m256i*>(p), v);
    }
  }
  template <int Bits>
  static MIXPREC_SIMD_INLINE vec load_codes(const void* p) {
    if constexpr (Bits == 8) {
      return _mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p)));
    } else {
      return _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    }
  }
  template <int Bits>
  static MIXPREC_SIMD_INLINE void store_codes(void* p, vec v, bool stream) {
    if constexpr (Bits == 4) {
      // Two codes per byte, lane 2k's in the low nibble (mx/packing.hpp): a 64-bit shift brings
      // lane 2k + 1's code next to lane 2k's in the low byte of each 64-bit lane; those four bytes
      // (two per 128-bit half) are gathered into the low 32 bits.  The codes must be below 16.
      const __m256i pairs = _mm256_or_si256(v, _mm256_srli_epi64(v, 28));
      const __m256i gathered =
          _mm256_shuffle_epi8(pairs, _mm256_setr_epi8(0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                                      -1, -1, 0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
      const int word =
          _mm_cvtsi128_si32(_mm_or_si128(_mm256_castsi256_si128(gathered), _mm256_extracti128_si256(gathered, 1)));
      if (stream) {
        _mm_stream_si32(static_cast<int*>(p), word);
      } else {
        std::memcpy(p, &word, sizeof word);
      }
      return;
    }
    if constexpr (Bits == 6) {
      // Four codes in three bytes (mx/packing.hpp: e0 | e1 << 6 | e2 << 12 | e3 << 18): lane 4g + i
      // shifted left by 6i, each group of four ORed into its first lane, the two 24-bit groups
      // written as six bytes (no six-byte non-temporal store: `stream` is not used).  The codes
      // must be below 64.
      const __m256i shifted = _mm256_sllv_epi32(v, _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18));
      const __m256i pairs = _mm256_or_si256(shifted, _mm256_srli_epi64(shifted, 32));
      const __m256i groups = _mm256_or_si256(pairs, _mm256_srli_si256(pairs, 8));
      const auto low = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm256_castsi256_si128(groups)));
      const auto high = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(groups, 1)));
      const unsigned char bytes[6] = {static_cast<unsigned char>(low),       static_cast<unsigned char>(low >> 8),
                                      static_cast<unsigned char>(low >> 16), static_cast<unsigned char>(high),
                                      static_cast<unsigned char>(high >> 8), static_cast<unsigned char>(high >> 16)};
      std::memcpy(p, bytes, sizeof bytes);
      return;
    }
    // packus works within 128-bit halves: [a0..a3 a0..a3 | a4..a7 a4..a7]; gather the low
    // quarter of each half.  The values fit, so the saturation never acts.
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0b1000);
    if constexpr (Bits == 8) {
      const __m256i bytes = _mm256_packus_epi16(words, words);
      store_low_8_bytes(p, _mm256_castsi256_si128(bytes), stream);
    } else {
      store_bytes(p, _mm256_castsi256_si128(words), stream);
    }
  }

  static MIXPREC_SIMD_INLINE vec and_(vec a, vec b) { return _mm256_and_si256(a, b); }
  static MIXPREC_SIMD_INLINE vec andnot(vec a, vec b) { return _mm256_andnot_si256(a, b); }
  static MIXPREC_SIMD_INLINE vec or_(vec a, vec b) { return _mm256_or_si256(a, b); }
  static MIXPREC_SIMD_INLINE vec or_and(vec a, vec b, vec c) {
    return _mm256_or_si256(a, _mm256_and_si256(b, c));
  }  // a | (b & c)
  static MIXPREC_SIMD_INLINE vec add(vec a, vec b) { return _mm256_add_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec sub(vec a, vec b) { return _mm256_sub_epi32(a, b); }
  static MIXPREC_SIMD_INLINE vec min_u(vec a, vec b) { return _mm256_min_epu32(a, b); }
  static MIXPREC_SIMD_INLINE vec max_u(vec a, vec b) { return _mm256_max_epu32(a, b); }
  static MIXPREC_SIMD_INLINE std::uint32_t horizontal_max_u(vec a) {
    __m128i m = _mm_max_epu32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0b01001110));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0b10110001));
    return static_cast<std::uint32_t>(_mm_cvtsi128_si32(m));
  }
  // Lane j: the largest unsigned lane of v[j], for 8 vectors at once (as x86/avx512.hpp's:
  // 128-bit halves, then 64-bit and 32-bit pairs; input 2i + h ends in lane 4h + i).
  static MIXPREC_SIMD_INLINE vec horizontal_max_u_each(const vec* v) {
    vec halves[4], pairs[2];
    for (std::size_t p = 0; p < 4; ++p) {  // half h: input 2p + h's four partial maxima
      halves[p] = _mm256_max_epu32(_mm256_permute2x128_si256(v[2 * p], v[2 * p + 1], 0x20),
                                   _mm256_permute2x128_si256(v[2 * p], v[2 * p + 1], 0x31));
    }
    for (std::size_t p = 0; p < 2; ++p) {  // half h: inputs 4p + h and 4p + 2 + h, two each
      pairs[p] = _mm256_max_epu32(_mm256_unpacklo_epi64(halves[2 * p], halves[2 * p + 1]),
                                  _mm256_unpackhi_epi64(halves[2 * p], halves[2 * p + 1]));
    }
    const __m256 low = _mm256_castsi256_ps(pairs[0]), high = _mm256_castsi256_ps(pairs[1]);
    const vec each = _mm256_max_epu32(_mm256_castps_si256(_mm256_shuffle_ps(low, high, 0x88)),
                                      _mm256_castps_si256(_mm256_shuffle_ps(low, high, 0xDD)));
    return _mm256_permutevar8x32_epi32(each, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
  static MIXPREC_SIMD_INLINE vec multiply_float(vec float_bits, float factor) {
    return _mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(float_bits), _mm256_set1_ps(factor)));
  }
  static MIXPREC_SIMD_INLINE vec add_float(vec a, vec b) {
    return _mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b)));
  }
  static MIXPREC_SIMD_INLINE vec subtract_float(vec a, vec b) {
    return _mm256_castps_si256(_mm256_sub_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b)));
  }
  // The value, hidden from the optimiser: a product passed through it is never fused with a
  // later addition (the compiler may contract a multiply and an add into an FMA otherwise).
  static MIXPREC_SIMD_INLINE vec opaque(vec a) {
    asm("" : "+x"(a));
    return a;
  }
  static MIXPREC_SIMD_INLINE vec divide_float(vec float_bits, float divisor) {
    return _mm256_castps_si256(_mm256_div_ps(_mm256_castsi256_ps(float_bits), _mm256_set1_ps(divisor)));
  }
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
  static MIXPREC_SIMD_INLINE vec float_to_half_lanes(vec x) {
    return _mm256_cvtepu16_epi32(_mm256_cvtps_ph(_mm256_castsi256_ps(x), Imm));
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
  // Lanes whose float is neither NaN nor subnormal (zero and infinity included).  With the
  // sign bit flipped, the unsigned comparison becomes a signed one.
  static MIXPREC_SIMD_INLINE mask not_special_or_subnormal(vec x) {
    const vec magnitude = _mm256_and_si256(x, set1(0x7FFFFFFFu));
    const mask nan = _mm256_cmpgt_epi32(magnitude, set1(0x7F800000u));
    const mask subnormal =
        _mm256_andnot_si256(_mm256_cmpeq_epi32(magnitude, set1(0)), _mm256_cmpgt_epi32(set1(0x00800000u), magnitude));
    return _mm256_xor_si256(_mm256_or_si256(nan, subnormal), set1(0xFFFFFFFFu));
  }
  static MIXPREC_SIMD_INLINE vec int_to_float_bits_scaled(vec a, float scale) {
    return _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(scale)));
  }
  // For Philox-4x32 (kernels::philox_lanes): the low and high 32 bits of each lane times m,
  // lane numbers 0, 1, ..., and the transposition that turns one block per lane into
  // consecutive words: on input w[k] lane l holds word k of block l; on output e[j] lane t
  // holds word (8j + t) % 4 of block (8j + t) / 4.
  static MIXPREC_SIMD_INLINE vec xor_(vec a, vec b) { return _mm256_xor_si256(a, b); }
  static MIXPREC_SIMD_INLINE vec multiply_low(vec a, std::uint32_t m) { return _mm256_mullo_epi32(a, set1(m)); }
  static MIXPREC_SIMD_INLINE vec multiply_high(vec a, std::uint32_t m) {
    const vec even = _mm256_mul_epu32(a, set1(m));                        // 64-bit products, even lanes
    const vec odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), set1(m));  // odd lanes
    return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  }
  static MIXPREC_SIMD_INLINE vec lane_numbers() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
  static MIXPREC_SIMD_INLINE void transpose_blocks(const vec* w, vec* e) {
    // Within each 128-bit half h: u[r] gets the four words of block 4h + r.
    const vec t0 = _mm256_unpacklo_epi32(w[0], w[1]), t1 = _mm256_unpacklo_epi32(w[2], w[3]);
    const vec t2 = _mm256_unpackhi_epi32(w[0], w[1]), t3 = _mm256_unpackhi_epi32(w[2], w[3]);
    const vec u0 = _mm256_unpacklo_epi64(t0, t1), u1 = _mm256_unpackhi_epi64(t0, t1);
    const vec u2 = _mm256_unpacklo_epi64(t2, t3), u3 = _mm256_unpackhi_epi64(t2, t3);
    e[0] = _mm256_permute2x128_si256(u0, u1, 0x20);  // blocks 0, 1
    e[1] = _mm256_permute2x128_si256(u2, u3, 0x20);  // blocks 2, 3
    e[2] = _mm256_permute2x128_si256(u0, u1, 0x31);  // blocks 4, 5
    e[3] = _mm256_permute2x128_si256(u2, u3, 0x31);  // blocks 6, 7
  }
};

#include "../kernels.inl"
#include "half_kernels.inl"

}  // namespace mixprec::detail::simd_avx2
MIXPREC_TARGET_END
#endif
