// The library's named formats (DESIGN.md, "Value types") and their aliases.
//
// Each is a descriptor plus a name; the worked values beside them are the extremes that the
// descriptor implies (format_traits derives them, tests/types_test.cpp checks them).
#pragma once

#include "format.hpp"
#include "minifloat.hpp"

namespace mixprec {
namespace formats {

// IEEE 754 binary16.  max 0'11110'1111111111 = (2 - 2^-10) × 2^15 = 65504
struct float16 : binary_format<5, 10, 15, special_encoding::ieee> {
  static constexpr const char* name = "float16";
};
// bfloat16: float's exponent, 7 mantissa bits.  max 0'11111110'1111111 = (2 - 2^-7) × 2^127 ≈ 3.3895e38
struct bfloat16 : binary_format<8, 7, 127, special_encoding::ieee> {
  static constexpr const char* name = "bfloat16";
};
// OFP8 E4M3 (OCP 8-bit FP v1.0).  max 0'1111'110 = (1 + 0b110 × 2^-3) × 2^(15 - 7) = 448;
// 0'1111'111 and 1'1111'111 are NaN.
struct float8_e4m3fn : binary_format<4, 3, 7, special_encoding::nan_all_ones> {
  static constexpr const char* name = "float8_e4m3fn";
};
// OFP8 E5M2, IEEE-style.  max 0'11110'11 = 1.75 × 2^(30 - 15) = 57344
struct float8_e5m2 : binary_format<5, 2, 15, special_encoding::ieee> {
  static constexpr const char* name = "float8_e5m2";
};
// E4M3 with bias 8, no -0, NaN = 0x80.  max 0'1111'111 = 1.875 × 2^(15 - 8) = 240
struct float8_e4m3fnuz : binary_format<4, 3, 8, special_encoding::nan_negative_zero> {
  static constexpr const char* name = "float8_e4m3fnuz";
};
// E5M2 with bias 16, no -0, no infinity, NaN = 0x80.  max 0'11111'11 = 1.75 × 2^(31 - 16) = 57344
struct float8_e5m2fnuz : binary_format<5, 2, 16, special_encoding::nan_negative_zero> {
  static constexpr const char* name = "float8_e5m2fnuz";
};
// OCP MX FP6 E3M2, finite only.  max 0'111'11 = 1.75 × 2^(7 - 3) = 28
struct float6_e3m2fn : binary_format<3, 2, 3, special_encoding::none> {
  static constexpr const char* name = "float6_e3m2fn";
};
// OCP MX FP6 E2M3, finite only.  max 0'11'111 = 1.875 × 2^(3 - 1) = 7.5
struct float6_e2m3fn : binary_format<2, 3, 1, special_encoding::none> {
  static constexpr const char* name = "float6_e2m3fn";
};
// OCP MX FP4 E2M1, finite only.  max 0'11'1 = 1.5 × 2^(3 - 1) = 6
struct float4_e2m1fn : binary_format<2, 1, 1, special_encoding::none> {
  static constexpr const char* name = "float4_e2m1fn";
};
// OCP MX E8M0 scale: unsigned powers of two, no zero, 0xFF is NaN.
// 0b0000'0000 = 2^(0 - 127), 0b1111'1110 = 2^(254 - 127) = 2^127
struct float8_e8m0fnu : binary_format<8, 0, 127, special_encoding::nan_all_ones, /*IsSigned=*/false,
                                      /*HasSubnormals=*/false> {
  static constexpr const char* name = "float8_e8m0fnu";
};

// NVFP4's block scale (NVIDIA's "ue4m3": cvt ... .ue4m3x2, CUTLASS float_ue4m3_t): e4m3fn's
// magnitudes without the sign bit, 7 bits in a byte.  0'0000'001 = 2^-9 (smallest subnormal),
// 0'1111'110 = (1 + 0b110 × 2^-3) × 2^(15 - 7) = 448, 0'1111'111 = 0x7F is the NaN; so every
// code is also the float8_e4m3fn code of the same value.  -0 becomes +0; any other negative input
// (tiny or -inf included) is out of the domain: NaN, or 0 under overflow::saturate (as e8m0,
// docs/decisions.md "ue4m3").
struct float8_ue4m3 : binary_format<4, 3, 7, special_encoding::nan_all_ones, /*IsSigned=*/false> {
  static constexpr const char* name = "float8_ue4m3";
};

// IEEE-style E4M3 (ml_dtypes float8_e4m3; IEEE 754 rules with bias 7): the top binade holds
// infinity 0'1111'000 and NaNs.  max 0'1110'111 = (1 + 0b111 × 2^-3) × 2^(14 - 7) = 240,
// min normal 0'0001'000 = 2^-6, min subnormal 0'0000'001 = 2^-9.
struct float8_e4m3 : binary_format<4, 3, 7, special_encoding::ieee> {
  static constexpr const char* name = "float8_e4m3";
};
// IEEE-style E3M4 (ml_dtypes float8_e3m4).  max 0'110'1111 = (1 + 0b1111 × 2^-4) × 2^(6 - 3) = 15.5,
// min normal 0'001'0000 = 2^-2 = 0.25, min subnormal 0'000'0001 = 2^(-2 - 4) = 2^-6; inf 0'111'0000.
struct float8_e3m4 : binary_format<3, 4, 3, special_encoding::ieee> {
  static constexpr const char* name = "float8_e3m4";
};
// E4M3 with bias 11, no infinity, no -0, NaN = 0x80 (ml_dtypes float8_e4m3b11fnuz, Google TPU).
// max 0'1111'111 = 1.875 × 2^(15 - 11) = 30, min normal 2^-10, min subnormal 0'0000'001 = 2^-13.
struct float8_e4m3b11fnuz : binary_format<4, 3, 11, special_encoding::nan_negative_zero> {
  static constexpr const char* name = "float8_e4m3b11fnuz";
};
// NVIDIA TensorFloat-32: float's sign and exponent with 10 mantissa bits, 19 bits stored in the
// low bits of a 32-bit word (code = float bits >> 13; CUTLASS tfloat32_t keeps the float layout
// with the low 13 bits zero instead).  max 0'11111110'1111111111 = (2 - 2^-10) × 2^127
// ≈ 3.4012e38, min normal 2^-126, min subnormal 2^-136.  CUDA's cvt.rna.tf32.f32 rounds ties
// away: rounding::nearest_away.
struct tfloat32 : binary_format<8, 10, 127, special_encoding::ieee> {
  static constexpr const char* name = "tfloat32";
};

}  // namespace formats

using float16 = minifloat<formats::float16>;
using bfloat16 = minifloat<formats::bfloat16>;
using float8_e4m3fn = minifloat<formats::float8_e4m3fn>;
using float8_e5m2 = minifloat<formats::float8_e5m2>;
using float8_e4m3fnuz = minifloat<formats::float8_e4m3fnuz>;
using float8_e5m2fnuz = minifloat<formats::float8_e5m2fnuz>;
using float6_e3m2fn = minifloat<formats::float6_e3m2fn>;
using float6_e2m3fn = minifloat<formats::float6_e2m3fn>;
using float4_e2m1fn = minifloat<formats::float4_e2m1fn>;
using float8_e8m0fnu = minifloat<formats::float8_e8m0fnu>;
using float8_ue4m3 = minifloat<formats::float8_ue4m3>;
using float8_e4m3 = minifloat<formats::float8_e4m3>;
using float8_e3m4 = minifloat<formats::float8_e3m4>;
using float8_e4m3b11fnuz = minifloat<formats::float8_e4m3b11fnuz>;
using tfloat32 = minifloat<formats::tfloat32>;

using fp16 = float16;
using bf16 = bfloat16;
using fp8_e4m3 = float8_e4m3fn;
using fp8_e5m2 = float8_e5m2;
using tf32 = tfloat32;  // CUTLASS tfloat32_t, PyTorch's "tf32" matmul precision

}  // namespace mixprec
