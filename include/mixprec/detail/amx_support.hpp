// Whether the AMX tile instructions can run here: the CPU has them (CPUID), the OS saves tile
// state (XCR0) and has granted this process the large tile-data state (Linux arch_prctl).
//
// Linux enables AMX tile data (XSTATE component 18, XTILEDATA) in XCR0 but traps its first use
// until the process asks for it: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), after
// which ARCH_GET_XCOMP_PERM reports bit 18 (Documentation/arch/x86/xstate.rst, "Using
// dynamically enabled XSTATE features in user space applications").  The permission is
// process-wide and asked for once.  Other operating systems: no AMX path (not verified there).
#pragma once

#include <cstdint>

#include "../bulk/simd_path.hpp"

#if MIXPREC_X86_SIMD && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define MIXPREC_AMX_PERMISSION_API 1
#else
#define MIXPREC_AMX_PERMISSION_API 0
#endif

namespace mixprec::detail {

struct amx_cpu_features {
  bool tile = false, bf16 = false;  // CPUID.(7,0):EDX[24] AMX-TILE, EDX[22] AMX-BF16
  bool os_tile_state = false;       // XCR0[17] XTILECFG and XCR0[18] XTILEDATA
  bool palette_fits = false;        // palette 1 and the TMUL unit take 16 rows x 64 bytes, 8 tiles
};

inline amx_cpu_features detect_amx_features() noexcept {
  amx_cpu_features f;
#if MIXPREC_X86_SIMD
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (1u << 27)) == 0) return f;  // OSXSAVE: xgetbv allowed
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.tile = (d & (1u << 24)) != 0;
  f.bf16 = (d & (1u << 22)) != 0;
  if (!f.tile) return f;
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  f.os_tile_state = (xcr0_low & 0x60000u) == 0x60000u;
  // Leaf 0x1D, subleaf 0: EAX the highest palette; subleaf 1 (palette 1): EBX[15:0] bytes per
  // row, EBX[31:16] tile names, ECX[15:0] rows.  Leaf 0x1E: EBX[7:0] tmul_maxk (rows),
  // EBX[23:8] tmul_maxn (bytes).  (Some hypervisors report AMX in leaf 7 and XCR0 but no
  // palette; the instructions then fault.)
  const auto max_leaf = static_cast<unsigned>(__get_cpuid_max(0, nullptr));
  if (max_leaf < 0x1E || !__get_cpuid_count(0x1D, 0, &a, &b, &c, &d) || a < 1) return f;
  if (!__get_cpuid_count(0x1D, 1, &a, &b, &c, &d)) return f;
  const bool palette = (b & 0xFFFFu) >= 64 && (b >> 16) >= 8 && (c & 0xFFFFu) >= 16;
  if (__get_cpuid_count(0x1E, 0, &a, &b, &c, &d)) {
    f.palette_fits = palette && (b & 0xFFu) >= 16 && ((b >> 8) & 0xFFFFu) >= 64;
  }
#endif
  return f;
}

// Asks Linux for the tile-data state; true once it is granted (or was already).
inline bool request_amx_tile_permission() noexcept {
#if MIXPREC_AMX_PERMISSION_API
  constexpr long arch_get_xcomp_perm = 0x1022;  // arch/x86/include/uapi/asm/prctl.h
  constexpr long arch_req_xcomp_perm = 0x1023;
  constexpr long xfeature_xtiledata = 18;
  if (syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) != 0) return false;
  std::uint64_t permitted = 0;
  if (syscall(SYS_arch_prctl, arch_get_xcomp_perm, &permitted) != 0) return false;
  return (permitted >> xfeature_xtiledata & 1u) != 0;
#else
  return false;
#endif
}

// Read once per process: AMX-BF16 usable by this process.
inline bool amx_bf16_usable() noexcept {
  static const bool usable = [] {
    const amx_cpu_features f = detect_amx_features();
    return f.tile && f.bf16 && f.os_tile_state && f.palette_fits && request_amx_tile_permission();
  }();
  return usable;
}

}  // namespace mixprec::detail
