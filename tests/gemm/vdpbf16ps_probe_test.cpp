// What this CPU's vdpbf16ps does, pinned down (gemm/detail/kernels_x86.hpp relies on it):
//
//   per 32-bit lane: acc = fma(a_odd, b_odd, acc), then acc = fma(a_even, b_even, acc), each
//   fused, rounded to nearest even, with subnormal inputs read as zero (DAZ) and tiny results
//   flushed to zero (FTZ, tininess decided after rounding), whatever MXCSR says.
//
// The same DAZ/FTZ model (amx_tiles.hpp, fma_daz_ftz) is what the AMX emulation uses; here it
// is checked against the real instruction on random inputs around the underflow threshold.
// Skipped where the CPU has no AVX512-BF16.  Measured on the AMD EPYC (Zen 5) of this project:
// docs/gemm.md, "What vdpbf16ps does here".
#include <mixprec/bulk/simd_path.hpp>
#include <mixprec/gemm/detail/amx_tiles.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#if MIXPREC_X86_SIMD
#include <immintrin.h>

namespace {

std::uint16_t bf16(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return static_cast<std::uint16_t>(bits >> 16);
}

float widen(std::uint16_t bits) {
  const std::uint32_t b = static_cast<std::uint32_t>(bits) << 16;
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

// One lane of vdpbf16ps: acc + a_even * b_even + a_odd * b_odd as the instruction computes it.
__attribute__((target("avx512f,avx512vl,avx512bf16"))) float instruction(float acc, float a_even, float a_odd,
                                                                         float b_even, float b_odd) {
  const auto pair = [](float even, float odd) {
    return static_cast<int>(static_cast<std::uint32_t>(bf16(even)) | static_cast<std::uint32_t>(bf16(odd)) << 16);
  };
  const __m128 sum = _mm_dpbf16_ps(_mm_set_ss(acc), (__m128bh)_mm_cvtsi32_si128(pair(a_even, a_odd)),
                                   (__m128bh)_mm_cvtsi32_si128(pair(b_even, b_odd)));
  return _mm_cvtss_f32(sum);
}

float odd_first(float acc, float a_even, float a_odd, float b_even, float b_odd) {
  return std::fma(a_even, b_even, std::fma(a_odd, b_odd, acc));
}

float flushing_model(float acc, float a_even, float a_odd, float b_even, float b_odd) {
  using mixprec::detail::fma_daz_ftz;
  return fma_daz_ftz(a_even, b_even, fma_daz_ftz(a_odd, b_odd, acc));
}

bool same_bits(float x, float y) { return std::memcmp(&x, &y, 4) == 0 || (std::isnan(x) && std::isnan(y)); }

// A random bf16 value with an exponent in [low, high].
float random_bf16(std::mt19937& rng, int low, int high) {
  const float magnitude = std::ldexp(1.f + static_cast<float>(rng() % 128) / 128.f,
                                     low + static_cast<int>(rng() % static_cast<unsigned>(high - low + 1)));
  return widen(bf16(rng() % 2 == 0 ? magnitude : -magnitude));
}

bool has_instruction() { return mixprec::simd_path_supported(mixprec::simd_path::avx512_bf16); }

}  // namespace

TEST_CASE("vdpbf16ps adds the odd product first, each step a fused multiply-add", "[vdpbf16ps]") {
  if (!has_instruction()) {
    SUCCEED("no AVX512-BF16 on this CPU");
    return;
  }
  // odd first: 1 + 3 * 2^-25 -> 1 + 2^-23, then + 2^-24 (a tie) -> 1 + 2^-22.  Even first gives
  // 1 + 2^-23, and one rounding of the exact sum 1 + 5 * 2^-25 gives 1 + 2^-23 too.
  const float p_even = std::ldexp(1.f, -24), p_odd = 3 * std::ldexp(1.f, -25);
  CHECK(instruction(1.f, p_even, p_odd, 1.f, 1.f) == 1.f + std::ldexp(1.f, -22));
  std::mt19937 rng(5);
  int even_first_differs = 0, one_rounding_differs = 0;
  for (int i = 0; i < 200000; ++i) {
    const float acc = random_bf16(rng, -20, 10) * (1.f + static_cast<float>(rng() % 1024) / 0x1p20f);
    const float a0 = random_bf16(rng, -10, 10), a1 = random_bf16(rng, -10, 10);
    const float b0 = random_bf16(rng, -10, 10), b1 = random_bf16(rng, -10, 10);
    const float got = instruction(acc, a0, a1, b0, b1);
    INFO(std::hexfloat << acc << " + " << a0 << " * " << b0 << " + " << a1 << " * " << b1);
    REQUIRE(same_bits(got, odd_first(acc, a0, a1, b0, b1)));
    // The other plausible models: even product first; the pair sum (in double) rounded once.
    if (!same_bits(got, std::fma(a1, b1, std::fma(a0, b0, acc)))) ++even_first_differs;
    const double exact = static_cast<double>(acc) + static_cast<double>(a0) * b0 + static_cast<double>(a1) * b1;
    if (!same_bits(got, static_cast<float>(exact))) ++one_rounding_differs;
  }
  // Both would have been caught (each differs on about a tenth of these inputs).
  CHECK(even_first_differs > 10000);
  CHECK(one_rounding_differs > 10000);
}

TEST_CASE("vdpbf16ps reads subnormals as zero and flushes tiny results, tininess after rounding", "[vdpbf16ps]") {
  if (!has_instruction()) {
    SUCCEED("no AVX512-BF16 on this CPU");
    return;
  }
  const float two126 = std::ldexp(1.f, -126);
  CHECK(instruction(0.f, std::ldexp(1.f, -130), 0.f, 1024.f, 0.f) == 0.f);               // bf16 subnormal input
  CHECK(instruction(std::ldexp(1.f, -140), 0.f, 0.f, 0.f, 0.f) == 0.f);                  // subnormal accumulator
  CHECK(instruction(0.f, std::ldexp(1.f, -70), 0.f, std::ldexp(1.f, -70), 0.f) == 0.f);  // tiny product
  CHECK(instruction(two126, std::ldexp(1.f, -70), 0.f, std::ldexp(1.f, -70), 0.f) ==
        two126 + std::ldexp(1.f, -140));  // fused: kept when the sum is normal
  // After the odd step 2^-125 - 1.5 * 2^-126 = 2^-127 is tiny and flushed; then + 2^-126.
  CHECK(instruction(std::ldexp(1.f, -125), std::ldexp(1.f, -126), -1.5f, 1.f, two126) == two126);
  // 2^-126 - 3 * 2^-152: 2^-126 in the subnormal grid, 2^-126 - 2^-150 unbounded: flushed.
  const float step = std::ldexp(1.f, -76);
  CHECK(instruction(two126, 0.f, 3 * step, 0.f, -step) == 0.f);
  CHECK(instruction(two126, 0.f, step, 0.f, -step) == two126);
  CHECK(instruction(two126, 0.f, 2 * step, 0.f, -step) == two126);
}

TEST_CASE("vdpbf16ps ignores MXCSR's rounding, FTZ and DAZ", "[vdpbf16ps]") {
  if (!has_instruction()) {
    SUCCEED("no AVX512-BF16 on this CPU");
    return;
  }
  const float p_even = std::ldexp(1.f, -24), p_odd = 3 * std::ldexp(1.f, -25);
  const float expected = instruction(1.f, p_even, p_odd, 1.f, 1.f);
  const unsigned saved = __builtin_ia32_stmxcsr();
  for (unsigned rounding : {0x2000u, 0x4000u, 0x6000u}) {  // down, up, toward zero
    __builtin_ia32_ldmxcsr((saved & ~0x6000u) | rounding);
    const float got = instruction(1.f, p_even, p_odd, 1.f, 1.f);
    __builtin_ia32_ldmxcsr(saved);
    CHECK(got == expected);
  }
}

TEST_CASE("the DAZ/FTZ model of the AMX emulation matches vdpbf16ps near the underflow threshold", "[vdpbf16ps]") {
  if (!has_instruction()) {
    SUCCEED("no AVX512-BF16 on this CPU");
    return;
  }
  std::mt19937 rng(11);
  int flushed = 0;
  for (int i = 0; i < 300000; ++i) {
    // Products and sums around 2^-126, bf16 subnormals included.
    const float acc =
        rng() % 4 == 0 ? 0.f : random_bf16(rng, -133, -120) * (1.f + static_cast<float>(rng() % 256) / 0x1p16f);
    const float a0 = random_bf16(rng, -80, -50), a1 = random_bf16(rng, -80, -50);
    const float b0 = random_bf16(rng, -80, -50), b1 = random_bf16(rng, -80, -50);
    const float got = instruction(acc, a0, a1, b0, b1);
    INFO(std::hexfloat << acc << " + " << a0 << " * " << b0 << " + " << a1 << " * " << b1);
    REQUIRE(same_bits(got, flushing_model(acc, a0, a1, b0, b1)));
    if (!same_bits(got, odd_first(acc, a0, a1, b0, b1))) ++flushed;
  }
  CHECK(flushed > 1000);  // the inputs do reach the flushing cases
}
#else
TEST_CASE("vdpbf16ps probe", "[vdpbf16ps]") { SUCCEED("x86 only"); }
#endif
