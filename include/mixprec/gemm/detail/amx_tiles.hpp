// The AMX tile operations the AMX micro-kernel (amx_kernel.hpp) uses, behind one interface with
// two implementations:
//
//   emulated_tiles   a C++ model of palette 1 and of LDTILECFG, TILELOADD, TILEZERO, TILESTORED,
//                    TDPBF16PS and TILERELEASE, following the Operation sections of the Intel SDM
//                    (Vol. 2, "TDPBF16PS", "TILELOADD", "LDTILECFG"; limits of palette 1 and the
//                    TMUL unit from CPUID leaves 0x1D / 0x1E, "AMX-E4" #UD conditions).  It
//                    raises tile_fault where the hardware would fault.
//   hardware_tiles   the instructions, through the compiler's intrinsics, in a target region.
//
// Interface: configure(config), load<T>(base, stride), zero<T>(), store<T>(base, stride),
// dot_bf16<D, A, B>(), release(), and the kernel's product loop dot_chunks (amx_chunks.inl).
// Tile numbers are template arguments because the instructions encode them.
//
// This machine has no AMX: the hardware backend is compiled here but has never run; every test
// of the AMX kernel runs on the emulation (docs/gemm.md, "AMX").
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "../../bulk/simd_path.hpp"
#include "../../detail/bits.hpp"
#include "../../errors.hpp"

#if MIXPREC_X86_SIMD
#include <immintrin.h>

#include "../../bulk/x86/target.hpp"
#endif

namespace mixprec::detail {

// A fault of the tile model (#GP / #UD of the real instruction): a bug in the caller.
class tile_fault : public error {
 public:
  using error::error;
};

// LDTILECFG's 64-byte operand: byte 0 palette, byte 1 start_row, bytes 16-31 colsb of tiles 0-7
// (16 bits each), bytes 48-55 rows of tiles 0-7; everything else reserved (zero).
struct tile_config {
  std::uint8_t palette_id = 0;
  std::uint8_t start_row = 0;
  std::uint8_t reserved_a[14] = {};
  std::uint16_t colsb[8] = {};
  std::uint8_t reserved_b[16] = {};
  std::uint8_t rows[8] = {};
  std::uint8_t reserved_c[8] = {};
};
static_assert(sizeof(tile_config) == 64, "LDTILECFG reads 64 bytes");

// Palette 1 (CPUID.(0x1D, 1)): 8 tiles of at most 16 rows of 64 bytes; TMUL (CPUID.0x1E):
// tmul_maxk = 16 rows, tmul_maxn = 64 bytes.
constexpr int tile_count = 8;
constexpr int tile_max_rows = 16;
constexpr int tile_max_row_bytes = 64;

// Float operations as TDPBF16PS performs them: inputs that are subnormal count as zero (DAZ),
// results that are tiny become zero of the same sign (FTZ), rounding to nearest even, no
// exceptions.  x86 decides tininess after rounding (as if the exponent were unbounded): a result
// whose exact value lies in [2^-126 - 2^-151, 2^-126) rounds to 2^-126 and is kept.
inline float flush_subnormal(float x) noexcept {
  return std::fabs(x) < 0x1p-126f && x != 0.0f ? std::copysign(0.0f, x) : x;
}

// round(a * b + c) with DAZ and FTZ.
inline float fma_daz_ftz(float a, float b, float c) noexcept {
  a = flush_subnormal(a), b = flush_subnormal(b), c = flush_subnormal(c);
  const float r = std::fma(a, b, c);
  if (r == 0.0f || std::fabs(r) > 0x1p-126f) return r;
  // |r| <= 2^-126: tiny unless the exact value rounds to 2^-126 or more with an unbounded
  // exponent.  Scaled by 2^32 (the smaller factor and c; exact here, since a tiny non-zero
  // result needs |c| < 2^-100 and |a * b| < 2^-100) the sum is rounded in the normal range.
  const bool scale_a = std::fabs(a) <= std::fabs(b);
  const float scaled = std::fma(scale_a ? a * 0x1p32f : a, scale_a ? b : b * 0x1p32f, c * 0x1p32f);
  return std::fabs(scaled) < 0x1p-94f ? std::copysign(0.0f, r) : r;
}

// round(a + b) with DAZ and FTZ (a sum that is subnormal is exact, so tininess is |sum| < 2^-126).
inline float add_daz_ftz(float a, float b) noexcept { return flush_subnormal(flush_subnormal(a) + flush_subnormal(b)); }

inline float bfloat16_bits_to_float(std::uint16_t bits) noexcept {
  return bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

class emulated_tiles {
 public:
  // LDTILECFG: palette 0 releases the tiles; palette 1 checks the limits and zeroes every tile.
  void configure(const tile_config& c) {
    if (c.palette_id > 1) fault("LDTILECFG: palette " + std::to_string(c.palette_id) + " (this model has 0 and 1)");
    if (c.start_row != 0) fault("LDTILECFG: start_row " + std::to_string(c.start_row) + " (the model supports 0)");
    for (std::uint8_t byte : c.reserved_a) check_reserved(byte);
    for (std::uint8_t byte : c.reserved_b) check_reserved(byte);
    for (std::uint8_t byte : c.reserved_c) check_reserved(byte);
    if (c.palette_id == 0) return release();
    for (int t = 0; t < tile_count; ++t) {
      if (c.rows[t] > tile_max_rows || c.colsb[t] > tile_max_row_bytes || (c.rows[t] == 0) != (c.colsb[t] == 0)) {
        fault("LDTILECFG: tile " + std::to_string(t) + " of " + std::to_string(c.rows[t]) + " rows x " +
              std::to_string(c.colsb[t]) + " bytes (palette 1: at most 16 x 64, both zero when unused)");
      }
    }
    config_ = c;
    std::memset(data_, 0, sizeof(data_));
  }

  // TILERELEASE (and LDTILECFG with palette 0): the initial state, nothing configured.
  void release() noexcept {
    config_ = tile_config{};
    std::memset(data_, 0, sizeof(data_));
  }

  // TILELOADD: configured rows of colsb bytes from base + row * stride; the rest of the tile zero.
  template <int T>
  void load(const void* base, std::size_t stride) {
    check_tile(T, "TILELOADD");
    std::memset(data_[T], 0, sizeof(data_[T]));
    for (int row = 0; row < config_.rows[T]; ++row) {
      std::memcpy(data_[T][row], static_cast<const unsigned char*>(base) + static_cast<std::size_t>(row) * stride,
                  config_.colsb[T]);
    }
  }

  template <int T>
  void zero() {
    check_tile(T, "TILEZERO");
    std::memset(data_[T], 0, sizeof(data_[T]));
  }

  // TILESTORED: configured rows of colsb bytes to base + row * stride.
  template <int T>
  void store(void* base, std::size_t stride) const {
    check_tile(T, "TILESTORED");
    for (int row = 0; row < config_.rows[T]; ++row) {
      std::memcpy(static_cast<unsigned char*>(base) + static_cast<std::size_t>(row) * stride, data_[T][row],
                  config_.colsb[T]);
    }
  }

  // TDPBF16PS tD, tA, tB (C = m x n in tD, A = m x k pairs in tA, B = k x n pairs in tB).  Per
  // row m: two float chains per column n, one over the even and one over the odd elements of
  // the pairs, each step a fused multiply-add with DAZ/FTZ; then tD[m][n] += (even + odd),
  // both additions with DAZ/FTZ; bytes past colsb and rows past `rows` end up zero.
  template <int D, int A, int B>
  void dot_bf16() {
    static_assert(D != A && D != B && A != B, "#UD: TDPBF16PS needs three different tiles");
    check_tile(D, "TDPBF16PS"), check_tile(A, "TDPBF16PS"), check_tile(B, "TDPBF16PS");
    const int m_count = config_.rows[D], n_count = config_.colsb[D] / 4, k_count = config_.colsb[A] / 4;
    if (config_.colsb[D] % 4 != 0 || config_.colsb[A] % 4 != 0 || config_.colsb[B] % 4 != 0 ||
        config_.colsb[B] / 4 != n_count || config_.rows[A] != m_count || config_.rows[B] != k_count ||
        k_count > tile_max_rows) {
      fault("TDPBF16PS: shapes " + shape(D) + " += " + shape(A) + " x " + shape(B) + " do not chain");
    }
    for (int m = 0; m < m_count; ++m) {
      float even[16] = {}, odd[16] = {};
      for (int k = 0; k < k_count; ++k) {
        for (int n = 0; n < n_count; ++n) {
          even[n] = fma_daz_ftz(element(A, m, 2 * k), element(B, k, 2 * n), even[n]);
          odd[n] = fma_daz_ftz(element(A, m, 2 * k + 1), element(B, k, 2 * n + 1), odd[n]);
        }
      }
      for (int n = 0; n < n_count; ++n) {
        float c;
        std::memcpy(&c, data_[D][m] + std::ptrdiff_t{4} * n, 4);
        c = add_daz_ftz(c, add_daz_ftz(even[n], odd[n]));
        std::memcpy(data_[D][m] + std::ptrdiff_t{4} * n, &c, 4);
      }
    }
  }

#include "amx_chunks.inl"

 private:
  [[noreturn]] static void fault(const std::string& what) { throw tile_fault("emulated AMX fault: " + what); }
  static void check_reserved(std::uint8_t byte) {
    if (byte != 0) fault("LDTILECFG: a reserved byte is " + std::to_string(byte) + " (must be 0)");
  }
  void check_tile(int t, const char* instruction) const {
    if (config_.palette_id == 0 || config_.rows[t] == 0) {
      fault(std::string(instruction) + ": tile " + std::to_string(t) + " is not configured");
    }
  }
  std::string shape(int t) const {
    return std::to_string(config_.rows[t]) + "x" + std::to_string(config_.colsb[t]) + "B";
  }
  float element(int t, int row, int bf16_index) const {
    std::uint16_t bits;
    std::memcpy(&bits, data_[t][row] + std::ptrdiff_t{2} * bf16_index, 2);
    return bfloat16_bits_to_float(bits);
  }

  tile_config config_{};
  alignas(64) unsigned char data_[tile_count][tile_max_rows][tile_max_row_bytes] = {};
};

#if MIXPREC_X86_SIMD && defined(__x86_64__)
#define MIXPREC_AMX_HARDWARE 1
// GCC's intrinsics are asm statements that name the tile in the mnemonic (a literal, not a
// template argument) and tell the compiler nothing about the memory they touch: each call below
// spells its tile number and sits between compiler memory barriers.
#define MIXPREC_TILE_BARRIER __asm__ volatile("" ::: "memory")
MIXPREC_TARGET_BEGIN("amx-tile,amx-bf16")
struct hardware_tiles {
  void configure(const tile_config& c) {
    MIXPREC_TILE_BARRIER;
    _tile_loadconfig(&c);
    MIXPREC_TILE_BARRIER;
  }
  void release() {
    _tile_release();
    MIXPREC_TILE_BARRIER;
  }
  template <int T>
  void load(const void* base, std::size_t stride) {
    MIXPREC_TILE_BARRIER;
    // clang-format off
    if constexpr (T == 0) _tile_loadd(0, base, stride); else if constexpr (T == 1) _tile_loadd(1, base, stride);
    else if constexpr (T == 2) _tile_loadd(2, base, stride); else if constexpr (T == 3) _tile_loadd(3, base, stride);
    else if constexpr (T == 4) _tile_loadd(4, base, stride); else if constexpr (T == 5) _tile_loadd(5, base, stride);
    else if constexpr (T == 6) _tile_loadd(6, base, stride); else _tile_loadd(7, base, stride);
    // clang-format on
  }
  template <int T>
  void zero() {
    // clang-format off
    if constexpr (T == 0) _tile_zero(0); else if constexpr (T == 1) _tile_zero(1);
    else if constexpr (T == 2) _tile_zero(2); else _tile_zero(3);
    // clang-format on
  }
  template <int T>
  void store(void* base, std::size_t stride) {
    // clang-format off
    if constexpr (T == 0) _tile_stored(0, base, stride); else if constexpr (T == 1) _tile_stored(1, base, stride);
    else if constexpr (T == 2) _tile_stored(2, base, stride); else _tile_stored(3, base, stride);
    // clang-format on
    MIXPREC_TILE_BARRIER;
  }
  template <int D, int A, int B>
  void dot_bf16() {
    static_assert((D == 0 && A == 4 && B == 6) || (D == 1 && A == 4 && B == 7) || (D == 2 && A == 5 && B == 6) ||
                      (D == 3 && A == 5 && B == 7),
                  "the AMX kernel's four products");
    // clang-format off
    if constexpr (D == 0) _tile_dpbf16ps(0, 4, 6); else if constexpr (D == 1) _tile_dpbf16ps(1, 4, 7);
    else if constexpr (D == 2) _tile_dpbf16ps(2, 5, 6); else _tile_dpbf16ps(3, 5, 7);
    // clang-format on
  }

#include "amx_chunks.inl"  // NOLINT(readability-duplicate-include): once per backend class
};
MIXPREC_TARGET_END
#undef MIXPREC_TILE_BARRIER
#else
#define MIXPREC_AMX_HARDWARE 0
#endif

}  // namespace mixprec::detail
