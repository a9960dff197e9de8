// The x86 code of gemm, each part compiled for its instruction set in a target region
// (bulk/x86/target.hpp), dispatch picking the one the CPU runs: the float micro-kernel
// (float_kernel.inl) for AVX2 and AVX-512, the AVX512-BF16 pair kernel (vdpbf16ps), and the
// inner loops of packing (bf16 pairs and keys for packing.hpp), which produce exactly what
// that header's plain loops produce.  The block transposes are detail/transpose.hpp's.
#pragma once

#include "../../bulk/simd_path.hpp"

#if MIXPREC_X86_SIMD
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "../../bulk/x86/target.hpp"
#include "../../config.hpp"
#include "tile.hpp"

MIXPREC_TARGET_BEGIN("avx2,fma")
namespace mixprec::detail::gemm_avx2 {

struct vector_ops {
  using type = __m256;
  static constexpr std::size_t width = 8;
  static MIXPREC_SIMD_INLINE type zero() { return _mm256_setzero_ps(); }
  static MIXPREC_SIMD_INLINE type set1(float x) { return _mm256_set1_ps(x); }
  static MIXPREC_SIMD_INLINE type load(const float* p) { return _mm256_loadu_ps(p); }
  static MIXPREC_SIMD_INLINE void store(float* p, type v) { _mm256_storeu_ps(p, v); }
  static MIXPREC_SIMD_INLINE type broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static MIXPREC_SIMD_INLINE type fma(type a, type b, type c) { return _mm256_fmadd_ps(a, b, c); }
  static MIXPREC_SIMD_INLINE type mul(type a, type b) { return _mm256_mul_ps(a, b); }
};

#include "float_kernel.inl"

// 16 registers: 6 x 2 sums, 2 lines of B, one broadcast (the Haswell-era BLIS shape).
using tile = float_tile<6, 16>;

}  // namespace mixprec::detail::gemm_avx2
MIXPREC_TARGET_END

MIXPREC_AVX512_REGION_BEGIN("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")
namespace mixprec::detail::gemm_avx512 {

struct vector_ops {
  using type = __m512;
  static constexpr std::size_t width = 16;
  static MIXPREC_SIMD_INLINE type zero() { return _mm512_setzero_ps(); }
  static MIXPREC_SIMD_INLINE type set1(float x) { return _mm512_set1_ps(x); }
  static MIXPREC_SIMD_INLINE type load(const float* p) { return _mm512_loadu_ps(p); }
  static MIXPREC_SIMD_INLINE void store(float* p, type v) { _mm512_storeu_ps(p, v); }
  static MIXPREC_SIMD_INLINE type broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static MIXPREC_SIMD_INLINE type fma(type a, type b, type c) { return _mm512_fmadd_ps(a, b, c); }
  static MIXPREC_SIMD_INLINE type mul(type a, type b) { return _mm512_mul_ps(a, b); }
};

#include "float_kernel.inl"  // NOLINT(readability-duplicate-include): once per backend namespace

// 32 registers: 12 x 2 sums (enough independent chains to cover the FMA latency on two pipes),
// 2 lines of B; A's elements come as embedded broadcasts.
using tile = float_tile<12, 32>;

// out[r] = (high[r]'s top 16 bits) << 16 | low[r]'s top 16 bits for r < count <= 16 (the bf16
// pair of two floats that are bf16 values), reading only r < loaded (zeros for the others).
inline void pair_line(const float* low, const float* high, std::uint32_t* out, std::size_t count, std::size_t loaded) {
  const auto lanes = static_cast<__mmask16>((1u << count) - 1u);
  const auto valid = static_cast<__mmask16>((1u << loaded) - 1u);
  const __m512i lo = _mm512_maskz_loadu_epi32(valid, low), hi = _mm512_maskz_loadu_epi32(valid, high);
  const __m512i pair = _mm512_or_si512(_mm512_and_si512(hi, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))),
                                       _mm512_srli_epi32(lo, 16));
  _mm512_mask_storeu_epi32(out, lanes, pair);
}

// One line of pairs for every micro-panel of R words: word r of panel p, at
// out[p * panel_stride + r], is high[p * R + r] << 16 | low[p * R + r] (bf16 codes of k = 2j and
// 2j + 1, the pair vdpbf16ps reads) for p * R + r < rows, zero for the rows past them.
// A panel of R not a multiple of 16 (12: the A panels) ends on a partial vector, stored masked.
template <std::size_t R>
void pair_codes(const std::uint16_t* low, const std::uint16_t* high, std::size_t rows, std::uint32_t* out,
                std::size_t panel_stride) {
  for (std::size_t p = 0; p * R < rows; ++p) {
    for (std::size_t r = 0; r < R; r += 16) {
      const std::size_t lanes = R - r < 16 ? R - r : 16;
      const std::size_t first = p * R + r, loaded = first < rows ? (rows - first < lanes ? rows - first : lanes) : 0;
      const auto valid = static_cast<__mmask16>((1u << loaded) - 1u);
      const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(valid, low + first));
      const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(valid, high + first));
      _mm512_mask_storeu_epi32(out + p * panel_stride + r, static_cast<__mmask16>((1u << lanes) - 1u),
                               _mm512_or_si512(_mm512_slli_epi32(hi, 16), lo));
    }
  }
}

// 16-bit words by byte code from a 256-entry table held in eight registers: vpermi2w looks up
// 64 entries (two registers) by a code's low 6 bits, and its top two bits choose among the four.
struct word_table {
  __m512i entries[8];
  explicit word_table(const std::uint16_t* table) {
    for (std::size_t j = 0; j < 8; ++j) entries[j] = _mm512_loadu_si512(table + 32 * j);
  }
  MIXPREC_SIMD_INLINE __m512i lookup(__m512i index) const {
    const __m512i q0 = _mm512_permutex2var_epi16(entries[0], index, entries[1]);
    const __m512i q1 = _mm512_permutex2var_epi16(entries[2], index, entries[3]);
    const __m512i q2 = _mm512_permutex2var_epi16(entries[4], index, entries[5]);
    const __m512i q3 = _mm512_permutex2var_epi16(entries[6], index, entries[7]);
    const __mmask32 bit6 = _mm512_test_epi16_mask(index, _mm512_set1_epi16(64));
    const __mmask32 bit7 = _mm512_test_epi16_mask(index, _mm512_set1_epi16(128));
    return _mm512_mask_blend_epi16(bit7, _mm512_mask_blend_epi16(bit6, q0, q1), _mm512_mask_blend_epi16(bit6, q2, q3));
  }
};

inline __mmask32 first_lanes32(std::size_t count) noexcept {
  return static_cast<__mmask32>(count >= 32 ? 0xFFFFFFFFu : (1u << count) - 1u);
}

// out[i] = table[in[i]] for i < n, 32 codes at a time.
inline void lookup_words(const unsigned char* in, std::size_t n, const std::uint16_t* table, std::uint16_t* out) {
  const word_table words(table);
  for (std::size_t i = 0; i < n; i += 32) {
    const __mmask32 lanes = first_lanes32(n - i);
    const __m512i index = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(lanes, in + i));
    _mm512_mask_storeu_epi16(out + i, lanes, words.lookup(index));
  }
}

// For each of `blocks` blocks of 32 codes: out = table[code] (bf16 codes) with deltas[b] added to
// the exponent field of every non-zero word; failed[b] also set where a word is inf or NaN
// (sources.hpp, lookup_scaled_blocks, which checks the range of the fields).
inline void lookup_scaled_blocks(const unsigned char* in, std::size_t blocks, const int* deltas,
                                 const std::uint16_t* table, std::uint16_t* out, bool* failed) {
  const word_table words(table);
  const __m512i magnitude_mask = _mm512_set1_epi16(0x7FFF), all_ones_field = _mm512_set1_epi16(0x7F80);
  for (std::size_t b = 0; b < blocks; ++b) {
    const __m512i word =
        words.lookup(_mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 32 * b))));
    const __mmask32 special = _mm512_cmpeq_epi16_mask(_mm512_and_si512(word, all_ones_field), all_ones_field);
    const __mmask32 nonzero = _mm512_test_epi16_mask(word, magnitude_mask);
    failed[b] = failed[b] || special != 0;
    const __m512i shift = _mm512_set1_epi16(static_cast<short>(static_cast<unsigned>(deltas[b]) << 7));
    _mm512_storeu_si512(out + 32 * b, _mm512_mask_add_epi16(word, nonzero, word, shift));
  }
}

// The smallest bf16 key (sources.hpp) of count bf16 codes, 32 at a time.  Magnitudes order as
// their fields do, so the key comes from the smallest non-zero magnitude alone (a zero's
// magnitude minus 1 wraps to 0xFFFF and never wins): field 0 is a subnormal (unsafe), 255 means
// only infinities and NaNs (ignored), as does no non-zero code at all.
inline int smallest_bf16_key(const std::uint16_t* codes, std::size_t count, int ignored, int unsafe) {
  const __m512i magnitude_mask = _mm512_set1_epi16(0x7FFF), one = _mm512_set1_epi16(1);
  __m512i smallest = _mm512_set1_epi16(-1);
  for (std::size_t i = 0; i < count; i += 32) {
    const __m512i magnitude =
        _mm512_and_si512(_mm512_maskz_loadu_epi16(first_lanes32(count - i), codes + i), magnitude_mask);
    smallest = _mm512_min_epu16(smallest, _mm512_sub_epi16(magnitude, one));
  }
  alignas(64) std::uint16_t lanes_smallest[32];
  _mm512_store_si512(lanes_smallest, smallest);
  unsigned least = 0xFFFFu;
  for (std::uint16_t m : lanes_smallest) least = m < least ? m : least;
  if (least == 0xFFFFu) return ignored;  // zeros only
  const int field = static_cast<int>((least + 1u) >> 7);
  return field == 0 ? unsafe : field == 255 ? ignored : field;
}

}  // namespace mixprec::detail::gemm_avx512
MIXPREC_AVX512_REGION_END

MIXPREC_TARGET_BEGIN("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
namespace mixprec::detail::gemm_avx512_bf16 {

// vdpbf16ps (Intel SDM Vol. 2, VDPBF16PS): in each 32-bit lane, two fused multiply-adds of bf16
// values widened to float, the pair's odd (high) element first, each with DAZ, FTZ and
// round-to-nearest-even whatever MXCSR says.  tests/gemm/vdpbf16ps_probe_test.cpp pins this
// down on the CPU it runs on.  Without DAZ and FTZ acting, one instruction is exactly
//
//   sum = fma(a_odd, b_odd, sum);  sum = fma(a_even, b_even, sum)
//
// i.e. the float kernel's chain over k = 1, 0, 3, 2, 5, 4, ...  The packing (packing.hpp) lets
// a tile through only when DAZ and FTZ cannot act: no subnormal input, every product a multiple
// of 2^-126 (keys), and every partial sum it continues from zero or at least 2^-103 (checked
// here), so that no intermediate sum is subnormal.  Otherwise run() returns false and the
// caller computes the same chain with float FMAs.
//
// A micro-panel: depth/2 lines of MR pairs (one 32-bit word per row: bf16 of k even in the low
// half, k odd in the high half); B micro-panel: depth/2 lines of NR such pairs.
template <std::size_t MR, std::size_t NR>
struct pair_tile {
  using float_tile = gemm_avx512::float_tile<MR, NR>;
  static constexpr std::size_t mr = MR;
  static constexpr std::size_t nr = NR;
  static constexpr std::size_t columns = float_tile::columns;

  // Partial sums vdpbf16ps continues exactly: zero, or |x| >= 2^-103 (a float of exponent field
  // >= 24 is a multiple of 2^-126; inf and NaN pass too).  Lanes with 0 < |bits| < 24 << 23 fail.
  static MIXPREC_SIMD_INLINE bool partials_safe(const __m512 (&sum)[MR][columns]) {
    const __m512i magnitude_mask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512i limit = _mm512_set1_epi32((24 << 23) - 1);
    __mmask16 unsafe = 0;
    MIXPREC_UNROLL(16)
    for (std::size_t i = 0; i < MR; ++i) {
      MIXPREC_UNROLL(4)
      for (std::size_t j = 0; j < columns; ++j) {
        const __m512i magnitude = _mm512_and_si512(_mm512_castps_si512(sum[i][j]), magnitude_mask);
        unsafe |= _mm512_cmplt_epu32_mask(_mm512_sub_epi32(magnitude, _mm512_set1_epi32(1)), limit);
      }
    }
    return unsafe == 0;
  }

  static bool run(std::size_t pairs, const std::uint32_t* a, const std::uint32_t* b, const tile_io& io) {
    __m512 sum[MR][columns];
    float_tile::start(sum, io);
    if (io.partial != nullptr && !partials_safe(sum)) return false;
    for (std::size_t k = 0; k < pairs; ++k) {
      __m512i line[columns];
      MIXPREC_UNROLL(4)
      for (std::size_t j = 0; j < columns; ++j) line[j] = _mm512_loadu_si512(b + k * NR + j * 16);
      MIXPREC_UNROLL(16)
      for (std::size_t i = 0; i < MR; ++i) {
        const __m512i pair = _mm512_set1_epi32(static_cast<int>(a[k * MR + i]));
        MIXPREC_UNROLL(4)
        for (std::size_t j = 0; j < columns; ++j)
          sum[i][j] = _mm512_dpbf16_ps(sum[i][j], (__m512bh)pair, (__m512bh)line[j]);
      }
    }
    float_tile::finish(sum, io);
    return true;
  }
};

using tile = pair_tile<12, 32>;

}  // namespace mixprec::detail::gemm_avx512_bf16
MIXPREC_TARGET_END
#endif
