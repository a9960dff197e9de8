// Independent transcriptions of the MX scale rules and of MXINT8's element rounding, for
// tests/mx/: logarithms and frexp in double where the library reads bit fields, and the
// reference implementations' own bit recipes (Transformer Engine, torchao) written out again.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace mx_oracles {

// Clamps an unbiased scale exponent to [-127, 128] and biases it: 128 gives 255, the NaN code
// (torchao's to_mx clamps to E8M0_EXPONENT_BIAS + 1 "to capture NaNs").
inline int biased(double e) { return static_cast<int>(std::min(std::max(e, -127.0), 128.0)) + 127; }

// OCP MX v1.0 §6.3 Algorithm 1, lines 1-2 (torchao's FLOOR): floor(log2(amax)) - emax_elem,
// clamped to e8m0's range below; log2(0) = -inf clamps to -127; inf and NaN give the NaN scale.
inline int floor_code(float amax, int emax_elem) {
  if (!std::isfinite(amax)) return 0xFF;
  if (amax == 0.0f) return 0;
  return biased(std::floor(std::log2(static_cast<double>(amax))) - emax_elem);
}

// torchao's CEIL: ceil(log2(amax)) - emax_elem for a normal amax.  torchao reads the exponent
// field, which is -127 for every subnormal, and adds 1 for its non-zero mantissa: -126.
inline int ceil_code(float amax, int emax_elem) {
  if (!std::isfinite(amax)) return 0xFF;
  double e = -127;
  if (amax >= FLT_MIN) {
    e = std::ceil(std::log2(static_cast<double>(amax)));
  } else if (amax > 0.0f) {
    e = -126;
  }
  return biased(e - emax_elem);
}

// torchao's EVEN: amax rounded to m mantissa bits, halves up, then floor(log2) - emax_elem.  A
// normal amax = f × 2^p (frexp, f in [0.5, 1)) rounds up into the next binade when f × 2^(m+1)
// rounds to 2^(m+1); rounding to 2^128 leaves float's range (torchao: inf, the NaN scale).
// torchao's bit addition treats a subnormal's mantissa field as a fraction of 2^-126 with no
// implicit bit: it reaches 2^-126 from 2^-126 - 2^(-127-m) up, and stays at field 0 (-127) below.
inline int even_code(float amax, int emax_elem, int m) {
  if (!std::isfinite(amax)) return 0xFF;
  const double a = static_cast<double>(amax);
  double e = -127;
  if (amax >= FLT_MIN) {
    int p = 0;
    const double f = std::frexp(a, &p);
    const double rounded = std::floor(std::ldexp(f, m + 1) + 0.5);
    e = p - 1 + (rounded == std::ldexp(1.0, m + 1) ? 1 : 0);
    if (e == 128) return 0xFF;
  } else if (a >= std::ldexp(1.0, -126) - std::ldexp(1.0, -127 - m)) {
    e = -126;
  }
  return biased(e - emax_elem);
}

// transformer_engine/common/util/ptx_arch_spec.cuh, float_to_e8m0 (the path before Blackwell).
inline std::uint8_t te_float_to_e8m0(float val) {
  if (std::isnan(val)) return 0xFF;
  if (std::isinf(val)) return 0xFE;
  if (val == 0.0f) return 0x00;
  std::uint32_t val_u32;
  std::memcpy(&val_u32, &val, 4);
  auto exponent = static_cast<std::uint8_t>(val_u32 >> 23);
  const std::uint32_t mantissa = val_u32 & 0x7FFFFF;
  if ((mantissa > 0 && exponent != 0xFE) && !(exponent == 0 && mantissa <= 0x400000)) ++exponent;
  return exponent;
}

// The round_up rule: TE's code of amax × Quantized_Limits<T>::max_norm_rcp (1.0 / max in double,
// then float), NaN scale for blocks with inf or NaN.
inline int round_up_code(float amax, double max_value) {
  if (!std::isfinite(amax)) return 0xFF;
  return te_float_to_e8m0(amax * static_cast<float>(1.0 / max_value));
}

// torchao's RCEIL (mx_tensor.py, _f32_to_e8m0_rceil of max_abs × (1.0 / max_pos)): the exponent
// field, plus 1 for a normal with a non-zero mantissa or a subnormal above 2^-127; 255 when not
// finite.
inline int torchao_rceil_code(float amax, double max_value) {
  const float descale = amax * static_cast<float>(1.0 / max_value);
  if (!std::isfinite(descale)) return 0xFF;
  std::uint32_t bits;
  std::memcpy(&bits, &descale, 4);
  const std::uint32_t field = bits >> 23 & 0xFF, mantissa = bits & 0x7FFFFF;
  const bool up = field == 0 ? mantissa > 0x400000 : mantissa != 0;
  return static_cast<int>(field) + (up ? 1 : 0);
}

// MXINT8's element from a value already divided by the scale: x × 64 to the nearest integer,
// halves away from zero (std::round in double, exact here), clamped to ±127; 0 for NaN.  As a
// two's complement code.
inline unsigned mxint8_code(double x) {
  if (std::isnan(x)) return 0;
  const double k = std::min(std::max(std::round(x * 64.0), -127.0), 127.0);
  return static_cast<unsigned>(static_cast<int>(k)) & 0xFFu;
}

}  // namespace mx_oracles
