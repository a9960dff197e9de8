// The compute precision of a training recipe (recipe.hpp) and of a per-layer override rule
// (overrides.hpp).
#pragma once

namespace mixprec {

// The recipe's compute precision, its enumerators spelled as dtype's (dtype.hpp; fp8: the
// recipe's e4m3 / e5m2 pair), then the block-scaled recipes of the linear layers
// (session/linear.hpp): mxfp8 (OCP MX, ops::mx_linear), fp8_block (TE's Float8BlockScaling,
// ops::fp8_block_linear), nvfp4 (TE's NVFP4BlockScaling, ops::nvfp4_linear) and fp8_rowwise
// (torchao's ROWWISE, ops::torchao_fp8_linear) and mxfp4 (OCP MX with e2m1 elements,
// ops::mx_linear).  GCC's -Wshadow
// is silenced for them as it is for dtype's.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
// "fp32", "fp16", "bf16", "fp8", "mxfp8", "fp8_block", "nvfp4", "fp8_rowwise", "mxfp4"
enum class precision_mode { float32, float16, bfloat16, float8, mxfp8, fp8_block, nvfp4, fp8_rowwise, mxfp4 };
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
    case precision_mode::mxfp8:
      return "mxfp8";
    case precision_mode::fp8_block:
      return "fp8_block";
    case precision_mode::nvfp4:
      return "nvfp4";
    case precision_mode::fp8_rowwise:
      return "fp8_rowwise";
    case precision_mode::mxfp4:
      return "mxfp4";
  }
  return "invalid precision_mode";
}

// The largest enumerator, for range checks of values read from outside.
constexpr precision_mode last_precision_mode = precision_mode::mxfp4;

// mxfp8, fp8_block, nvfp4, fp8_rowwise and mxfp4: the linear layers quantise their operands in blocks
// (or rows) with scales chosen from each block's own values (no state between steps); the rest
// trains in float32 (or the working dtype under autocast).
constexpr bool is_block_scaled(precision_mode p) noexcept {
  return p == precision_mode::mxfp8 || p == precision_mode::fp8_block || p == precision_mode::nvfp4 ||
         p == precision_mode::fp8_rowwise || p == precision_mode::mxfp4;
}

}  // namespace mixprec
