// Compiling a region of a header for an instruction set without compiler flags: GCC's
// `#pragma GCC target` and Clang's `#pragma clang attribute` give every function defined in the
// region (templates included) the target's instructions, so one header serves a baseline
// x86-64 build and runtime dispatch picks the region the CPU can run.
#pragma once

#include "../../config.hpp"  // MIXPREC_PRAGMA

#if defined(__clang__)
#define MIXPREC_TARGET_BEGIN(isa) \
  MIXPREC_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define MIXPREC_TARGET_END MIXPREC_PRAGMA(clang attribute pop)
#else
#define MIXPREC_TARGET_BEGIN(isa) MIXPREC_PRAGMA(GCC push_options) MIXPREC_PRAGMA(GCC target(isa))
#define MIXPREC_TARGET_END MIXPREC_PRAGMA(GCC pop_options)
#endif

// A region for AVX-512 code: GCC 12's AVX-512 intrinsics pass an intentionally undefined operand
// (`__m512i __Y = __Y;`) that -W(maybe-)uninitialized reports once they are inlined, a false
// positive, silenced inside the region only.
// clang-format off
#if defined(__GNUC__) && !defined(__clang__)
#define MIXPREC_AVX512_REGION_BEGIN(isa) \
  MIXPREC_TARGET_BEGIN(isa) \
  MIXPREC_PRAGMA(GCC diagnostic push) \
  MIXPREC_PRAGMA(GCC diagnostic ignored "-Wmaybe-uninitialized") \
  MIXPREC_PRAGMA(GCC diagnostic ignored "-Wuninitialized")
#define MIXPREC_AVX512_REGION_END MIXPREC_PRAGMA(GCC diagnostic pop) MIXPREC_TARGET_END
#else
#define MIXPREC_AVX512_REGION_BEGIN(isa) MIXPREC_TARGET_BEGIN(isa)
#define MIXPREC_AVX512_REGION_END MIXPREC_TARGET_END
#endif
// clang-format on
