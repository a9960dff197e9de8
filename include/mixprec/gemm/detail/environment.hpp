// The float environment a gemm runs in, whatever the caller's: round to nearest even, no
// flush-to-zero or denormals-are-zero, exceptions masked.  Libraries and -ffast-math start-up
// code set FTZ/DAZ in MXCSR; under them the float kernels would flush subnormal sums and
// products, and the results would no longer be the documented ones.  The caller's control bits
// come back at the end; the exception flags the product raised stay raised.
//
// x86: MXCSR.  Elsewhere: the C rounding mode (<cfenv>); a flush-to-zero mode of another
// architecture (AArch64 FPCR.FZ) is not touched.
#pragma once

#include "../../bulk/simd_path.hpp"

#if !MIXPREC_X86_SIMD
#include <cfenv>
#endif

namespace mixprec::detail {

class float_environment {
 public:
#if MIXPREC_X86_SIMD
  static constexpr unsigned exception_flags = 0x3Fu;
  static constexpr unsigned default_control = 0x1F80u;  // all exceptions masked, nearest even, no FTZ/DAZ

  float_environment() noexcept : saved_(__builtin_ia32_stmxcsr()) {
    __builtin_ia32_ldmxcsr(default_control | (saved_ & exception_flags));
  }
  ~float_environment() {
    __builtin_ia32_ldmxcsr((saved_ & ~exception_flags) | (__builtin_ia32_stmxcsr() & exception_flags));
  }

 private:
  unsigned saved_;
#else
  float_environment() noexcept : saved_(std::fegetround()) {
#if defined(FE_TONEAREST)
    std::fesetround(FE_TONEAREST);
#endif
  }
  ~float_environment() { std::fesetround(saved_); }

 private:
  int saved_;
#endif

 public:
  float_environment(const float_environment&) = delete;
  float_environment& operator=(const float_environment&) = delete;
};

}  // namespace mixprec::detail
