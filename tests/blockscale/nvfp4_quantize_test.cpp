// blockscale/nvfp4.hpp: known answers derived from the rules in exact float32, the anchors'
// reference quantisers transcribed (TE's reference_nvfp4.py _quantize_blockwise_reference with
// cast_to_fp4x2's threshold table; torchao's _nvfp4_quantize with a per-tensor scale) and compared
// bit for bit, stochastic rounding's k-bit rule counted over every random value, reproducibility
// across thread counts, and the errors.
#include <mixprec/blockscale/nvfp4.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "simd_paths.hpp"

namespace {

using namespace mixprec::blockscale;
using mixprec::float8_e4m3fn;

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

// Stochastic rounding with k random bits: its aligned(r) puts r's low k bits at the top of the word.
mixprec::block_stochastic_rounding k_bits(int k) {
  mixprec::block_stochastic_rounding sr;
  sr.enabled = true;
  sr.random_bits = k;
  return sr;
}

// ---- the anchors' references, transcribed (test-only code; one float32 operation per step) ----

// cast_to_fp4x2: Python's masks applied in order, later ones overriding (NaN matches none: 0).
unsigned te_table_code(float x) {
  unsigned c = 0;
  if (x >= 0.0f && x <= 0.25f) c = 0;
  if (x > 0.25f && x < 0.75f) c = 1;
  if (x >= 0.75f && x <= 1.25f) c = 2;
  if (x > 1.25f && x < 1.75f) c = 3;
  if (x >= 1.75f && x <= 2.5f) c = 4;
  if (x > 2.5f && x < 3.5f) c = 5;
  if (x >= 3.5f && x <= 5.0f) c = 6;
  if (x > 5.0f) c = 7;
  if (x >= -0.25f && x < -0.0f) c = 8;
  if (x < -0.25f && x > -0.75f) c = 9;
  if (x <= -0.75f && x >= -1.25f) c = 10;
  if (x < -1.25f && x > -1.75f) c = 11;
  if (x <= -1.75f && x >= -2.5f) c = 12;
  if (x < -2.5f && x > -3.5f) c = 13;
  if (x <= -3.5f && x >= -5.0f) c = 14;
  if (x < -5.0f) c = 15;
  return c;
}

// f32_to_f4_unpacked for finite values in [-6, 6]: the nearest of the eight magnitudes, ties to the
// even code.
unsigned nearest_even_code(float x) {
  static const float magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = std::fabs(x);
  unsigned best = 0;
  for (unsigned k = 1; k < 8; ++k) {
    const float d = std::fabs(m - magnitudes[k]), db = std::fabs(m - magnitudes[best]);
    if (d < db || (d == db && k % 2 == 0)) best = k;
  }
  return best | (std::signbit(x) ? 8u : 0u);
}

float nan_max(float a, float b) { return std::isnan(a) || std::isnan(b) ? nan : (a > b ? a : b); }  // torch.amax
float torch_min(float a, float b) { return std::isnan(a) || std::isnan(b) ? nan : (a < b ? a : b); }
float torch_clamp(float x, float lo, float hi) { return std::isnan(x) ? x : (x < lo ? lo : (x > hi ? hi : x)); }

struct reference_copy {
  std::vector<unsigned> codes;   // lines × padded line length
  std::vector<unsigned> scales;  // lines × blocks, e4m3fn codes
  float decode = 0;              // the per-tensor decode scale
};

// The reference of one copy whose lines are the rows of x (m × n, row-major): the caller passes the
// transpose for a column-wise copy.  The matrix is padded with zeros to whole tiles first.
reference_copy reference_quantize(std::vector<float> x, std::size_t m, std::size_t n, nvfp4_rule rule, bool square) {
  const std::size_t tm = square ? (m + 15) / 16 * 16 : m, tn = (n + 15) / 16 * 16, blocks = tn / 16;
  std::vector<float> p(tm * tn, 0.0f);
  float global_amax = 0.0f;
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t c = 0; c < n; ++c) {
      p[r * tn + c] = x[r * n + c];
      global_amax = nan_max(global_amax, std::fabs(x[r * n + c]));
    }
  }
  std::vector<float> vec_max(tm * blocks, 0.0f);
  for (std::size_t r = 0; r < tm; ++r) {
    for (std::size_t b = 0; b < blocks; ++b) {
      float a = 0.0f;
      const std::size_t r0 = square ? r / 16 * 16 : r, r1 = square ? r0 + 16 : r + 1;
      for (std::size_t rr = r0; rr < r1; ++rr) {
        for (std::size_t c = b * 16; c < b * 16 + 16; ++c) a = nan_max(a, std::fabs(p[rr * tn + c]));
      }
      vec_max[r * blocks + b] = a;
    }
  }
  reference_copy out;
  out.codes.resize(tm * tn);
  out.scales.resize(tm * blocks);
  if (rule == nvfp4_rule::transformer_engine) {
    float gs = torch_min(2688.0f / global_amax, FLT_MAX);
    if (gs == 0.0f) gs = 1.0f;
    const float gdec = 1.0f / gs;
    const float multiplier = gs * (1.0f / 6.0f);
    out.decode = gdec;
    for (std::size_t r = 0; r < tm; ++r) {
      for (std::size_t b = 0; b < blocks; ++b) {
        float d = torch_min(vec_max[r * blocks + b] * multiplier, FLT_MAX);
        d = torch_clamp(d, -448.0f, 448.0f);
        const float8_e4m3fn s = mixprec::convert<float8_e4m3fn>(d);
        out.scales[r * blocks + b] = s.bits();
        const float encode = torch_min(1.0f / (static_cast<float>(s) * gdec), FLT_MAX);
        for (std::size_t c = b * 16; c < b * 16 + 16; ++c) {
          out.codes[r * tn + c] = te_table_code(torch_clamp(p[r * tn + c] * encode, -6.0f, 6.0f));
        }
      }
    }
  } else {
    const float per_tensor_scale = global_amax / 2688.0f;
    out.decode = per_tensor_scale;
    for (std::size_t r = 0; r < tm; ++r) {
      for (std::size_t b = 0; b < blocks; ++b) {
        const float block_scale = vec_max[r * blocks + b] / 6.0f;
        const float scaled = torch_clamp(block_scale / per_tensor_scale, 0x1p-6f, 448.0f);
        const float8_e4m3fn s = mixprec::convert<float8_e4m3fn>(scaled);
        out.scales[r * blocks + b] = s.bits();
        const float total = per_tensor_scale * static_cast<float>(s);
        for (std::size_t c = b * 16; c < b * 16 + 16; ++c) {
          out.codes[r * tn + c] = nearest_even_code(torch_clamp(p[r * tn + c] / total, -6.0f, 6.0f));
        }
      }
    }
  }
  out.codes.resize(m * tn);
  out.scales.resize(m * blocks);
  return out;
}

std::vector<float> transposed(const std::vector<float>& a, std::size_t rows, std::size_t cols) {
  std::vector<float> t(a.size());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
  }
  return t;
}

// Compares copy m with the reference of its lines; returns the number of differences.  Where the
// reference's scale is 0 (TE only: the block's amax is below e4m3's range) the library's codes are
// ±0 (the kernels' multiplier 0) and the reference's whatever x × FLT_MAX clamps to: the values are
// 0 either way, so only that is checked.  -0 and +0 codes are equal (the table gives 0 for -0.0).
std::size_t differences(const nvfp4_matrix& m, const reference_copy& ref) {
  std::size_t diff = 0;
  const std::size_t tn = m.blocks_per_line() * 16;
  for (std::size_t line = 0; line < m.lines(); ++line) {
    for (std::size_t b = 0; b < m.blocks_per_line(); ++b) {
      const unsigned s = ref.scales[line * m.blocks_per_line() + b];
      if (m.scale(line, b).bits() != (s & 0x7Fu)) ++diff;
      for (std::size_t p = b * 16; p < std::min(b * 16 + 16, m.line_length()); ++p) {
        const unsigned got = m.columnwise() ? m.code(p, line) : m.code(line, p);
        const unsigned want = ref.codes[line * tn + p];
        if (s == 0) {
          if ((got & 7u) != 0) ++diff;
        } else if ((got == 8 ? 0 : got) != (want == 8 ? 0 : want)) {
          ++diff;
        }
      }
    }
  }
  return diff;
}

// Rows scaled by powers of two from 2^-40 to 2^40 (so that some blocks' scales are e4m3
// subnormals or zero), with exact ties and zeros sprinkled in.
std::vector<float> awkward_matrix(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exponent(-40, 40), pick(0, 15);
  std::vector<float> a(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const float row_scale = std::ldexp(1.0f, exponent(gen));
    for (std::size_t c = 0; c < cols; ++c) {
      const int k = pick(gen);
      a[r * cols + c] = k == 0   ? 0.0f
                        : k == 1 ? row_scale * 0.25f * static_cast<float>(pick(gen))
                                 : row_scale * normal(gen);
    }
  }
  return a;
}

TEST_CASE("nvfp4 quantisation equals the transcribed TE and torchao references bit for bit", "[nvfp4]") {
  struct shape {
    std::size_t rows, cols;
  };
  // 40 × 150 and 130 × 70: column-wise copies of more than one group of 64 transposed lines.
  // 3 × 1100 and 1030 × 3: lines of more than one batch of 64 blocks (nvfp4_batch_blocks), the
  // last one a partial block.
  for (const shape s : {shape{33, 50}, shape{16, 16}, shape{1, 16}, shape{17, 1}, shape{64, 48}, shape{5, 37},
                        shape{40, 150}, shape{130, 70}, shape{3, 1100}, shape{1030, 3}}) {
    for (const nvfp4_rule rule : {nvfp4_rule::transformer_engine, nvfp4_rule::torchao}) {
      for (const nvfp4_tile tile : {nvfp4_tile::row_16, nvfp4_tile::square_16}) {
        for (std::uint32_t seed = 1; seed <= 4; ++seed) {
          const std::vector<float> a =
              awkward_matrix(s.rows, s.cols, seed * 7919u + static_cast<std::uint32_t>(s.cols));
          nvfp4_options o;
          o.rule = rule;
          o.tile = tile;
          o.columnwise = true;
          const bool square = tile == nvfp4_tile::square_16;
          const reference_copy row_ref = reference_quantize(a, s.rows, s.cols, rule, square);
          const reference_copy col_ref =
              reference_quantize(transposed(a, s.rows, s.cols), s.cols, s.rows, rule, square);
          INFO(s.rows << " × " << s.cols << " " << to_string(rule) << (square ? " 16×16" : " 1×16") << " seed "
                      << seed);
          on_every_path_and_thread_count([&] {  // the conversion runs on the path's kernels
            const nvfp4_tensor t = nvfp4_quantize(a.data(), s.rows, s.cols, s.cols, o);
            CHECK(differences(*t.rowwise, row_ref) == 0);
            CHECK(differences(*t.columnwise, col_ref) == 0);
            CHECK(t.rowwise->decode_scale() == row_ref.decode);
            CHECK(t.columnwise->decode_scale() == col_ref.decode);
          });
        }
      }
    }
  }
}

// One block in row 0 with the given 16 values; row 1 carries the tensor's amax alone.
nvfp4_tensor two_rows(const std::vector<float>& block, float amax, nvfp4_rule rule) {
  std::vector<float> a(32, 0.0f);
  for (std::size_t i = 0; i < block.size(); ++i) a[i] = block[i];
  a[16] = amax;
  nvfp4_options o;
  o.rule = rule;
  return nvfp4_quantize(a.data(), 2, 16, 16, o);
}

TEST_CASE("nvfp4 known answers: amax 6·448 gives S_enc 1 and exact e2m1 ties to even", "[nvfp4]") {
  // amax 2688: S_enc = 2688 / 2688 = 1 (TE), p = 1 (torchao).  Block amax 6: fl(6 · fl(1/6)) = 1
  // (6 × 0.16666667163 = 1.0000000298, within half an ulp of 1) and 6 / 6 / 1 = 1: scale 1.0
  // (e4m3 0'0111'000), multiplier 1, so each element's code is its own e2m1 rounding.
  const std::vector<float> block = {0.25f,  0.75f,  1.25f,  1.75f,  2.5f,  3.5f,  5.0f,  6.0f,
                                    -0.25f, -0.75f, -1.25f, -1.75f, -2.5f, -3.5f, -5.0f, 0.0f};
  const unsigned want[16] = {0, 2, 2, 4, 4, 6, 6, 7, 8, 10, 10, 12, 12, 14, 14, 0};
  for (const nvfp4_rule rule : {nvfp4_rule::transformer_engine, nvfp4_rule::torchao}) {
    INFO(to_string(rule));
    const nvfp4_tensor t = two_rows(block, 2688.0f, rule);
    const nvfp4_matrix& m = *t.rowwise;
    CHECK(m.tensor_scale() == 1.0f);
    CHECK(m.decode_scale() == 1.0f);
    CHECK(m.scale(0, 0).bits() == 0x38);
    CHECK(m.scale(1, 0).bits() == 0x7E);  // 448: 2688 × fl(1/6) = 448.0000134 rounds to 448
    CHECK(m.code(1, 0) == 7);
    CHECK(m.value(1, 0) == 2688.0f);  // 6 × 448 × 1
    for (std::size_t c = 0; c < 16; ++c) CHECK(m.code(0, c) == want[c]);
  }
}

TEST_CASE("nvfp4 known answers: e4m3 scale thresholds, saturation and subnormals", "[nvfp4]") {
  const float sixth = 1.0f / 6.0f;
  // 448 and its neighbours: 464 is the midpoint to 480, which e4m3 does not have: saturates to 448.
  CHECK(te_nvfp4_block_scale(448.0f, 1.0f).bits() == 0x7E);
  CHECK(te_nvfp4_block_scale(464.0f, 1.0f).bits() == 0x7E);
  CHECK(te_nvfp4_block_scale(1e30f, 1.0f).bits() == 0x7E);
  CHECK(te_nvfp4_block_scale(inf, 1.0f).bits() == 0x7E);  // min(inf, FLT_MAX) then satfinite
  CHECK(te_nvfp4_block_scale(nan, 1.0f).bits() == 0x7F);
  CHECK(te_nvfp4_block_scale(416.0f, 1.0f).bits() == 0x7D);  // 416 = 1.625 × 2^8 = 0'1111'101, exact
  CHECK(te_nvfp4_block_scale(400.0f, 1.0f).bits() == 0x7C);  // midpoint 384 | 416: to even (0b100)
  CHECK(te_nvfp4_block_scale(432.0f, 1.0f).bits() == 0x7E);  // midpoint 416 | 448: to even (0b110)
  CHECK(te_nvfp4_block_scale(431.0f, 1.0f).bits() == 0x7D);
  // e4m3 subnormals: 2^-9 is the smallest; 2^-10 ties to 0; 3 × 2^-10 ties up to 2 × 2^-9.
  CHECK(te_nvfp4_block_scale(0x1p-9f, 1.0f).bits() == 0x01);
  CHECK(te_nvfp4_block_scale(0x1p-10f, 1.0f).bits() == 0x00);
  CHECK(te_nvfp4_block_scale(0x1.8p-10f, 1.0f).bits() == 0x01);
  CHECK(te_nvfp4_block_scale(0x3p-10f, 1.0f).bits() == 0x02);
  // The product 6 × 448 through the folded reciprocal: S_enc = 1, multiplier fl(1/6).
  CHECK(te_nvfp4_block_multiplier(1.0f) == sixth);
  CHECK(te_nvfp4_encode_scale(2688.0f) == 1.0f);
  CHECK(te_nvfp4_encode_scale(1344.0f) == 2.0f);
  CHECK(te_nvfp4_encode_scale(0.0f) == 1.0f);
  CHECK(te_nvfp4_encode_scale(inf) == 1.0f);           // 2688 / inf = 0
  CHECK(te_nvfp4_encode_scale(0x1p-140f) == FLT_MAX);  // 2688 / 2^-140 overflows
  CHECK(std::isnan(te_nvfp4_encode_scale(nan)));
  CHECK(te_nvfp4_element_multiplier(mixprec::float8_ue4m3::from_bits(0), 1.0f) == 0.0f);
  CHECK(te_nvfp4_element_multiplier(mixprec::float8_ue4m3::from_bits(0x38), 0.5f) == 2.0f);
  // torchao: clamped to [2^-6, 448] before the cast, so never 0 or subnormal.
  CHECK(torchao_nvfp4_block_scale(6.0f * 0x1p-10f, 1.0f).bits() == 0x08);  // 2^-10 -> 2^-6
  CHECK(torchao_nvfp4_block_scale(0.0f, 1.0f).bits() == 0x08);
  CHECK(torchao_nvfp4_block_scale(6.0f * 1000.0f, 1.0f).bits() == 0x7E);
  CHECK(torchao_nvfp4_block_scale(0.0f, 0.0f).bits() == 0x7F);  // 0 / 0
  CHECK(torchao_nvfp4_tensor_scale(5376.0f) == 2.0f);
}

TEST_CASE("nvfp4 known answers: zero, subnormal, infinite and NaN tensors", "[nvfp4]") {
  SECTION("a zero tensor: TE scales and codes 0, S_enc 1; torchao 0 / 0 gives NaN scales") {
    const std::vector<float> zeros(std::size_t{33} * 50, 0.0f);
    nvfp4_options o;
    const nvfp4_tensor te = nvfp4_quantize(zeros.data(), 33, 50, 50, o);
    CHECK(te.rowwise->tensor_scale() == 1.0f);
    o.rule = nvfp4_rule::torchao;
    const nvfp4_tensor ao = nvfp4_quantize(zeros.data(), 33, 50, 50, o);
    for (std::size_t r = 0; r < 33; ++r) {
      for (std::size_t c = 0; c < 50; ++c) {
        CHECK(te.rowwise->code(r, c) == 0);
        CHECK(te.rowwise->value(r, c) == 0.0f);
        CHECK(ao.rowwise->code(r, c) == 0);
        CHECK(std::isnan(ao.rowwise->value(r, c)));
      }
    }
    CHECK(te.rowwise->scale(0, 0).bits() == 0);
    CHECK(ao.rowwise->scale(0, 0).bits() == 0x7F);
  }
  SECTION("a tensor of float subnormals: S_enc = FLT_MAX, every scale below e4m3's range, all zero") {
    std::vector<float> tiny(16);
    for (std::size_t i = 0; i < 16; ++i) tiny[i] = (i % 2 ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(i + 1), -140);
    const nvfp4_tensor t = nvfp4_quantize(tiny.data(), 1, 16, 16);
    CHECK(t.rowwise->tensor_scale() == FLT_MAX);
    CHECK(t.rowwise->scale(0, 0).bits() == 0);
    for (std::size_t c = 0; c < 16; ++c) CHECK(t.rowwise->value(0, c) == 0.0f);
  }
  SECTION("inf: S_enc 1, its block's scale 448, the inf element ±6, decoding to ±2688") {
    const nvfp4_tensor t = two_rows({1.0f, -inf, 100.0f}, 3.0f, nvfp4_rule::transformer_engine);
    const nvfp4_matrix& m = *t.rowwise;
    CHECK(m.tensor_scale() == 1.0f);
    CHECK(m.scale(0, 0).bits() == 0x7E);
    CHECK(m.code(0, 1) == 15);
    CHECK(m.value(0, 1) == -2688.0f);
    CHECK(m.code(0, 0) == 0);      // 1 × fl(1/448) is below 0.25
    CHECK(m.code(0, 2) == 0);      // 100 × fl(1/448) = 0.2232..., below 0.25
    CHECK(m.value(1, 0) == 3.0f);  // row 1: amax 3, s = fl(3 · fl(1/6)) = 0.5, q = 6
  }
  SECTION("NaN anywhere: every scale NaN, every code 0, every value NaN") {
    std::vector<float> a = awkward_matrix(33, 50, 3);
    a[700] = nan;
    for (const nvfp4_rule rule : {nvfp4_rule::transformer_engine, nvfp4_rule::torchao}) {
      nvfp4_options o;
      o.rule = rule;
      o.columnwise = true;
      const nvfp4_tensor t = nvfp4_quantize(a.data(), 33, 50, 50, o);
      for (const nvfp4_matrix* m : {&*t.rowwise, &*t.columnwise}) {
        for (std::size_t r = 0; r < 33; ++r) {
          for (std::size_t c = 0; c < 50; ++c) {
            CHECK(m->code(r, c) == 0);
            CHECK(std::isnan(m->value(r, c)));
          }
        }
      }
    }
  }
}

TEST_CASE("nvfp4 copies: columnwise is the rowwise quantisation of the transpose; 16×16 copies agree", "[nvfp4]") {
  const std::vector<float> a = awkward_matrix(33, 50, 11);
  const std::vector<float> at = transposed(a, 33, 50);
  for (const nvfp4_rule rule : {nvfp4_rule::transformer_engine, nvfp4_rule::torchao}) {
    nvfp4_options o;
    o.rule = rule;
    o.columnwise = true;
    const nvfp4_tensor t = nvfp4_quantize(a.data(), 33, 50, 50, o);
    const nvfp4_tensor u = nvfp4_quantize(at.data(), 50, 33, 33, o);
    o.tile = nvfp4_tile::square_16;
    const nvfp4_tensor sq = nvfp4_quantize(a.data(), 33, 50, 50, o);
    for (std::size_t r = 0; r < 33; ++r) {
      for (std::size_t c = 0; c < 50; ++c) {
        CHECK(t.columnwise->code(r, c) == u.rowwise->code(c, r));
        CHECK(t.columnwise->scale(c, r / 16).bits() == u.rowwise->scale(c, r / 16).bits());
        CHECK(sq.columnwise->code(r, c) == sq.rowwise->code(r, c));
        CHECK(sq.columnwise->scale(c, r / 16).bits() == sq.rowwise->scale(r, c / 16).bits());
        // dequantise writes the matrix's orientation for either copy
      }
    }
    std::vector<float> out(std::size_t{33} * 60, -1.0f);
    nvfp4_dequantize(*t.columnwise, out.data(), 60);
    for (std::size_t r = 0; r < 33; ++r) {
      for (std::size_t c = 0; c < 50; ++c) CHECK(out[r * 60 + c] == t.columnwise->value(r, c));
      for (std::size_t c = 50; c < 60; ++c) CHECK(out[r * 60 + c] == -1.0f);
    }
  }
}

// ---- stochastic rounding ----

TEST_CASE("nvfp4 stochastic rounding: 2^k random values round away floor(fraction · 2^k) times", "[nvfp4][sr]") {
  // Scaled values between the e2m1 neighbours 2 and 3 (gap 1) and between -1 and -1.5 (gap 0.5):
  // fraction = m / 2^21 exactly.
  const std::uint32_t numerators[] = {0,     1,     2047,    2048,    2049,    8191,    8192,   65535,
                                      65536, 65537, 1048575, 1048576, 1048577, 1398101, 2097151};
  for (const int k : {8, 16, 32}) {
    for (const std::uint32_t m : numerators) {
      for (const bool negative : {false, true}) {
        const double fraction = static_cast<double>(m) / 2097152.0;
        const float lower = negative ? -1.0f : 2.0f, gap = negative ? -0.5f : 1.0f;
        const float x = static_cast<float>(lower + fraction * gap);
        const unsigned lower_code = negative ? 10u : 4u, away_code = negative ? 11u : 5u;
        const auto floor_f = static_cast<std::uint64_t>(std::floor(fraction * std::ldexp(1.0, k)));
        INFO("k " << k << " fraction " << m << "/2^21 " << (negative ? "negative" : "positive"));
        if (k <= 16) {
          std::uint64_t away = 0, others = 0;
          for (std::uint32_t r = 0; r < (1u << k); ++r) {
            // High bits above k are ignored: pass them set.
            const std::uint32_t random = r | (k < 32 ? 0xA5A5'0000u << (k - 8) : 0u);
            const unsigned code = nvfp4_element_code(x, true, k_bits(k).aligned(random));
            away += code == away_code;
            others += code != away_code && code != lower_code;
          }
          CHECK(away == floor_f);
          CHECK(others == 0);
        } else {
          // k = 32: the decision's edge, away iff F + r >= 2^32.
          const std::uint64_t edge = (std::uint64_t{1} << 32) - floor_f;
          if (edge <= 0xFFFF'FFFFu) CHECK(nvfp4_element_code(x, true, static_cast<std::uint32_t>(edge)) == away_code);
          if (floor_f > 0 || m == 0) {
            CHECK(nvfp4_element_code(x, true, static_cast<std::uint32_t>(edge - 1)) == lower_code);
          }
        }
      }
    }
  }
  CHECK(nvfp4_element_code(6.0f, true, k_bits(8).aligned(0xFF)) == 7);  // representable values never move
  CHECK(nvfp4_element_code(7.0f, true, k_bits(8).aligned(0xFF)) == 7);  // clamped to 6 first
  CHECK(nvfp4_element_code(-100.0f, true, k_bits(16).aligned(0)) == 15);
}

nvfp4_options stochastic_options(int k) {
  nvfp4_options o;
  o.columnwise = true;
  o.stochastic.enabled = true;
  o.stochastic.seed = 0x1234'5678'9ABC'DEF0u;
  o.stochastic.tensor_id = 7;
  o.stochastic.step = 42;
  o.stochastic.random_bits = k;
  return o;
}

TEST_CASE("nvfp4 stochastic quantisation: element i uses Philox word i of (seed, tensor, step); scales stay RN",
          "[nvfp4][sr]") {
  const std::size_t rows = 33, cols = 50;
  const std::vector<float> a = awkward_matrix(rows, cols, 5);
  for (const int k : {8, 16, 32}) {
    const nvfp4_options o = stochastic_options(k);
    nvfp4_options nearest = o;
    nearest.stochastic.enabled = false;
    const nvfp4_tensor t = nvfp4_quantize(a.data(), rows, cols, cols, o);
    const nvfp4_tensor rn = nvfp4_quantize(a.data(), rows, cols, cols, nearest);
    std::size_t bad = 0, moved = 0;
    for (const bool by_columns : {false, true}) {
      const nvfp4_matrix& m = by_columns ? *t.columnwise : *t.rowwise;
      const nvfp4_matrix& n = by_columns ? *rn.columnwise : *rn.rowwise;
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) {
          const std::size_t line = by_columns ? c : r, b = (by_columns ? r : c) / 16;
          bad += m.scale(line, b).bits() != n.scale(line, b).bits();
          const std::uint64_t i = by_columns ? rows * cols + c * rows + r : r * cols + c;
          const std::uint32_t random = mixprec::detail::philox_bits(o.stochastic.seed, 7, 42, i);
          const float e = te_nvfp4_element_multiplier(m.scale(line, b), m.decode_scale());
          const unsigned want = nvfp4_element_code(a[r * cols + c] * e, true, k_bits(k).aligned(random));
          bad += m.code(r, c) != want;
          moved += m.code(r, c) != n.code(r, c);
        }
      }
    }
    INFO("k " << k);
    CHECK(bad == 0);
    CHECK(moved > 0);
  }
  for (std::uint64_t i = 0; i < 9; ++i) {  // (tensor, step) = (0, 0) is convert_stochastic_n's stream
    CHECK(mixprec::detail::philox_bits(99, 0, 0, i) == mixprec::detail::philox_bits(99, i));
  }
  nvfp4_options other = stochastic_options(32);
  const nvfp4_tensor base = nvfp4_quantize(a.data(), rows, cols, cols, other);
  for (int which = 0; which < 3; ++which) {
    nvfp4_options changed = other;
    if (which == 0) changed.stochastic.seed += 1;
    if (which == 1) changed.stochastic.tensor_id += 1;
    if (which == 2) changed.stochastic.step += 1;
    const nvfp4_tensor t = nvfp4_quantize(a.data(), rows, cols, cols, changed);
    std::size_t differ = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) differ += t.rowwise->code(r, c) != base.rowwise->code(r, c);
    }
    CHECK(differ > 0);
  }
}

TEST_CASE("nvfp4 quantisation of lines in any split and order gives the bytes of one pass", "[nvfp4][sr]") {
  const std::size_t rows = 33, cols = 50;
  const std::vector<float> a = awkward_matrix(rows, cols, 9);
  const nvfp4_options o = stochastic_options(16);
  const nvfp4_tensor t = nvfp4_quantize(a.data(), rows, cols, cols, o);
  for (const nvfp4_matrix* whole : {&*t.rowwise, &*t.columnwise}) {
    nvfp4_matrix pieces(rows, cols, whole->columnwise(), whole->rule());
    pieces.set_tensor_scale(whole->amax(), whole->tensor_scale(), whole->decode_scale());
    const std::size_t n = whole->lines(), cut1 = n / 3, cut2 = n - 1;
    for (const auto& range :
         {std::make_pair(cut2, n), std::make_pair(cut1, cut2), std::make_pair(std::size_t{0}, cut1)}) {
      detail::nvfp4_quantize_lines(a.data(), cols, pieces, {}, o, range.first, range.second);
    }
    std::size_t differ = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        differ += pieces.code(r, c) != whole->code(r, c);
        const std::size_t line = whole->columnwise() ? c : r, b = (whole->columnwise() ? r : c) / 16;
        differ += pieces.scale(line, b).bits() != whole->scale(line, b).bits();
      }
    }
    CHECK(differ == 0);
  }
}

// Every byte of two copies (codes, the padding's included, and scales) and their tensor scales.
bool same_bytes(const nvfp4_matrix& x, const nvfp4_matrix& y) {
  if (x.rows() != y.rows() || x.cols() != y.cols() || x.columnwise() != y.columnwise() || x.rule() != y.rule() ||
      x.hadamard_transformed() != y.hadamard_transformed()) {
    return false;
  }
  if (mixprec::detail::bit_cast<std::uint32_t>(x.amax()) != mixprec::detail::bit_cast<std::uint32_t>(y.amax()) ||
      mixprec::detail::bit_cast<std::uint32_t>(x.decode_scale()) !=
          mixprec::detail::bit_cast<std::uint32_t>(y.decode_scale())) {
    return false;
  }
  for (std::size_t line = 0; line < x.lines(); ++line) {
    for (std::size_t b = 0; b < x.blocks_per_line(); ++b) {
      if (x.scale(line, b).bits() != y.scale(line, b).bits()) return false;
      if (std::memcmp(x.block_data(line, b), y.block_data(line, b), 8) != 0) return false;
    }
  }
  return true;
}

TEST_CASE("nvfp4 quantisation into a tensor reuses matching copies and gives a fresh quantisation's bytes", "[nvfp4]") {
  const std::size_t rows = 32, cols = 50;
  const std::vector<float> a = awkward_matrix(rows, cols, 3), b = awkward_matrix(rows, cols, 4);
  const std::vector<float> nans(rows * cols, std::numeric_limits<float>::quiet_NaN());
  nvfp4_options both;
  both.columnwise = true;
  both.columnwise_rht.enabled = true;
  nvfp4_tensor t;
  nvfp4_quantize(a.data(), rows, cols, cols, t, both);
  const unsigned char* row_storage = t.rowwise->block_data(0, 0);
  const unsigned char* column_storage = t.columnwise->block_data(0, 0);
  for (const std::vector<float>* x : {&b, &nans, &a}) {
    nvfp4_quantize(x->data(), rows, cols, cols, t, both);
    const nvfp4_tensor fresh = nvfp4_quantize(x->data(), rows, cols, cols, both);
    CHECK(same_bytes(*t.rowwise, *fresh.rowwise));
    CHECK(same_bytes(*t.columnwise, *fresh.columnwise));
    CHECK(t.rowwise->block_data(0, 0) == row_storage);  // overwritten, not reallocated
    CHECK(t.columnwise->block_data(0, 0) == column_storage);
  }
  nvfp4_options torchao_rows;  // another rule, one copy: the row-wise copy replaced, the other reset
  torchao_rows.rule = nvfp4_rule::torchao;
  nvfp4_quantize(b.data(), rows, cols, cols, t, torchao_rows);
  CHECK(same_bytes(*t.rowwise, *nvfp4_quantize(b.data(), rows, cols, cols, torchao_rows).rowwise));
  CHECK_FALSE(t.columnwise.has_value());
  nvfp4_quantize(a.data(), 5, 37, cols, t, torchao_rows);  // another shape
  CHECK(t.rows == 5);
  CHECK(t.cols == 37);
  CHECK(same_bytes(*t.rowwise, *nvfp4_quantize(a.data(), 5, 37, cols, torchao_rows).rowwise));
  nvfp4_options bad = both;  // refused before the tensor is touched
  bad.rule = static_cast<nvfp4_rule>(7);
  CHECK_THROWS_AS(nvfp4_quantize(a.data(), rows, cols, cols, t, bad), mixprec::invalid_argument);
  CHECK(t.rows == 5);
  CHECK(same_bytes(*t.rowwise, *nvfp4_quantize(a.data(), 5, 37, cols, torchao_rows).rowwise));
}

// Threads start only from 2^20 elements each (bulk/dispatch.hpp), so this takes 2^21 elements: run
// under the `threads` label (CI's ThreadSanitizer job), hidden from the unit run.
TEST_CASE("nvfp4 quantisation gives the same bytes on 1 and 2 threads", "[nvfp4][sr][.threads]") {
  const std::size_t rows = 1024, cols = 2048;
  const std::vector<float> a = awkward_matrix(rows, cols, 9);
  const nvfp4_options o = stochastic_options(16);
  mixprec::set_bulk_threads(1);
  const nvfp4_tensor one = nvfp4_quantize(a.data(), rows, cols, cols, o);
  mixprec::set_bulk_threads(2);
  const nvfp4_tensor two = nvfp4_quantize(a.data(), rows, cols, cols, o);
  mixprec::set_bulk_threads(1);
  std::size_t differ = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      differ += two.rowwise->code(r, c) != one.rowwise->code(r, c);
      differ += two.columnwise->code(r, c) != one.columnwise->code(r, c);
      differ += two.rowwise->scale(r, c / 16).bits() != one.rowwise->scale(r, c / 16).bits();
    }
  }
  CHECK(differ == 0);
}

// ---- errors ----

TEST_CASE("nvfp4_quantize and nvfp4_dequantize reject bad arguments, naming the value and the limit", "[nvfp4]") {
  const std::vector<float> a(64, 1.0f);
  nvfp4_options o;
  o.stochastic.enabled = true;
  o.stochastic.random_bits = 12;
  CHECK_THROWS_AS(nvfp4_quantize(a.data(), 4, 16, 16, o), mixprec::invalid_argument);
  CHECK_THROWS_WITH(nvfp4_quantize(a.data(), 4, 16, 16, o),
                    Catch::Contains("nvfp4_quantize: random_bits is 12; allowed: 8, 16 or 32"));
  nvfp4_options neither;
  neither.rowwise = false;
  CHECK_THROWS_WITH(nvfp4_quantize(a.data(), 4, 16, 16, neither),
                    Catch::Contains("neither the rowwise nor the columnwise copy"));
  nvfp4_options bad_rule;
  bad_rule.rule = static_cast<nvfp4_rule>(5);
  CHECK_THROWS_WITH(nvfp4_quantize(a.data(), 4, 16, 16, bad_rule),
                    Catch::Contains("nvfp4_quantize: rule is 5, not an nvfp4_rule"));
  nvfp4_options bad_tile;
  bad_tile.tile = static_cast<nvfp4_tile>(3);
  CHECK_THROWS_WITH(nvfp4_quantize(a.data(), 4, 16, 16, bad_tile),
                    Catch::Contains("nvfp4_quantize: tile is 3, not an nvfp4_tile"));
  CHECK_THROWS_WITH(nvfp4_quantize(a.data(), 4, 16, 8),
                    Catch::Contains("nvfp4_quantize: leading dimension 8 is smaller than the 16 columns"));
  CHECK_THROWS_WITH(nvfp4_quantize(nullptr, 4, 16, 16),
                    Catch::Contains("nvfp4_quantize: null matrix pointer for 4 × 16 elements"));
  const nvfp4_tensor t = nvfp4_quantize(a.data(), 4, 16, 16);
  std::vector<float> out(64);
  CHECK_THROWS_WITH(nvfp4_dequantize(*t.rowwise, out.data(), 15),
                    Catch::Contains("nvfp4_dequantize: leading dimension 15 is smaller than the 16 columns"));
  const nvfp4_tensor empty = nvfp4_quantize(nullptr, 0, 0, 0);
  CHECK(empty.rowwise->blocks_per_line() == 0);
}

}  // namespace
