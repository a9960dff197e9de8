// The AVX2 kernels of the narrow integers' bulk conversion (bulk/intn_pack.hpp): float -> packed
// codes for the deterministic rounding modes, packed codes -> float.  Bit for bit the scalar
// conversion of intn_convert.hpp (tests/intn/intn_pack_test.cpp checks every path): the input is
// first clamped to [min - 1, max + 1], which changes no result (every value beyond rounds to an
// integer beyond, and clamps to the same end) and keeps the float arithmetic below exact; then
// rounded to an integer, clamped to [min, max], packed.  NaN becomes +0 first, so it gives 0.
// AVX-512 CPUs run these kernels too (the work is bound by reading the floats).
#pragma once

#include "../simd_path.hpp"

#if MIXPREC_X86_SIMD
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../detail/special_codes.hpp"
#include "target.hpp"

MIXPREC_TARGET_BEGIN("avx2,fma,f16c")
namespace mixprec::detail::intn_avx2 {

// 8 floats rounded by Mode (deterministic modes), clamped to [Lo, Hi], as int32 lanes.
template <round_mode Mode, int Lo, int Hi>
MIXPREC_SIMD_INLINE __m256i round_clamp(__m256 x) {
  x = _mm256_and_ps(x, _mm256_cmp_ps(x, x, _CMP_ORD_Q));  // NaN -> +0
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(Lo - 1.0f)), _mm256_set1_ps(Hi + 1.0f));
  __m256 r;
  if constexpr (Mode == round_mode::nearest_even) {
    r = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  } else if constexpr (Mode == round_mode::toward_zero) {
    r = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  } else if constexpr (Mode == round_mode::upward) {
    r = _mm256_round_ps(x, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
  } else if constexpr (Mode == round_mode::downward) {
    r = _mm256_round_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  } else {
    // |x| = |t| + frac with t = trunc(x) (x - t is exact); one step away from zero when the mode
    // says so, as round_up decides for the cut-off part frac.
    const __m256 sign_bit = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(sign_bit, _mm256_sub_ps(x, t));
    const __m256 step = _mm256_or_ps(_mm256_and_ps(x, sign_bit), _mm256_set1_ps(1.0f));
    const __m256 half = _mm256_set1_ps(0.5f);
    __m256 away;
    if constexpr (Mode == round_mode::nearest_away) {
      away = _mm256_cmp_ps(frac, half, _CMP_GE_OQ);
    } else if constexpr (Mode == round_mode::nearest_zero) {
      away = _mm256_cmp_ps(frac, half, _CMP_GT_OQ);
    } else {
      static_assert(Mode == round_mode::to_odd, "the stochastic modes: round_clamp_stochastic");
      const __m256i t_odd = _mm256_and_si256(_mm256_cvttps_epi32(t), _mm256_set1_epi32(1));
      const __m256 t_even = _mm256_castsi256_ps(_mm256_cmpeq_epi32(t_odd, _mm256_setzero_si256()));
      away = _mm256_and_ps(t_even, _mm256_cmp_ps(frac, _mm256_setzero_ps(), _CMP_NEQ_OQ));
    }
    r = _mm256_add_ps(t, _mm256_and_ps(away, step));
  }
  r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(static_cast<float>(Lo))), _mm256_set1_ps(static_cast<float>(Hi)));
  return _mm256_cvttps_epi32(r);
}

// 8 floats rounded stochastically with their random words, clamped to [Lo, Hi], as int32 lanes:
// intn_convert.hpp's round_to_intn read from the float's bits with integer lane arithmetic.
// |x| = significand × 2^-shift (shift = 150 - max(field, 1), at least 16 below 2^8); the part
// cut off at 2^0, as a 32-bit fraction (truncated: round_pack.hpp's round_up), carries into the
// integer when fraction + random overflows 32 bits, or, with Equal, when anything was cut off
// and the word's top bit is set.  The variable shifts give 0 for counts of 32 or more (and for
// the negative counts read as unsigned), which is the scalar rule's value in each such case.
// |x| >= 2^8 and infinity clamp; NaN gives 0.
template <bool Equal, int Lo, int Hi>
MIXPREC_SIMD_INLINE __m256i round_clamp_stochastic(__m256 x, __m256i random) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1), thirty_two = _mm256_set1_epi32(32);
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i field = _mm256_srli_epi32(magnitude, 23);
  const __m256i hidden = _mm256_andnot_si256(_mm256_cmpeq_epi32(field, zero), _mm256_set1_epi32(0x800000));
  const __m256i significand = _mm256_or_si256(_mm256_and_si256(magnitude, _mm256_set1_epi32(0x7FFFFF)), hidden);
  const __m256i shift = _mm256_sub_epi32(_mm256_set1_epi32(150), _mm256_max_epi32(field, one));
  const __m256i kept = _mm256_srlv_epi32(significand, shift);
  const __m256i lost = _mm256_sub_epi32(significand, _mm256_sllv_epi32(kept, shift));
  __m256i carry;  // all ones where the magnitude goes one up
  if constexpr (Equal) {
    carry = _mm256_andnot_si256(_mm256_cmpeq_epi32(lost, zero), _mm256_srai_epi32(random, 31));
  } else {
    const __m256i fraction = _mm256_or_si256(_mm256_sllv_epi32(lost, _mm256_sub_epi32(thirty_two, shift)),
                                             _mm256_srlv_epi32(lost, _mm256_sub_epi32(shift, thirty_two)));
    const __m256i sum = _mm256_add_epi32(fraction, random);  // wrapped: the carry made it smaller
    carry = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(sum, fraction), sum), _mm256_set1_epi32(-1));
  }
  __m256i rounded = _mm256_sub_epi32(kept, carry);
  rounded = _mm256_blendv_epi8(rounded, _mm256_set1_epi32(256), _mm256_cmpgt_epi32(field, _mm256_set1_epi32(134)));
  __m256i value = _mm256_sign_epi32(rounded, bits);  // negated where the sign bit is set (0 stays 0)
  value = _mm256_min_epi32(_mm256_max_epi32(value, _mm256_set1_epi32(Lo)), _mm256_set1_epi32(Hi));
  return _mm256_andnot_si256(_mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000)), value);  // NaN: 0
}

// 32 codes (0..255 in int32 lanes of a, b, c, d, in that order) as 32 bytes in order.  packus
// works within 128-bit halves, leaving the dwords as a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7.
MIXPREC_SIMD_INLINE __m256i bytes_in_order(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(a, b), _mm256_packus_epi32(c, d));
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The codes of in[0..32), one per byte; under stochastic rounding with the words random[0..32).
template <round_mode Mode, int Lo, int Hi, int Mask>
MIXPREC_SIMD_INLINE __m256i codes_32(const float* in, const std::uint32_t* random) {
  const __m256i mask = _mm256_set1_epi32(Mask);
  __m256i v[4];
  for (int i = 0; i < 4; ++i) {
    const __m256 x = _mm256_loadu_ps(in + std::ptrdiff_t{8} * i);
    if constexpr (Mode == round_mode::stochastic || Mode == round_mode::stochastic_equal) {
      const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(random + std::ptrdiff_t{8} * i));
      v[i] = _mm256_and_si256(round_clamp_stochastic<Mode == round_mode::stochastic_equal, Lo, Hi>(x, words), mask);
    } else {
      (void)random;
      v[i] = _mm256_and_si256(round_clamp<Mode, Lo, Hi>(x), mask);
    }
  }
  return bytes_in_order(v[0], v[1], v[2], v[3]);
}

// Elements per step of pack_floats, and the bytes one step writes.
template <int Bits>
constexpr std::size_t pack_step = Bits == 4 ? 64 : (Bits == 2 ? 128 : 32);

// Packs in[0..n) (n a multiple of pack_step<Bits>) into n · Bits / 8 bytes; under stochastic
// rounding element i takes the word random[i] (null otherwise).
template <round_mode Mode, int Bits, int Lo, int Hi>
void pack_floats(const float* in, std::size_t n, unsigned char* out, const std::uint32_t* random = nullptr) {
  constexpr int mask = (1 << Bits) - 1;
  constexpr bool stochastic = Mode == round_mode::stochastic || Mode == round_mode::stochastic_equal;
  // The words of the 32 elements at in + offset.
  const auto words = [&](std::size_t offset) { return stochastic ? random + offset : nullptr; };
  for (std::size_t i = 0; i < n; i += pack_step<Bits>, in += pack_step<Bits>, random = words(pack_step<Bits>)) {
    if constexpr (Bits == 4) {
      // maddubs joins neighbouring bytes: e0 · 1 + e1 · 16, then packus makes them bytes again.
      const __m256i weights = _mm256_set1_epi16(0x1001);
      const __m256i low = _mm256_maddubs_epi16(codes_32<Mode, Lo, Hi, mask>(in, words(0)), weights);
      const __m256i high = _mm256_maddubs_epi16(codes_32<Mode, Lo, Hi, mask>(in + 32, words(32)), weights);
      const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(low, high), 0b11011000);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed);
      out += 32;
    } else if constexpr (Bits == 2) {
      // Pairs into 4-bit fields (maddubs: e0 + 4 e1), pairs of those into bytes (madd: f0 + 16 f1).
      __m256i quads[4];
      for (int q = 0; q < 4; ++q) {
        const __m256i pairs = _mm256_maddubs_epi16(
            codes_32<Mode, Lo, Hi, mask>(in + std::ptrdiff_t{32} * q, words(32 * static_cast<std::size_t>(q))),
            _mm256_set1_epi16(0x0401));
        quads[q] = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00100001));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes_in_order(quads[0], quads[1], quads[2], quads[3]));
      out += 32;
    } else {
      static_assert(Bits == 1, "packed intn kernels for 1, 2 and 4 bits");
      // Each code's bit 0 to the byte's top bit, then one bit per byte.
      const auto bits = static_cast<std::uint32_t>(
          _mm256_movemask_epi8(_mm256_slli_epi16(codes_32<Mode, Lo, Hi, mask>(in, words(0)), 7)));
      std::memcpy(out, &bits, 4);
      out += 4;
    }
  }
}

// in[0..n) one code per byte (n a multiple of 16) to float, through a table of the 16 values of
// the low 4 bits.
MIXPREC_SIMD_INLINE void store_values(__m128i values, float* out) {
  _mm256_storeu_ps(out, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(values)));
  _mm256_storeu_ps(out + 8, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(values, 8))));
}

// n (a multiple of 32) packed 2- or 1-bit codes to float.  Each group of 8 codes (Bits bytes,
// element 0 in the lowest bits) is broadcast to the 8 lanes, lane j shifted right by j × Bits and
// masked: the lane's code, which indexes the table of (at most 4) values held as floats.
template <int Bits>
inline void unpack_narrow(const unsigned char* in, std::size_t n, const signed char (&table)[16], float* out) {
  static_assert(Bits == 1 || Bits == 2, "2- and 1-bit codes (4-bit ones: unpack_nibbles)");
  const __m256 lut = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(table))));
  const __m256i shifts = _mm256_setr_epi32(0, Bits, 2 * Bits, 3 * Bits, 4 * Bits, 5 * Bits, 6 * Bits, 7 * Bits);
  const __m256i mask = _mm256_set1_epi32((1 << Bits) - 1);
  constexpr std::size_t bytes = std::size_t{4} * Bits;  // 32 codes: 8 bytes of int2, 4 of int1
  for (std::size_t i = 0; i < n; i += 32, in += bytes, out += 32) {
    std::uint64_t word = 0;  // x86 is little-endian: element 0 in the lowest bits
    std::memcpy(&word, in, bytes);
    for (std::size_t group = 0; group < 4; ++group) {
      const __m256i lanes = _mm256_set1_epi32(static_cast<int>(word >> (group * 8 * Bits)));
      const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(lanes, shifts), mask);
      _mm256_storeu_ps(out + 8 * group, _mm256_permutevar8x32_ps(lut, codes));
    }
  }
}

// n (a multiple of 32) packed 4-bit codes to float: low and high nibbles interleaved back into
// element order, then the table.
inline void unpack_nibbles(const unsigned char* in, std::size_t n, const signed char (&table)[16], float* out) {
  const __m128i lut = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table));
  const __m128i low_nibbles = _mm_set1_epi8(0x0F);
  for (std::size_t i = 0; i < n; i += 32, in += 16, out += 32) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
    const __m128i low = _mm_and_si128(bytes, low_nibbles);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), low_nibbles);
    store_values(_mm_shuffle_epi8(lut, _mm_unpacklo_epi8(low, high)), out);
    store_values(_mm_shuffle_epi8(lut, _mm_unpackhi_epi8(low, high)), out + 16);
  }
}

}  // namespace mixprec::detail::intn_avx2
MIXPREC_TARGET_END

#endif  // MIXPREC_X86_SIMD
