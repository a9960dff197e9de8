// blockscale/fp8_block.hpp and fp8_block_rules.hpp: known answers derived from the formulas in
// float32 (zero blocks, amax at and around 448 and 57344, subnormal, inf and NaN amaxes, ties),
// and quantisation bit for bit against transcriptions of the anchors' reference code (TE's
// quantize_scale_calc.py and blockwise_quantizer_reference.py, TE's compute_scale_from_amax
// kernel rule, DeepSeek-V3's act_quant_kernel / weight_quant_kernel) on awkward shapes, on every
// SIMD path.
#include <mixprec/blockscale/fp8_block.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "float_bits.hpp"
#include "random_floats.hpp"
#include "simd_paths.hpp"

namespace {

using namespace mixprec;
using namespace mixprec::blockscale;

constexpr float inf = std::numeric_limits<float>::infinity();
const float qnan = std::numeric_limits<float>::quiet_NaN();
constexpr float flt_max = std::numeric_limits<float>::max();

// ---- Transcriptions of the anchors' reference rules (test oracles, written from the sources) ----

// quantize_scale_calc.py, scale_from_amax_tensor, for one amax.
float oracle_te_reference_scale(float amax, float fp8_max, bool pow2, float eps, float x_dtype_max) {
  amax = std::isnan(amax) ? amax : std::max(amax, eps);  // torch.max(amax, tensor(eps))
  float scale = fp8_max / amax;                          // torch.div
  if (scale == inf) scale = x_dtype_max;                 // torch.where(scale == inf, finfo.max, scale)
  if (pow2) {
    int exp = 0;
    (void)std::frexp(scale, &exp);
    if (std::isnan(scale)) exp = 0;  // glibc's frexp stores 0 for NaN
    exp = exp - 1;
    scale = std::ldexp(1.0f, exp);
    if (amax == inf) scale = 0.0f;
  }
  if (amax == 0.0f) scale = 1.0f;
  return scale;
}

// recipe_common.cuh, compute_scale_from_amax with compute_scale_from_types's value_for_inf.
float oracle_te_kernel_scale(float amax, float fp8_max, bool pow2, float eps, float value_for_inf) {
  if (amax < eps) amax = eps;
  if (std::isinf(amax) || amax == 0.0f || std::isnan(amax)) return 1.0f;
  float scale = fp8_max / amax;
  if (std::isinf(scale)) scale = value_for_inf;
  if (pow2) scale = mixprec::detail::bit_cast<float>(mixprec::detail::bit_cast<std::uint32_t>(scale) & 0xFF800000u);
  return scale;
}

struct oracle_result {
  std::vector<std::uint8_t> codes;  // rows × cols
  std::vector<float> scale_inv;     // block grid, row-major
};

// The three rules' quantisers on a rows × cols float matrix: the matrix zero-padded to multiples
// of the tile (TE's reference pads; the padding never raises an amax), amax per tile by the
// rule's reduction, then each element by the rule's formula, the padding cut off again.
template <class T>
oracle_result oracle_quantize(const std::vector<float>& x, std::size_t rows, std::size_t cols, fp8_block_rule rule,
                              bool tile2d, bool pow2, float eps, float x_dtype_max) {
  const float fp8_max = std::is_same<T, float8_e4m3fn>::value ? 448.0f : 57344.0f;
  const std::size_t th = tile2d ? 128 : 1, tw = 128;
  const std::size_t pr = (rows + th - 1) / th * th, pc = (cols + tw - 1) / tw * tw;
  std::vector<float> padded(pr * pc, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) padded[r * pc + c] = x[r * cols + c];
  }
  const std::size_t gr = pr / th, gc = pc / tw;
  oracle_result out;
  out.codes.assign(rows * cols, 0);
  out.scale_inv.assign(gr * gc, 0.0f);
  for (std::size_t bi = 0; bi < gr; ++bi) {
    for (std::size_t bj = 0; bj < gc; ++bj) {
      float amax = 0.0f;
      bool saw_nan = false;
      for (std::size_t r = bi * th; r < (bi + 1) * th; ++r) {
        for (std::size_t c = bj * tw; c < (bj + 1) * tw; ++c) {
          const float a = std::fabs(padded[r * pc + c]);
          if (std::isnan(a)) saw_nan = true;
          amax = std::fmax(amax, a);  // fmaxf: NaN skipped
        }
      }
      if (rule == fp8_block_rule::transformer_engine_reference && saw_nan) amax = qnan;  // torch.amax
      float scale = 0, decode = 0;
      if (rule == fp8_block_rule::deepseek_v3) {
        decode = amax / fp8_max;  // s = tl.max(tl.abs(x)) / 448.
      } else {
        scale = rule == fp8_block_rule::transformer_engine
                    ? oracle_te_kernel_scale(amax, fp8_max, pow2, eps, x_dtype_max)
                    : oracle_te_reference_scale(amax, fp8_max, pow2, eps, x_dtype_max);
        decode = 1.0f / scale;  // torch.reciprocal / 1.0f / scale
      }
      out.scale_inv[bi * gc + bj] = decode;
      for (std::size_t r = bi * th; r < std::min(rows, (bi + 1) * th); ++r) {
        for (std::size_t c = bj * tw; c < std::min(cols, (bj + 1) * tw); ++c) {
          const float v = padded[r * pc + c];
          T q;
          if (rule == fp8_block_rule::deepseek_v3) {
            q = convert<T>(v / decode, rounding::nearest_even, overflow::saturate);  // cvt satfinite
          } else if (rule == fp8_block_rule::transformer_engine) {
            q = convert<T>(v * scale, rounding::nearest_even, overflow::saturate);  // static_cast<OType>
          } else {
            const float clamped = std::isnan(v * scale) ? v * scale : std::min(std::max(v * scale, -fp8_max), fp8_max);
            q = convert<T>(clamped, rounding::nearest_even, overflow::non_finite);  // clamp, then .to()
          }
          out.codes[r * cols + c] = static_cast<std::uint8_t>(q.bits());
        }
      }
    }
  }
  return out;
}

// The library's quantisation of x (read with leading dimension cols + 3) against the oracle's, on
// every SIMD path and thread count; the first difference is reported.
template <class T>
void check_against_oracle(const std::vector<float>& x, std::size_t rows, std::size_t cols, fp8_block_rule rule,
                          fp8_block_kind kind, bool pow2, float eps) {
  INFO("rule " << to_string(rule) << ", kind " << to_string(kind) << ", pow2 " << pow2 << ", eps " << eps << ", "
               << rows << " × " << cols);
  fp8_block_options o;
  o.rule = rule;
  o.kind = kind;
  o.power_2_scales = pow2;
  o.amax_epsilon = eps;
  std::vector<float> strided(rows * (cols + 3), 12345.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) strided[r * (cols + 3) + c] = x[r * cols + c];
  }
  const auto expected =
      oracle_quantize<T>(x, rows, cols, rule, kind == fp8_block_kind::tile_128x128, pow2, eps, flt_max);
  on_every_path_and_thread_count([&] {
    const auto m = fp8_block_quantize<T>(strided.data(), rows, cols, cols + 3, o);
    REQUIRE(m.block_rows() * m.block_cols() == expected.scale_inv.size());
    for (std::size_t b = 0; b < expected.scale_inv.size(); ++b) {
      if (bits_of(m.scale_invs()[b]) != bits_of(expected.scale_inv[b])) {
        FAIL_CHECK("block " << b << ": scale_inv " << m.scale_invs()[b] << ", expected " << expected.scale_inv[b]);
        return;
      }
    }
    for (std::size_t i = 0; i < rows * cols; ++i) {
      if (m.data()[i].bits() != expected.codes[i]) {
        FAIL_CHECK("element " << i << " (x = " << x[i] << "): code " << int{m.data()[i].bits()} << ", expected "
                              << int{expected.codes[i]});
        return;
      }
    }
  });
}

// Random N(0, 1) data scaled per row by 2^(r mod 40 − 20), with specials put in some blocks.
std::vector<float> awkward_data(std::size_t rows, std::size_t cols, bool specials) {
  std::vector<float> x = gaussian(rows * cols, 1.0f, 7);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) x[r * cols + c] = std::ldexp(x[r * cols + c], static_cast<int>(r % 40) - 20);
  }
  if (specials) {
    x[3 * cols + 5] = inf;                                                     // block (3, 0)
    x[4 * cols + 130] = qnan;                                                  // block (4, 1)
    x[5 * cols + 256] = -inf;                                                  // the last, one-wide block of row 5
    for (std::size_t c = 0; c < 128 && c < cols; ++c) x[6 * cols + c] = 0.0f;  // a zero block
    x[7 * cols + 9] = 1e-45f;  // a subnormal amax in an otherwise zero block
    for (std::size_t c = 0; c < 128 && c < cols; ++c) {
      if (c != 9) x[7 * cols + c] = 0.0f;
    }
    x[8 * cols + 1] = flt_max;
  }
  return x;
}

}  // namespace

TEST_CASE("TE block scales on known answers (pow2 default, value_for_inf of the input type)",
          "[blockscale][fp8_block]") {
  const float e4 = 448.0f, e5 = 57344.0f;
  // compute_scale_from_amax: 1 for amax 0, inf and NaN.
  CHECK(te_block_scale(0.0f, e4, true, 0.0f, flt_max) == 1.0f);
  CHECK(te_block_scale(inf, e4, true, 0.0f, flt_max) == 1.0f);
  CHECK(te_block_scale(qnan, e4, true, 0.0f, flt_max) == 1.0f);
  // At and around the element maxima: 448 / 448 = 1; 448 / 449 < 1 → pow2 0.5; 448 / 447 > 1 → 1.
  CHECK(te_block_scale(448.0f, e4, true, 0.0f, flt_max) == 1.0f);
  CHECK(te_block_scale(449.0f, e4, true, 0.0f, flt_max) == 0.5f);
  CHECK(te_block_scale(447.0f, e4, true, 0.0f, flt_max) == 1.0f);
  CHECK(te_block_scale(449.0f, e4, false, 0.0f, flt_max) == 448.0f / 449.0f);
  CHECK(te_block_scale(57344.0f, e5, true, 0.0f, flt_max) == 1.0f);
  CHECK(te_block_scale(57345.0f, e5, true, 0.0f, flt_max) == 0.5f);
  CHECK(te_block_scale(28672.0f, e5, false, 0.0f, flt_max) == 2.0f);
  // A subnormal amax: 448 / 2^-149 overflows → value_for_inf (float FLT_MAX, bf16 0x1.FEp127),
  // whose mantissa pow2 clears: 2^127 for both.
  CHECK(te_block_scale(0x1p-149f, e4, false, 0.0f, value_for_inf<float>()) == flt_max);
  CHECK(te_block_scale(0x1p-149f, e4, false, 0.0f, value_for_inf<bfloat16>()) == 0x1.FEp127f);
  CHECK(te_block_scale(0x1p-149f, e4, true, 0.0f, value_for_inf<float>()) == 0x1p127f);
  CHECK(te_block_scale(0x1p-149f, e4, true, 0.0f, value_for_inf<bfloat16>()) == 0x1p127f);
  // A subnormal amax whose quotient is finite: 448 / 2^-126 = 1.75 · 2^134 overflows, 448 / 2^-120
  // = 1.75 · 2^128 too, 448 / 2^-119 = 1.75 · 2^127 does not.
  CHECK(te_block_scale(0x1p-119f, e4, false, 0.0f, flt_max) == 0x1.Cp127f);
  // The epsilon floors the amax: amax 0 with eps 2^-4 → 448 · 16 = 7168 → pow2 4096.
  CHECK(te_block_scale(0.0f, e4, true, 0x1p-4f, flt_max) == 4096.0f);
}

TEST_CASE("TE's Python reference differs from the kernels only for inf and NaN amaxes", "[blockscale][fp8_block]") {
  const float e4 = 448.0f;
  CHECK(te_reference_block_scale(0.0f, e4, true, 0.0f, flt_max) == 1.0f);
  CHECK(te_reference_block_scale(inf, e4, true, 0.0f, flt_max) == 0.0f);   // kernel: 1
  CHECK(te_reference_block_scale(inf, e4, false, 0.0f, flt_max) == 0.0f);  // 448 / inf
  CHECK(std::isnan(te_reference_block_scale(qnan, e4, false, 0.0f, flt_max)));
  CHECK(te_reference_block_scale(qnan, e4, true, 0.0f, flt_max) == 0.5f);  // frexp(NaN) exponent 0
  CHECK(te_reference_block_scale(0x1p-149f, e4, true, 0.0f, value_for_inf<bfloat16>()) == 0x1p127f);
  // Finite amaxes: the same scale as the kernel, over a sweep of amaxes and both options.
  for (float amax = 0x1p-140f; amax < flt_max / 1.37f; amax *= 1.37f) {  // from a subnormal
    for (bool pow2 : {false, true}) {
      INFO("amax " << amax << " pow2 " << pow2);
      REQUIRE(bits_of(te_reference_block_scale(amax, e4, pow2, 0.0f, flt_max)) ==
              bits_of(te_block_scale(amax, e4, pow2, 0.0f, flt_max)));
      REQUIRE(bits_of(te_reference_block_scale(amax, e4, pow2, 0.0f, flt_max)) ==
              bits_of(oracle_te_reference_scale(amax, e4, pow2, 0.0f, flt_max)));
    }
  }
}

TEST_CASE("DeepSeek-V3 decode scale is amax / 448 with no floor", "[blockscale][fp8_block]") {
  CHECK(deepseek_block_scale(448.0f, 448.0f) == 1.0f);
  CHECK(deepseek_block_scale(0.0f, 448.0f) == 0.0f);
  CHECK(deepseek_block_scale(inf, 448.0f) == inf);
  CHECK(deepseek_block_scale(1.0f, 448.0f) == 1.0f / 448.0f);
  CHECK(deepseek_block_scale(0x1p-149f, 448.0f) == 0.0f);  // underflows: the block's codes are then ±448 or NaN
}

TEST_CASE("fp8 block quantisation of special blocks follows each rule", "[blockscale][fp8_block]") {
  std::vector<float> x(128, 0.0f);
  SECTION("a zero block: TE scale 1 and +0 codes; DeepSeek 0 / 0 = NaN codes") {
    const auto te = fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128);
    CHECK(te.scale_inv(0, 0) == 1.0f);
    CHECK(te.element(0, 77).bits() == 0);
    const auto ds = fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128, {fp8_block_rule::deepseek_v3});
    CHECK(ds.scale_inv(0, 0) == 0.0f);
    CHECK(std::isnan(static_cast<float>(ds.element(0, 77))));
  }
  SECTION("amax 448: scale 1, ties to even, saturation not needed") {
    x[0] = 448.0f;
    x[1] = 1.0625f;    // between 1 and 1.125: even mantissa → 1
    x[2] = 1.1875f;    // between 1.125 and 1.25 → 1.25
    x[3] = -0x1p-10f;  // half the smallest subnormal 2^-9: ties to even → -0
    const auto m = fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128);
    CHECK(m.scale_inv(0, 0) == 1.0f);
    CHECK(static_cast<float>(m.element(0, 0)) == 448.0f);
    CHECK(static_cast<float>(m.element(0, 1)) == 1.0f);
    CHECK(static_cast<float>(m.element(0, 2)) == 1.25f);
    CHECK(m.element(0, 3).bits() == 0x80);
  }
  SECTION("amax 57344 in e5m2, and one step above with pow2: scale 0.5") {
    x[0] = 57344.0f;
    x[1] = 3.0f;
    auto m = fp8_block_quantize<float8_e5m2>(x.data(), 1, 128, 128);
    CHECK(m.scale_inv(0, 0) == 1.0f);
    CHECK(static_cast<float>(m.element(0, 0)) == 57344.0f);
    x[0] = 57345.0f;
    m = fp8_block_quantize<float8_e5m2>(x.data(), 1, 128, 128);
    CHECK(m.scale_inv(0, 0) == 2.0f);
    CHECK(static_cast<float>(m.element(0, 0)) == 28672.0f);
    CHECK(m.value(0, 1) == 3.0f);
  }
  SECTION("an inf element: kernel scale 1 and ±448; reference scale 0 (0 codes, NaN for inf); DeepSeek s = inf") {
    x[0] = -inf;
    x[1] = 3.0f;
    const auto te = fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128);
    CHECK(te.scale_inv(0, 0) == 1.0f);
    CHECK(static_cast<float>(te.element(0, 0)) == -448.0f);
    CHECK(static_cast<float>(te.element(0, 1)) == 3.0f);
    const auto ref =
        fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128, {fp8_block_rule::transformer_engine_reference});
    CHECK(ref.scale_inv(0, 0) == inf);
    CHECK(std::isnan(static_cast<float>(ref.element(0, 0))));
    CHECK(ref.element(0, 1).bits() == 0);
    const auto ds = fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128, {fp8_block_rule::deepseek_v3});
    CHECK(ds.scale_inv(0, 0) == inf);
    CHECK(std::isnan(static_cast<float>(ds.element(0, 0))));
    CHECK(ds.element(0, 1).bits() == 0);
  }
  SECTION("a NaN element: skipped by the kernels' amax, poisoning the reference's") {
    x[0] = qnan;
    x[1] = 224.0f;
    const auto te = fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128);
    CHECK(te.scale_inv(0, 0) == 0.5f);
    CHECK(std::isnan(static_cast<float>(te.element(0, 0))));
    CHECK(static_cast<float>(te.element(0, 1)) == 448.0f);
    fp8_block_options o{fp8_block_rule::transformer_engine_reference};
    o.power_2_scales = false;
    const auto ref = fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128, o);
    CHECK(std::isnan(ref.scale_inv(0, 0)));
    CHECK(std::isnan(static_cast<float>(ref.element(0, 1))));
    o.power_2_scales = true;  // frexp(NaN) → scale 0.5, decode 2
    const auto ref2 = fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128, o);
    CHECK(ref2.scale_inv(0, 0) == 2.0f);
    CHECK(static_cast<float>(ref2.element(0, 1)) == 112.0f);
    const auto ds = fp8_block_quantize<float8_e4m3fn>(x.data(), 1, 128, 128, {fp8_block_rule::deepseek_v3});
    CHECK(ds.scale_inv(0, 0) == 0.5f);
    CHECK(static_cast<float>(ds.element(0, 1)) == 448.0f);
  }
}

TEST_CASE("fp8 block quantisation equals the transcribed references bit for bit on 130 × 257 with specials",
          "[blockscale][fp8_block]") {
  const std::size_t rows = 130, cols = 257;
  const std::vector<float> x = awkward_data(rows, cols, true);
  for (fp8_block_rule rule : {fp8_block_rule::transformer_engine, fp8_block_rule::transformer_engine_reference,
                              fp8_block_rule::deepseek_v3}) {
    for (fp8_block_kind kind : {fp8_block_kind::row_1x128, fp8_block_kind::tile_128x128}) {
      for (bool pow2 : {true, false}) check_against_oracle<float8_e4m3fn>(x, rows, cols, rule, kind, pow2, 0.0f);
    }
  }
  check_against_oracle<float8_e5m2>(x, rows, cols, fp8_block_rule::transformer_engine, fp8_block_kind::row_1x128, true,
                                    0.0f);
  check_against_oracle<float8_e5m2>(x, rows, cols, fp8_block_rule::transformer_engine_reference,
                                    fp8_block_kind::tile_128x128, false, 1e-30f);
  check_against_oracle<float8_e4m3fn>(x, 3, 5, fp8_block_rule::transformer_engine, fp8_block_kind::tile_128x128, true,
                                      0.0f);
}

// The vector paths quantise a row's whole blocks 8 at a time, a block with a NaN (or a NaN scale)
// alone, and fetch the next group's lines ahead: 19 whole blocks and a partial one per row, the
// specials of awkward_data in the middle of a group, and a third band of 4 rows.
TEST_CASE("fp8 block quantisation equals the references on 260 × 2437 (groups of blocks, specials inside them)",
          "[blockscale][fp8_block]") {
  const std::size_t rows = 260, cols = 19 * 128 + 5;
  std::vector<float> x = awkward_data(rows, cols, true);
  x[200 * cols + 9 * 128 + 3] = qnan;  // block (200, 9): after a group's first run, before its last
  for (fp8_block_rule rule : {fp8_block_rule::transformer_engine, fp8_block_rule::transformer_engine_reference,
                              fp8_block_rule::deepseek_v3}) {
    for (fp8_block_kind kind : {fp8_block_kind::row_1x128, fp8_block_kind::tile_128x128}) {
      check_against_oracle<float8_e4m3fn>(x, rows, cols, rule, kind,
                                          rule != fp8_block_rule::transformer_engine_reference, 0.0f);
    }
  }
  check_against_oracle<float8_e5m2>(x, rows, cols, fp8_block_rule::transformer_engine, fp8_block_kind::tile_128x128,
                                    false, 0.0f);
}

TEST_CASE("bfloat16 input: values read exactly, value_for_inf of bfloat16", "[blockscale][fp8_block]") {
  const std::size_t rows = 3, cols = 200;
  std::vector<float> x = awkward_data(rows, cols, false);
  x[1] = 0x1p-133f;  // row 0's amax is normal; row 2 gets a lone subnormal below
  for (std::size_t c = 0; c < cols; ++c) x[2 * cols + c] = c == 4 ? 0x1p-133f : 0.0f;
  std::vector<bfloat16> xb(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    xb[i] = convert<bfloat16>(x[i], rounding::nearest_even, overflow::non_finite);
    x[i] = static_cast<float>(xb[i]);
  }
  for (fp8_block_rule rule : {fp8_block_rule::transformer_engine, fp8_block_rule::transformer_engine_reference,
                              fp8_block_rule::deepseek_v3}) {
    for (bool pow2 : {false, true}) {
      fp8_block_options o{rule};
      o.power_2_scales = pow2;
      const auto mb = fp8_block_quantize<float8_e4m3fn>(xb.data(), rows, cols, cols, o);
      const auto expected =
          oracle_quantize<float8_e4m3fn>(x, rows, cols, rule, false, pow2, 0.0f, value_for_inf<bfloat16>());
      for (std::size_t b = 0; b < expected.scale_inv.size(); ++b) {
        INFO(to_string(rule) << " pow2 " << pow2 << " block " << b);
        CHECK(bits_of(mb.scale_invs()[b]) == bits_of(expected.scale_inv[b]));
      }
      for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(mb.data()[i].bits() == expected.codes[i]);
    }
  }
  // 448 / 2^-133 overflows: the kernel's scale is bfloat16's largest value, not float's.
  const auto te = fp8_block_quantize<float8_e4m3fn>(
      xb.data(), rows, cols, cols, {fp8_block_rule::transformer_engine, fp8_block_kind::row_1x128, false});
  CHECK(te.scale_inv(2, 0) == 1.0f / 0x1.FEp127f);
}

TEST_CASE("fp8 block dequantisation is float(q) · scale_inv; accessors are checked", "[blockscale][fp8_block]") {
  const std::size_t rows = 130, cols = 257;
  const std::vector<float> x = awkward_data(rows, cols, false);
  const auto m = fp8_block_quantize<float8_e4m3fn>(x.data(), rows, cols, cols,
                                                   {fp8_block_rule::transformer_engine, fp8_block_kind::tile_128x128});
  CHECK(m.block_rows() == 2);
  CHECK(m.block_cols() == 3);
  std::vector<float> out(rows * (cols + 1), -1.0f);
  fp8_block_dequantize(m, out.data(), cols + 1);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      REQUIRE(bits_of(out[r * (cols + 1) + c]) == bits_of(m.value(r, c)));
      REQUIRE(m.scale_inv_at(r, c) == m.scale_inv(r / 128, c / 128));
      // Power-of-two scales: the value is the code times the scale exactly, within half an e4m3
      // step (2^-4 relative) of x for normal codes.
      if (std::fabs(x[r * cols + c]) >= 0x1p-6f * m.scale_inv_at(r, c)) {
        REQUIRE(std::fabs(m.value(r, c) - x[r * cols + c]) <= 0x1p-4f * std::fabs(x[r * cols + c]));
      }
    }
  }
  CHECK(out[cols] == -1.0f);  // the gap between rows is not written
  CHECK_THROWS_AS(m.element(130, 0), invalid_argument);
  CHECK_THROWS_WITH(m.value(0, 257), Catch::Contains("element (0, 257) outside the 130 × 257 matrix"));
  CHECK_THROWS_WITH(m.scale_inv(2, 0), Catch::Contains("block (2, 0) outside the 2 × 3 block grid"));
}

TEST_CASE("fp8 block functions refuse bad arguments with the value and the limit", "[blockscale][fp8_block]") {
  std::vector<float> x(256, 1.0f);
  fp8_block_options o;
  o.rule = static_cast<fp8_block_rule>(7);
  CHECK_THROWS_WITH(fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 128, 128, o),
                    Catch::Contains("rule is 7, not an fp8_block_rule (0 to 2)"));
  o = {};
  o.kind = static_cast<fp8_block_kind>(5);
  CHECK_THROWS_WITH(fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 128, 128, o),
                    Catch::Contains("kind is 5, not an fp8_block_kind"));
  CHECK_THROWS_AS(fp8_block_matrix<float8_e4m3fn>(1, 1, static_cast<fp8_block_kind>(5), fp8_block_rule::deepseek_v3),
                  invalid_argument);
  o = {};
  o.amax_epsilon = -1.0f;
  CHECK_THROWS_WITH(fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 128, 128, o),
                    Catch::Contains("amax_epsilon is -1, it must be finite and >= 0"));
  o = {};
  o.stochastic.enabled = true;
  o.stochastic.random_bits = 12;
  CHECK_THROWS_WITH(fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 128, 128, o),
                    Catch::Contains("fp8_block_quantize: random_bits is 12; allowed: 8, 16 or 32"));
  o.stochastic.enabled = false;  // unchecked while off
  CHECK_NOTHROW(fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 128, 128, o));
  o = {};
  o.amax_epsilon = qnan;
  CHECK_THROWS_AS(fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 128, 128, o), invalid_argument);
  CHECK_THROWS_WITH(fp8_block_quantize<float8_e4m3fn>(static_cast<const float*>(nullptr), 2, 128, 128),
                    Catch::Contains("null input pointer for 2 × 128 elements"));
  CHECK_THROWS_WITH(fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 128, 100),
                    Catch::Contains("leading dimension 100 is smaller than the 128 columns"));
  const auto m = fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 128, 128);
  CHECK_THROWS_WITH(fp8_block_dequantize(m, nullptr, 128), Catch::Contains("null output pointer for 2 × 128 elements"));
  // Empty matrices: nothing to read, nothing written, no error.
  const auto empty = fp8_block_quantize<float8_e4m3fn>(static_cast<const float*>(nullptr), 0, 128, 0);
  CHECK(empty.rows() == 0);
  CHECK(empty.block_rows() == 0);
  CHECK(empty.block_cols() == 1);
  fp8_block_dequantize(empty, nullptr, 0);
}

// ---- stochastic rounding (issue 16, item 5) ----

TEST_CASE("k-bit stochastic rounding: 2^k random values round away floor(fraction · 2^k) times",
          "[blockscale][fp8_block][sr]") {
  // e4m3 between 1 and 1.125 (gap 2^-3), e5m2 between -2 and -2.5 (gap 2^-1): fraction m / 2^20,
  // exact in float (the value has at most 24 significant bits).
  const std::uint32_t numerators[] = {0, 1, 4095, 4096, 4097, 65535, 65536, 65537, 524287, 524288, 699050, 1048575};
  for (const int k : {8, 16, 32}) {
    block_stochastic_rounding sr;
    sr.enabled = true;
    sr.random_bits = k;
    for (const std::uint32_t m : numerators) {
      const double fraction = static_cast<double>(m) / 1048576.0;
      const auto floor_f = static_cast<std::uint64_t>(std::floor(fraction * std::ldexp(1.0, k)));
      const float x4 = static_cast<float>(1.0 + fraction * 0.125), x5 = static_cast<float>(-2.0 - fraction * 0.5);
      INFO("k " << k << " fraction " << m << "/2^20");
      if (k <= 16) {
        std::uint64_t away4 = 0, away5 = 0, others = 0;
        for (std::uint32_t r = 0; r < (1u << k); ++r) {
          const std::uint32_t random = r | (0xC3C3'0000u << (k - 8));  // bits above k are ignored
          const auto q4 = convert_stochastic<float8_e4m3fn>(x4, sr.aligned(random), overflow::saturate);
          const auto q5 = convert_stochastic<float8_e5m2>(x5, sr.aligned(random), overflow::saturate);
          away4 += static_cast<float>(q4) == 1.125f;
          away5 += static_cast<float>(q5) == -2.5f;
          others += (static_cast<float>(q4) != 1.0f && static_cast<float>(q4) != 1.125f) ||
                    (static_cast<float>(q5) != -2.0f && static_cast<float>(q5) != -2.5f);
        }
        CHECK(away4 == floor_f);
        CHECK(away5 == floor_f);
        CHECK(others == 0);
      } else {  // the decision's edge: away iff floor(f · 2^32) + r >= 2^32
        const std::uint64_t edge = (std::uint64_t{1} << 32) - floor_f;
        if (edge <= 0xFFFF'FFFFu) {
          CHECK(static_cast<float>(
                    convert_stochastic<float8_e4m3fn>(x4, sr.aligned(static_cast<std::uint32_t>(edge)))) == 1.125f);
        }
        if (floor_f > 0) {
          CHECK(static_cast<float>(
                    convert_stochastic<float8_e4m3fn>(x4, sr.aligned(static_cast<std::uint32_t>(edge - 1)))) == 1.0f);
        }
      }
    }
  }
}

namespace {

block_stochastic_rounding stochastic_stream(int k) {
  block_stochastic_rounding sr;
  sr.enabled = true;
  sr.seed = 0x0123'4567'89AB'CDEFu;
  sr.tensor_id = 11;
  sr.step = 5;
  sr.random_bits = k;
  return sr;
}

// Quantises x both ways and checks every stochastic code against convert_stochastic of the
// scaled element with word r · cols + c, the scales against round to nearest's; returns how
// many codes moved off the nearest one.
template <class T, class In>
std::size_t check_stochastic_codes(const std::vector<In>& x, std::size_t rows, std::size_t cols,
                                   const fp8_block_options& o) {
  fp8_block_options nearest = o;
  nearest.stochastic.enabled = false;
  const auto sr = fp8_block_quantize<T>(x.data(), rows, cols, cols, o);
  const auto rn = fp8_block_quantize<T>(x.data(), rows, cols, cols, nearest);
  std::size_t bad = 0, moved = 0;
  for (std::size_t i = 0; i < rn.block_rows(); ++i) {
    for (std::size_t j = 0; j < rn.block_cols(); ++j) bad += bits_of(sr.scale_inv(i, j)) != bits_of(rn.scale_inv(i, j));
  }
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const float v = static_cast<float>(x[r * cols + c]), s = rn.scale_inv_at(r, c);
      // The encode factor each rule applies: DeepSeek-V3 divides by its decode scale, TE
      // multiplies by its encode scale, whose inverse the decode scale is (a power of two here).
      const float scaled =
          o.rule == fp8_block_rule::deepseek_v3 ? mixprec::detail::divide_nearest(v, s) : v * (1.0f / s);
      const T want = convert_stochastic<T>(scaled, o.stochastic.word(std::uint64_t{r} * cols + c), overflow::saturate);
      bad += sr.element(r, c).bits() != want.bits();
      moved += sr.element(r, c).bits() != rn.element(r, c).bits();
    }
  }
  CHECK(bad == 0);
  return moved;
}

}  // namespace

TEST_CASE("fp8 block stochastic quantisation: element (r, c) uses word r · cols + c; scales stay round to nearest",
          "[blockscale][fp8_block][sr]") {
  const std::size_t rows = 130, cols = 257;
  const std::vector<float> x = awkward_data(rows, cols, false);
  for (const int k : {8, 16, 32}) {
    for (fp8_block_rule rule : {fp8_block_rule::transformer_engine, fp8_block_rule::deepseek_v3}) {
      for (fp8_block_kind kind : {fp8_block_kind::row_1x128, fp8_block_kind::tile_128x128}) {
        fp8_block_options o;
        o.rule = rule;
        o.kind = kind;
        o.stochastic = stochastic_stream(k);
        INFO("k " << k << " rule " << static_cast<int>(rule) << " kind " << to_string(kind));
        CHECK(check_stochastic_codes<float8_e4m3fn>(x, rows, cols, o) > 0);
        if (rule != fp8_block_rule::deepseek_v3) CHECK(check_stochastic_codes<float8_e5m2>(x, rows, cols, o) > 0);
      }
    }
  }
  std::vector<bfloat16> b(rows * cols);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = bfloat16(x[i]);
  fp8_block_options o;
  o.stochastic = stochastic_stream(8);
  CHECK(check_stochastic_codes<float8_e4m3fn>(b, rows, cols, o) > 0);
}

TEST_CASE("fp8 block stochastic quantisation depends on (seed, tensor id, step) and nothing else",
          "[blockscale][fp8_block][sr]") {
  const std::size_t rows = 40, cols = 200;
  const std::vector<float> x = awkward_data(rows, cols, true);
  fp8_block_options o;
  o.stochastic = stochastic_stream(16);
  const auto base = fp8_block_quantize<float8_e4m3fn>(x.data(), rows, cols, cols, o);
  const auto count_differences = [&](const fp8_block_matrix<float8_e4m3fn>& m) {
    std::size_t differ = 0;
    for (std::size_t i = 0; i < rows * cols; ++i) differ += m.data()[i].bits() != base.data()[i].bits();
    return differ;
  };
  on_every_path_and_thread_count([&] {  // the same bits on every path
    CHECK(count_differences(fp8_block_quantize<float8_e4m3fn>(x.data(), rows, cols, cols, o)) == 0);
  });
  for (int which = 0; which < 3; ++which) {
    fp8_block_options changed = o;
    if (which == 0) changed.stochastic.seed += 1;
    if (which == 1) changed.stochastic.tensor_id += 1;
    if (which == 2) changed.stochastic.step += 1;
    CHECK(count_differences(fp8_block_quantize<float8_e4m3fn>(x.data(), rows, cols, cols, changed)) > 0);
  }
  // NaN and inf inputs keep their round-to-nearest codes (the stream cannot move a special value).
  fp8_block_options nearest;
  const auto rn = fp8_block_quantize<float8_e4m3fn>(x.data(), rows, cols, cols, nearest);
  for (const std::size_t i : {3 * cols + 5, 4 * cols + 130, 8 * cols + 1}) {
    CHECK(base.data()[i].bits() == rn.data()[i].bits());
  }
}

TEST_CASE("fp8_block_quantize into an existing matrix writes every code and scale", "[blockscale][fp8_block]") {
  const std::size_t rows = 130, cols = 257;
  const std::vector<float> x = awkward_data(rows, cols, true);
  for (fp8_block_kind kind : {fp8_block_kind::row_1x128, fp8_block_kind::tile_128x128}) {
    fp8_block_options o;
    o.kind = kind;
    const auto want = fp8_block_quantize<float8_e4m3fn>(x.data(), rows, cols, cols, o);
    fp8_block_matrix<float8_e4m3fn> m(rows, cols, kind, o.rule);
    for (std::size_t i = 0; i < rows * cols; ++i) m.data()[i] = float8_e4m3fn::from_bits(0x55);  // stale codes
    for (std::size_t b = 0; b < m.block_rows() * m.block_cols(); ++b) m.scale_invs()[b] = -3.0f;
    fp8_block_quantize(x.data(), cols, m, o);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < rows * cols; ++i) differ += m.data()[i].bits() != want.data()[i].bits();
    for (std::size_t b = 0; b < m.block_rows() * m.block_cols(); ++b) {
      differ += bits_of(m.scale_invs()[b]) != bits_of(want.scale_invs()[b]);
    }
    CHECK(differ == 0);
  }
  fp8_block_matrix<float8_e4m3fn> tiles(rows, cols, fp8_block_kind::tile_128x128, fp8_block_rule::transformer_engine);
  CHECK_THROWS_WITH(fp8_block_quantize(x.data(), cols, tiles, fp8_block_options{}),
                    Catch::Contains("fp8_block_quantize: the options ask for row_1x128 blocks by rule 0, the matrix "
                                    "has tile_128x128 blocks by rule 0"));
  CHECK_THROWS_WITH(
      fp8_block_quantize(
          x.data(), cols - 1, tiles,
          fp8_block_options{fp8_block_rule::transformer_engine, fp8_block_kind::tile_128x128, true, 0.0f, {}}),
      Catch::Contains("leading dimension 256 is smaller than the 257 columns"));
}
