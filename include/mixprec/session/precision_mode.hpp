// The compute precision of a training recipe (recipe.hpp) and of a per-layer override rule
// (overrides.hpp).
#pragma once

namespace mixprec {

// The recipe's compute precision, its enumerators spelled as dtype's (dtype.hpp; fp8: the
// recipe's e4m3 / e5m2 pair).  GCC's -Wshadow is silenced for them as it is for dtype's.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
enum class precision_mode { float32, float16, bfloat16, float8 };  // "fp32", "fp16", "bf16", "fp8"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

constexpr const char* to_string(precision_mode p) noexcept {
  switch (p) {
    case precision_mode::float32:
      return "fp32";
    case precision_mode::float16:
      return "fp16";
    case precision_mode::bfloat16:
      return "bf16";
    case precision_mode::float8:
      return "fp8";
  }
  return "invalid precision_mode";
}

}  // namespace mixprec
