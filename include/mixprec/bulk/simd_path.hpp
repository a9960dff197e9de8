// Which SIMD code path bulk conversion uses: detected once from the CPU (CPUID and the OS's
// XSAVE state), overridable for tests and benchmarks with force_simd_path() or the environment
// variable MIXPREC_SIMD_PATH (portable | avx2 | avx512 | avx512_bf16).
//
// Every path gives the same bits as the scalar functions (tests/bulk checks it on each path the
// CPU has).  Non-x86 builds, builds by compilers other than GCC/Clang, and CUDA translation
// units use the portable path only.
#pragma once

#include <string>

#include "../detail/forced_choice.hpp"
#include "../errors.hpp"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(MIXPREC_PORTABLE_ONLY)
#define MIXPREC_X86_SIMD 1
#include <cpuid.h>
#else
#define MIXPREC_X86_SIMD 0
#endif

namespace mixprec {

enum class simd_path {
  portable,     // the scalar reference loop (auto-vectorised where the compiler can)
  avx2,         // AVX2 (8 lanes)
  avx512,       // AVX-512 F + BW + VL (16 lanes)
  avx512_bf16,  // AVX-512 plus the BF16 extension: vcvtneps2bf16 for float -> bfloat16
};

constexpr const char* to_string(simd_path p) noexcept {
  switch (p) {
    case simd_path::portable:
      return "portable";
    case simd_path::avx2:
      return "avx2";
    case simd_path::avx512:
      return "avx512";
    case simd_path::avx512_bf16:
      return "avx512_bf16";
  }
  return "invalid simd_path";
}

struct cpu_features {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512_bf16 = false, avx512_fp16 = false;
};

namespace detail {

inline cpu_features detect_cpu_features() noexcept {
  cpu_features f;
#if MIXPREC_X86_SIMD
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c & (1u << 27)) != 0, avx = (c & (1u << 28)) != 0;
  if (!osxsave || !avx) return f;
  // XCR0: the OS saves SSE+AVX state (bits 1-2) and, for AVX-512, opmask and ZMM (bits 5-7).
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  const bool os_avx = (xcr0_low & 0x6u) == 0x6u, os_avx512 = (xcr0_low & 0xE6u) == 0xE6u;
  if (!os_avx) return f;
  f.fma = (c & (1u << 12)) != 0;
  f.f16c = (c & (1u << 29)) != 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = (b & (1u << 5)) != 0;
    if (os_avx512) {
      f.avx512f = (b & (1u << 16)) != 0;
      f.avx512bw = (b & (1u << 30)) != 0;
      f.avx512vl = (b & (1u << 31)) != 0;
      f.avx512_fp16 = (d & (1u << 23)) != 0;
      if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = (a & (1u << 5)) != 0;
    }
  }
#endif
  return f;
}

}  // namespace detail

// The CPU's features, read once.
inline const cpu_features& host_cpu_features() noexcept {
  static const cpu_features features = detail::detect_cpu_features();
  return features;
}

// Whether this build and this CPU can run a path.
inline bool simd_path_supported(simd_path p) noexcept {
#if MIXPREC_X86_SIMD
  const cpu_features& f = host_cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl;
  switch (p) {
    case simd_path::portable:
      return true;
    case simd_path::avx2:
      return avx2;
    case simd_path::avx512:
      return avx512;
    case simd_path::avx512_bf16:
      return avx512 && f.avx512_bf16;
  }
  return false;
#else
  return p == simd_path::portable;
#endif
}

inline simd_path best_simd_path() noexcept {
  for (simd_path p : {simd_path::avx512_bf16, simd_path::avx512, simd_path::avx2}) {
    if (simd_path_supported(p)) return p;
  }
  return simd_path::portable;
}

namespace detail {
// The switch of detail/forced_choice.hpp behind force_simd_path and MIXPREC_SIMD_PATH.
struct simd_path_switch {
  using value_type = simd_path;
  static constexpr const char* variable = "MIXPREC_SIMD_PATH";
  static constexpr const char* noun = "SIMD path";
  static constexpr const char* where = "this CPU or build";
  static constexpr simd_path values[] = {simd_path::portable, simd_path::avx2, simd_path::avx512,
                                         simd_path::avx512_bf16};
  static bool available(simd_path p) noexcept { return simd_path_supported(p); }
};
}  // namespace detail

// Parses a path name; throws invalid_argument naming the allowed values.
inline simd_path parse_simd_path(const std::string& name) {
  return detail::parse_choice<detail::simd_path_switch>(name);
}

// Makes every later bulk call use `p`; throws invalid_argument if this CPU or build lacks it.
inline void force_simd_path(simd_path p) { detail::force_choice<detail::simd_path_switch>(p); }

// Back to the detected path (or MIXPREC_SIMD_PATH's).
inline void reset_simd_path() noexcept { detail::reset_choice<detail::simd_path_switch>(); }

// The path bulk calls use now: the forced one, else MIXPREC_SIMD_PATH (read once; an unknown or
// unavailable value throws invalid_argument), else the best the CPU has.
inline simd_path active_simd_path() { return detail::chosen<detail::simd_path_switch>().value_or(best_simd_path()); }

}  // namespace mixprec
