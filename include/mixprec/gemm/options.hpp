// The knobs of mixprec::gemm (gemm.hpp): operand transposition, per-tensor scales, threads and
// the kernel path.
//
//   transpose::no / transpose::yes          op(X) = X or X^T, as BLAS's CblasNoTrans / CblasTrans
//   gemm_options{}                          scale_a = scale_b = 1, threads from the global setting,
//                                           path chosen from the CPU
//   set_gemm_threads(n)                     global default thread count (1; 0 = one per hardware thread)
//   force_gemm_path(p) / reset_gemm_path()  every later call on path p (tests, benchmarks);
//                                           also the environment variable MIXPREC_GEMM_PATH
//
// Paths differ in speed and, for operands that are exact in bfloat16, in the order in which the
// products are summed; each path's order and error bound are in docs/gemm.md.  Nothing here
// changes which products are formed: every product is exact, every sum is a float sum.
#pragma once

#include <atomic>
#include <string>

#include "../bulk/simd_path.hpp"
#include "../detail/forced_choice.hpp"
#include "../detail/parallel.hpp"
#include "../errors.hpp"
#include "../detail/amx_support.hpp"

namespace mixprec {

// op(X): the stored matrix or its transpose.  A row-major M x K operand A is stored as M rows of
// lda elements with transpose::no, as K rows of lda elements (its transpose) with transpose::yes.
enum class transpose { no, yes };

// The kernel families of gemm (docs/gemm.md, "Paths").
enum class gemm_path {
  automatic,          // the best path this CPU, OS and build allow (the default)
  portable,           // plain C++ kernels (std::fma, vectorised by the compiler where it can)
  avx2,               // AVX2 + FMA float kernels, 6 x 16 tiles
  avx512,             // AVX-512 F float kernels, 12 x 32 tiles
  avx512_bf16,        // avx512, plus vdpbf16ps for operands whose values are all bfloat16 values
  amx_bf16,           // AMX tiles (tdpbf16ps) for bfloat16-exact operands, AVX-512 for the rest
  amx_bf16_emulated,  // the AMX kernel on a C++ model of the tile instructions (for tests; slow)
};

constexpr const char* to_string(gemm_path p) noexcept {
  switch (p) {
    case gemm_path::automatic:
      return "automatic";
    case gemm_path::portable:
      return "portable";
    case gemm_path::avx2:
      return "avx2";
    case gemm_path::avx512:
      return "avx512";
    case gemm_path::avx512_bf16:
      return "avx512_bf16";
    case gemm_path::amx_bf16:
      return "amx_bf16";
    case gemm_path::amx_bf16_emulated:
      return "amx_bf16_emulated";
  }
  return "invalid gemm_path";
}

// Options of one gemm call.  C = alpha * (scale_a * op(A)) * (scale_b * op(B)) + beta * C: the
// scales multiply the float-accumulated products, never the inputs (cuBLASLt's scaleA / scaleB
// convention for fp8); docs/gemm.md says where each rounding happens.
struct gemm_options {
  float scale_a = 1.0f;
  float scale_b = 1.0f;
  // 0: the global setting (set_gemm_threads), split only when each thread gets at least
  // gemm_work_per_thread multiply-adds.  n > 0: up to min(n, number of row or column tiles)
  // threads, whatever the size (tests use this to split small products); the ranges have
  // ceil(tiles / n) tiles each but the last (detail/parallel.hpp), so a few may be left unused.
  unsigned threads = 0;
  // automatic: force_gemm_path's path, else MIXPREC_GEMM_PATH, else the best this CPU has.
  // Anything else: that path; invalid_argument if this CPU, OS or build cannot run it.
  gemm_path path = gemm_path::automatic;
};

// Multiply-adds (M * N * K) each thread must get before the global setting splits a call:
// starting a std::thread costs some tens of microseconds, about 2^22 multiply-adds on one core.
constexpr double gemm_work_per_thread = 8388608.0;  // 2^23

namespace detail {
inline std::atomic<unsigned>& gemm_thread_setting() noexcept {
  static std::atomic<unsigned> threads{1};
  return threads;
}
}  // namespace detail

// Global default threads for gemm calls whose options say 0: 1 (the default: the caller's thread
// only; a training loop often runs its own threads, and oversubscribing cores costs more than it
// gains), or n, or 0 for one per hardware thread.
inline void set_gemm_threads(unsigned threads) noexcept {
  detail::gemm_thread_setting().store(threads, std::memory_order_relaxed);
}
inline unsigned gemm_threads() noexcept {
  return detail::resolve_thread_count(detail::gemm_thread_setting().load(std::memory_order_relaxed));
}

// Whether this build, CPU and OS can run a path.  amx_bf16 needs CPUID's AMX-TILE and AMX-BF16,
// tile state enabled in XCR0 and the kernel's permission (requested once with
// arch_prctl(ARCH_REQ_XCOMP_PERM); Linux only).  amx_bf16_emulated runs everywhere.
inline bool gemm_path_supported(gemm_path p) {
  switch (p) {
    case gemm_path::automatic:
    case gemm_path::portable:
    case gemm_path::amx_bf16_emulated:
      return true;
    case gemm_path::avx2:
      return simd_path_supported(simd_path::avx2);
    case gemm_path::avx512:
      return simd_path_supported(simd_path::avx512);
    case gemm_path::avx512_bf16:
      return simd_path_supported(simd_path::avx512_bf16);
    case gemm_path::amx_bf16:
      return simd_path_supported(simd_path::avx512_bf16) && detail::amx_bf16_usable();
  }
  return false;
}

// The fastest path this machine has (never amx_bf16_emulated).
inline gemm_path best_gemm_path() {
  for (gemm_path p : {gemm_path::amx_bf16, gemm_path::avx512_bf16, gemm_path::avx512, gemm_path::avx2}) {
    if (gemm_path_supported(p)) return p;
  }
  return gemm_path::portable;
}

namespace detail {
// The switch of detail/forced_choice.hpp behind force_gemm_path and MIXPREC_GEMM_PATH.
struct gemm_path_switch {
  using value_type = gemm_path;
  static constexpr const char* variable = "MIXPREC_GEMM_PATH";
  static constexpr const char* noun = "gemm path";
  static constexpr const char* where = "this CPU, OS or build";
  static constexpr gemm_path values[] = {gemm_path::automatic,        gemm_path::portable,    gemm_path::avx2,
                                         gemm_path::avx512,           gemm_path::avx512_bf16, gemm_path::amx_bf16,
                                         gemm_path::amx_bf16_emulated};
  static bool available(gemm_path p) { return gemm_path_supported(p); }
};
}  // namespace detail

// Parses a path name ("automatic" included); throws invalid_argument naming the allowed values.
inline gemm_path parse_gemm_path(const std::string& name) {
  return detail::parse_choice<detail::gemm_path_switch>(name);
}

// Makes every later call whose options say automatic use `p` (automatic: back to detection);
// throws invalid_argument if this CPU, OS or build cannot run it.
inline void force_gemm_path(gemm_path p) {
  if (p == gemm_path::automatic) return detail::reset_choice<detail::gemm_path_switch>();
  detail::force_choice<detail::gemm_path_switch>(p);
}
inline void reset_gemm_path() noexcept { detail::reset_choice<detail::gemm_path_switch>(); }

// The path a call with these options runs on (never automatic): options.path, else the forced
// path, else MIXPREC_GEMM_PATH's (read once; an unknown or unavailable value throws
// invalid_argument), else the best this machine has.
inline gemm_path resolve_gemm_path(const gemm_options& options = {}) {
  if (options.path != gemm_path::automatic) {
    detail::check_available<detail::gemm_path_switch>(options.path);
    return options.path;
  }
  const gemm_path chosen = detail::chosen<detail::gemm_path_switch>().value_or(gemm_path::automatic);
  return chosen == gemm_path::automatic ? best_gemm_path() : chosen;
}

}  // namespace mixprec
