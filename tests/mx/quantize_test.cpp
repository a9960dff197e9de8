// mx/quantize.hpp against a direct transcription of OCP MX v1.0 §6.3 in double (scale from
// floor(log2(amax)), or the other rules' transcriptions in scale_oracles.hpp; each element
// convert<T>(V / X) with saturation, MXINT8's std::round, the quotient exact in double), on
// every SIMD path and thread count, both axes, all four scale rules, the six element types; the
// quantisation error against its bound on random, heavy-tailed and adversarial blocks;
// dequantisation exact.
//
// The bound (docs/fp8.md, "MX quantisation error"): with X the block's scale, m the element's
// mantissa bits and emin its smallest normal exponent, an element V with |V| <= max × X is
// within half a unit in the last place of V / X, i.e.
//   |P × X - V| <= 2^(max(floor(log2 |V|), emin + log2 X) - m - 1),
// and one beyond max × X (possible only under the ocp rule, in the block's top binade)
// saturates: |P × X - V| = |V| - max × X < (2^(emax+1) - max) × X.
#include <mixprec/limits.hpp>
#include <mixprec/mx/quantize.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "float_bits.hpp"
#include "scale_oracles.hpp"
#include "simd_paths.hpp"

namespace {

using namespace mixprec;

// The reference quantisation of one block (its elements in `v`, up to 32, zero padding implied).
template <class T>
struct reference_block {
  int code = 0;                 // e8m0 code of X
  std::vector<unsigned> codes;  // element codes
};

// The block's scale comes from the amax of `scale_from`: the block's own values, or its tile's.
template <class T>
reference_block<T> reference_quantize(const std::vector<float>& v, mx_scale_rule rule,
                                      const std::vector<float>& scale_from) {
  reference_block<T> out;
  float amax = 0;
  for (const float x : scale_from) amax = std::isnan(x) || std::isnan(amax) ? NAN : std::max(amax, std::fabs(x));
  constexpr int emax = mx_element<T>::emax;
  switch (rule) {
    case mx_scale_rule::ocp:  // Algorithm 1: floor(log2(max |V_i|)) - emax_elem, clamped to e8m0's range
      out.code = mx_oracles::floor_code(amax, emax);
      break;
    case mx_scale_rule::round_up:
      if (!std::isfinite(amax)) {
        out.code = 0xFF;
      } else {  // TE: the smallest power of two >= amax × float(1/max) (amax × rcp in float, as TE)
        const float scaled = amax * static_cast<float>(1.0 / mx_element<T>::max_value);
        const int e = scaled == 0.0f ? -127 : static_cast<int>(std::ceil(std::log2(static_cast<double>(scaled))));
        out.code = std::min(std::max(e, -127), 127) + 127;
      }
      break;
    case mx_scale_rule::ceil:
      out.code = mx_oracles::ceil_code(amax, emax);
      break;
    case mx_scale_rule::even:
      out.code = mx_oracles::even_code(amax, emax, mx_element<T>::mantissa_bits);
      break;
  }
  if (out.code == 0xFF) {  // a NaN scale: every code +0
    out.codes.assign(v.size(), 0);
    return out;
  }
  const double x_scale = std::ldexp(1.0, out.code - 127);
  for (const float x : v) {
    const double quotient = static_cast<double>(x) / x_scale;  // exact
    if constexpr (std::is_same<T, mxint8_element>::value) {
      out.codes.push_back(mx_oracles::mxint8_code(quotient));
    } else {
      out.codes.push_back(convert<T>(quotient, rounding::nearest_even, overflow::saturate).bits());
    }
  }
  return out;
}

// The error bound above for one element (MXINT8: m = 6 bits below the point and emin 0, its
// quantum 2^-6 throughout).
template <class T>
constexpr int smallest_normal_exponent() {
  if constexpr (std::is_same<T, mxint8_element>::value) {
    return 0;
  } else {
    return format_traits<typename T::format>::min_exponent;
  }
}

template <class T>
double error_bound(double v, int code) {
  constexpr int m = mx_element<T>::mantissa_bits, emin = smallest_normal_exponent<T>();
  const double x_scale = std::ldexp(1.0, code - 127), max = mx_element<T>::max_value;
  if (std::fabs(v) > max * x_scale) return (std::ldexp(1.0, mx_element<T>::emax + 1) - max) * x_scale;
  const int e_v = v == 0 ? emin + code - 127 : static_cast<int>(std::floor(std::log2(std::fabs(v))));
  return std::ldexp(1.0, std::max(e_v, emin + code - 127) - m - 1);
}

// The values of the 32 × 32 tile holding element (r, c).
std::vector<float> tile_values(const std::vector<float>& a, std::size_t rows, std::size_t cols, std::size_t lda,
                               std::size_t r, std::size_t c) {
  std::vector<float> t;
  for (std::size_t i = r / 32 * 32; i < std::min(rows, r / 32 * 32 + 32); ++i) {
    for (std::size_t j = c / 32 * 32; j < std::min(cols, c / 32 * 32 + 32); ++j) t.push_back(a[i * lda + j]);
  }
  return t;
}

// Checks mx_quantize of the rows × cols matrix `a` (leading dimension lda) along `axis` against
// the reference block by block, the error bound and dequantisation.  Returns elements checked.
template <class T>
std::size_t check_matrix(const std::vector<float>& a, std::size_t rows, std::size_t cols, std::size_t lda, mx_axis axis,
                         mx_scale_rule rule, mx_scale_sharing sharing = mx_scale_sharing::block) {
  const mx_matrix<T> m = mx_quantize<T>(a.data(), rows, cols, lda, axis, rule, sharing);
  std::vector<float> out(rows * cols + 1, -7.0f);
  mx_dequantize(m, out.data(), cols);
  REQUIRE(out[rows * cols] == -7.0f);  // nothing written past the end
  std::size_t checked = 0;
  for (std::size_t line = 0; line < m.lines(); ++line) {
    for (std::size_t j = 0; j < m.blocks_per_line(); ++j) {
      std::vector<float> v;
      std::vector<std::pair<std::size_t, std::size_t>> where;
      for (std::size_t k = j * 32; k < std::min(m.line_length(), j * 32 + 32); ++k) {
        const std::size_t r = axis == mx_axis::rows ? line : k, c = axis == mx_axis::rows ? k : line;
        v.push_back(a[r * lda + c]);
        where.emplace_back(r, c);
      }
      const reference_block<T> expected = reference_quantize<T>(
          v, rule,
          sharing == mx_scale_sharing::block ? v : tile_values(a, rows, cols, lda, where[0].first, where[0].second));
      INFO("line " << line << ", block " << j << ", rule " << to_string(rule) << ", axis " << to_string(axis)
                   << ", sharing " << to_string(sharing));
      REQUIRE(m.block_scale(line, j).bits() == expected.code);
      for (std::size_t k = 0; k < v.size(); ++k) {
        const std::size_t r = where[k].first, c = where[k].second;
        INFO("element (" << r << ", " << c << ") = " << v[k]);
        REQUIRE(m.element(r, c).bits() == expected.codes[k]);
        const float value = m.value(r, c);
        REQUIRE((std::isnan(value) ? std::isnan(out[r * cols + c]) : out[r * cols + c] == value));
        if (expected.code == 0xFF) {
          REQUIRE(std::isnan(value));
        } else {
          const double exact =
              static_cast<double>(static_cast<float>(m.element(r, c))) * std::ldexp(1.0, expected.code - 127);
          if (std::fabs(exact) > static_cast<double>(std::numeric_limits<float>::max())) {
            REQUIRE(std::isinf(value));  // beyond float (round_up with amax near FLT_MAX)
          } else {
            REQUIRE(static_cast<double>(value) == exact);  // dequantisation is exact
          }
          REQUIRE(std::fabs(exact - static_cast<double>(v[k])) <= error_bound<T>(v[k], expected.code));
        }
        ++checked;
      }
      // Padding codes of a short last block stay +0.
      for (std::size_t k = v.size(); k < 32; ++k) {
        REQUIRE(detail::read_packed_code<mx_element<T>::bits>(m.block_data(line, j), k) == 0);
      }
    }
  }
  return checked;
}

// Test matrices: rows of 32-element blocks with the named content, then random rows.
std::vector<float> test_matrix(std::size_t rows, std::size_t cols, std::size_t lda, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> a(rows * lda, 12345.0f);  // padding beyond cols: never read
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      float& x = a[r * lda + c];
      switch ((r + c / 32) % 9) {
        case 0:
          x = normal(random);
          break;
        case 1:  // heavy-tailed
          x = cauchy(random);
          break;
        case 2:  // magnitudes over the whole float range
          x = std::ldexp(1.0f + unit(random), static_cast<int>(random() % 270) - 149) * (random() % 2 ? 1.0f : -1.0f);
          break;
        case 3:  // one huge outlier among small values
          x = c % 32 == 5 ? 1e30f : normal(random) * 1e-3f;
          break;
        case 4:
          x = (c % 3 == 0) ? -0.0f : 0.0f;
          break;
        case 5:  // subnormal only
          x = float_from_bits(1 + static_cast<std::uint32_t>(random() % 0x7FFFFF)) * (random() % 2 ? 1.0f : -1.0f);
          break;
        case 6:  // a NaN in the block
          x = c % 32 == 9 ? std::numeric_limits<float>::quiet_NaN() : normal(random);
          break;
        case 7:  // an infinity in the block, and FLT_MAX in the one after
          x = c % 32 == 3 ? -std::numeric_limits<float>::infinity() : normal(random);
          break;
        default:  // the top of float's range and values at element rounding ties
          x = c % 32 == 0 ? std::numeric_limits<float>::max()
                          : std::ldexp(1.0f + static_cast<float>(c % 16) / 32.0f, 120);
          break;
      }
    }
  }
  return a;
}

template <class T>
void check_every_path(std::size_t rows, std::size_t cols, std::size_t lda) {
  const std::vector<float> a = test_matrix(rows, cols, lda, static_cast<std::uint32_t>(rows * 31 + cols));
  std::size_t checked = 0;
  on_every_path_and_thread_count([&] {
    for (const mx_axis axis : {mx_axis::rows, mx_axis::columns}) {
      for (const mx_scale_rule rule :
           {mx_scale_rule::ocp, mx_scale_rule::round_up, mx_scale_rule::ceil, mx_scale_rule::even}) {
        checked += check_matrix<T>(a, rows, cols, lda, axis, rule);
      }
    }
  });
  CHECK(checked > 0);
}

}  // namespace

TEMPLATE_TEST_CASE("MX quantisation equals the spec's algorithm, within the error bound, on every path", "[mx]",
                   float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn, mxint8_element) {
  check_every_path<TestType>(45, 100, 100);  // partial blocks both ways
  check_every_path<TestType>(64, 96, 101);   // whole blocks, padded rows
  check_every_path<TestType>(1, 33, 33);
  check_every_path<TestType>(33, 520, 521);  // column-wise: a whole group of 512 columns and a partial one
}

TEST_CASE("large matrices give the same bits on one and two threads", "[mx]") {
  const std::size_t rows = 1100, cols = 2048;  // 2.25 Mi elements: split over two threads
  const std::vector<float> a = test_matrix(rows, cols, cols, 4);
  for (const mx_axis axis : {mx_axis::rows, mx_axis::columns}) {
    set_bulk_threads(1);
    const mx_matrix<float4_e2m1fn> one = mx_quantize<float4_e2m1fn>(a.data(), rows, cols, cols, axis);
    set_bulk_threads(2);
    const mx_matrix<float4_e2m1fn> two = mx_quantize<float4_e2m1fn>(a.data(), rows, cols, cols, axis);
    std::vector<float> d1(rows * cols), d2(rows * cols);
    mx_dequantize(two, d2.data(), cols);
    set_bulk_threads(1);
    mx_dequantize(one, d1.data(), cols);
    set_bulk_threads(1);
    CHECK(std::memcmp(one.data(), two.data(), one.data_bytes()) == 0);
    CHECK(std::memcmp(one.scales(), two.scales(), one.blocks()) == 0);
    CHECK(std::memcmp(d1.data(), d2.data(), d1.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("documented behaviour of adversarial blocks", "[mx]") {
  std::vector<float> block(32, 0.25f);
  // One huge outlier: it sets the scale, the small values flush to zero.
  block[5] = 1e30f;
  mx_matrix<float8_e4m3fn> m = mx_quantize<float8_e4m3fn>(block.data(), 1, 32, 32, mx_axis::rows);
  CHECK(m.block_scale(0, 0).bits() == static_cast<int>(std::floor(std::log2(1e30))) - 8 + 127);
  CHECK(m.value(0, 0) == 0.0f);
  CHECK(std::fabs(m.value(0, 5) - 1e30f) <= 1e30f * 0.0625f);
  // All zeros: scale 2^-127, elements +0 (and -0 kept).
  std::vector<float> zeros(32, 0.0f);
  zeros[3] = -0.0f;
  m = mx_quantize<float8_e4m3fn>(zeros.data(), 1, 32, 32, mx_axis::rows);
  CHECK(m.block_scale(0, 0).bits() == 0);
  CHECK(m.element(0, 0).bits() == 0x00);
  CHECK(m.element(0, 3).bits() == 0x80);
  // NaN or inf in a block: the NaN scale, every element NaN once dequantised, codes +0.
  std::vector<float> two_blocks(64, 1.0f);
  two_blocks[40] = std::numeric_limits<float>::infinity();
  m = mx_quantize<float8_e4m3fn>(two_blocks.data(), 1, 64, 64, mx_axis::rows);
  CHECK(m.block_scale(0, 0).bits() == 119);
  CHECK(m.block_scale(0, 1).bits() == 0xFF);
  CHECK(m.element(0, 41).bits() == 0);
  CHECK(std::isnan(m.value(0, 63)));
  CHECK(m.value(0, 0) == 1.0f);
  // The ocp rule saturates the block's top values; round_up does not.
  std::vector<float> top(32, 1.0f);
  top[0] = 500.0f;
  CHECK(mx_quantize<float8_e4m3fn>(top.data(), 1, 32, 32, mx_axis::rows).value(0, 0) == 448.0f);
  CHECK(mx_quantize<float8_e4m3fn>(top.data(), 1, 32, 32, mx_axis::rows, mx_scale_rule::round_up).value(0, 0) ==
        512.0f);
}

TEST_CASE("dequantised values beyond float's range become infinite (round_up, ceil; amax near FLT_MAX)", "[mx]") {
  std::vector<float> block(32, 0.0f);
  block[0] = std::numeric_limits<float>::max();  // X = 2^126, P = 4: 2^128 has no float
  const mx_matrix<float4_e2m1fn> m =
      mx_quantize<float4_e2m1fn>(block.data(), 1, 32, 32, mx_axis::rows, mx_scale_rule::round_up);
  CHECK(m.block_scale(0, 0).bits() == 127 + 126);
  CHECK(static_cast<float>(m.element(0, 0)) == 4.0f);
  CHECK(m.value(0, 0) == std::numeric_limits<float>::infinity());
  // ceil, e4m3: X = 2^(128 - 8), FLT_MAX / X = 256 (1 - 2^-24) rounds to 256: 2^128.
  const mx_matrix<float8_e4m3fn> c =
      mx_quantize<float8_e4m3fn>(block.data(), 1, 32, 32, mx_axis::rows, mx_scale_rule::ceil);
  CHECK(c.block_scale(0, 0).bits() == 127 + 120);
  CHECK(static_cast<float>(c.element(0, 0)) == 256.0f);
  CHECK(c.value(0, 0) == std::numeric_limits<float>::infinity());
}

TEST_CASE("bad arguments are refused with the value and the limit named", "[mx]") {
  mx_matrix<float8_e5m2> m(3, 40, mx_axis::rows);
  std::vector<float> a(200, 1.0f);
  CHECK_THROWS_WITH(mx_quantize(a.data(), 39, m), Catch::Contains("leading dimension 39") && Catch::Contains("40"));
  CHECK_THROWS_WITH(mx_quantize(static_cast<const float*>(nullptr), 40, m), Catch::Contains("null"));
  CHECK_THROWS_AS(mx_dequantize(m, a.data(), 10), invalid_argument);
  CHECK_THROWS_WITH(mx_quantize(a.data(), 40, m, static_cast<mx_scale_rule>(5)),
                    Catch::Contains("mx_quantize: rule is 5, not an mx_scale_rule (0 to 3"));
  CHECK_THROWS_WITH(mx_quantize(a.data(), 40, m, mx_scale_rule::ocp, static_cast<mx_scale_sharing>(7)),
                    Catch::Contains("mx_quantize: sharing is 7, not an mx_scale_sharing (0: block, 1: tile)"));
  block_stochastic_rounding sr;
  sr.enabled = true;
  sr.random_bits = 24;
  CHECK_THROWS_WITH(mx_quantize(a.data(), 40, m, mx_scale_rule::ocp, mx_scale_sharing::block, sr),
                    Catch::Contains("mx_quantize: random_bits is 24; allowed: 8, 16 or 32"));
  // A leading dimension whose last row lies beyond the largest array (it used to wrap the pointer).
  const std::size_t far = std::size_t{1} << 62;
  CHECK_THROWS_WITH(mx_quantize(a.data(), far, m), Catch::Contains("spans more than the largest array"));
  CHECK_THROWS_AS(mx_dequantize(m, a.data(), far), invalid_argument);
}

TEST_CASE("documented behaviour of the ceil and even rules", "[mx]") {
  // 500 among ones, e4m3: ocp X = 1 saturates it to 448; ceil X = 2^(9 - 8) = 2 (500 → 250 →
  // 256 in e4m3: 512); even rounds 500 to 512 first: X = 2 as well.  470: even keeps X = 1
  // (470 rounds to 480, still 2^8) and saturates to 448; ceil gives X = 2 (470 → 235 → 240: 480).
  std::vector<float> top(32, 1.0f);
  top[0] = 500.0f;
  const auto first = [&](mx_scale_rule rule) {
    return mx_quantize<float8_e4m3fn>(top.data(), 1, 32, 32, mx_axis::rows, rule).value(0, 0);
  };
  CHECK(first(mx_scale_rule::ocp) == 448.0f);
  CHECK(first(mx_scale_rule::ceil) == 512.0f);
  CHECK(first(mx_scale_rule::even) == 512.0f);
  top[0] = 470.0f;
  CHECK(first(mx_scale_rule::even) == 448.0f);
  CHECK(first(mx_scale_rule::ceil) == 480.0f);
  // even with FLT_MAX in a block: rounded to 2^128 it is not finite: the NaN scale (torchao).
  std::vector<float> block(32, 1.0f);
  block[7] = std::numeric_limits<float>::max();
  const mx_matrix<float8_e4m3fn> m =
      mx_quantize<float8_e4m3fn>(block.data(), 1, 32, 32, mx_axis::rows, mx_scale_rule::even);
  CHECK(m.block_scale(0, 0).bits() == 0xFF);
  CHECK(std::isnan(m.value(0, 0)));
}

TEST_CASE("documented behaviour of MXINT8 blocks", "[mx]") {
  // amax 1.5: X = 2^0 under ocp; elements k/64 rounded halves away from zero, ±127 at most.
  std::vector<float> block(32, 0.0f);
  block[0] = 1.5f;
  block[1] = -2.5f / 64;  // a tie: -3/64
  block[2] = 0.3f;        // 19.2/64 → 19/64
  block[3] = -1.5f;
  mx_matrix<mxint8_element> m = mx_quantize<mxint8_element>(block.data(), 1, 32, 32, mx_axis::rows);
  CHECK(m.block_scale(0, 0).bits() == 127);
  CHECK(m.element(0, 0).integer() == 96);
  CHECK(m.element(0, 1).integer() == -3);
  CHECK(m.element(0, 2).integer() == 19);
  CHECK(m.element(0, 3).integer() == -96);
  CHECK(m.value(0, 1) == -3.0f / 64);
  // 1.999 under ocp: X = 1, saturates to 127/64; under ceil X = 2, 1.999 / 2 → 64/64.
  block[0] = 1.999f;
  m = mx_quantize<mxint8_element>(block.data(), 1, 32, 32, mx_axis::rows);
  CHECK(m.value(0, 0) == 127.0f / 64);
  m = mx_quantize<mxint8_element>(block.data(), 1, 32, 32, mx_axis::rows, mx_scale_rule::ceil);
  CHECK(m.value(0, 0) == 2.0f);
  // -2 (code 0x80) is an element value but quantisation never produces it: -1.999 → -127/64.
  block[0] = -1.999f;
  m = mx_quantize<mxint8_element>(block.data(), 1, 32, 32, mx_axis::rows);
  CHECK(m.element(0, 0).bits() == 0x81);
  m.set_element(0, 5, mxint8_element::from_bits(0x80));
  CHECK(m.value(0, 5) == -2.0f);
}

namespace {

template <class T>
void check_tiles_on_every_path(std::size_t rows, std::size_t cols, std::size_t lda) {
  const std::vector<float> a = test_matrix(rows, cols, lda, static_cast<std::uint32_t>(rows * 7 + cols));
  std::size_t checked = 0;
  on_every_path_and_thread_count([&] {
    for (const mx_scale_rule rule :
         {mx_scale_rule::ocp, mx_scale_rule::round_up, mx_scale_rule::ceil, mx_scale_rule::even}) {
      for (const mx_axis axis : {mx_axis::rows, mx_axis::columns}) {
        checked += check_matrix<T>(a, rows, cols, lda, axis, rule, mx_scale_sharing::tile);
      }
      // Row-wise and column-wise blocks of a tiled matrix: the same scale and code per element.
      const mx_matrix<T> by_rows =
          mx_quantize<T>(a.data(), rows, cols, lda, mx_axis::rows, rule, mx_scale_sharing::tile);
      const mx_matrix<T> by_columns =
          mx_quantize<T>(a.data(), rows, cols, lda, mx_axis::columns, rule, mx_scale_sharing::tile);
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) {
          REQUIRE(by_rows.scale(r, c).bits() == by_columns.scale(r, c).bits());
          REQUIRE(by_rows.element(r, c).bits() == by_columns.element(r, c).bits());
        }
      }
    }
  });
  CHECK(checked > 0);
}

}  // namespace

TEMPLATE_TEST_CASE("tiled scales (32 × 32 tiles sharing one scale) equal the reference on every path", "[mx]",
                   float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn, mxint8_element) {
  check_tiles_on_every_path<TestType>(45, 100, 100);  // partial tiles both ways
  check_tiles_on_every_path<TestType>(96, 64, 70);
  check_tiles_on_every_path<TestType>(1, 33, 33);
}

TEST_CASE("Transformer Engine's MXFP8 2D quantisation, transcribed", "[mx]") {
  // TE's reference for MXFP8BlockScaling(enable_2d_quantization=True) on a weight: pad to
  // multiples of 32 with zeros, one amax per 32 × 32 tile, its e8m0 by float_to_e8m0(amax ×
  // max_norm_rcp), every element of the tile x / 2^(e - 127) cast to e4m3; the rowwise and
  // columnwise scales are the tile's, repeated.
  const std::size_t rows = 70, cols = 100;
  std::mt19937 random(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(rows * cols);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = normal(random) * (i % 97 == 0 ? 300.0f : 1.0f);
  const std::size_t tile_rows = (rows + 31) / 32, tile_cols = (cols + 31) / 32;
  std::vector<float> padded(tile_rows * 32 * tile_cols * 32, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) padded[r * tile_cols * 32 + c] = w[r * cols + c];
  }
  std::vector<int> tile_code(tile_rows * tile_cols);
  for (std::size_t ti = 0; ti < tile_rows; ++ti) {
    for (std::size_t tj = 0; tj < tile_cols; ++tj) {
      float amax = 0.0f;
      for (std::size_t r = 0; r < 32; ++r) {
        for (std::size_t c = 0; c < 32; ++c) {
          amax = std::max(amax, std::fabs(padded[(ti * 32 + r) * tile_cols * 32 + tj * 32 + c]));
        }
      }
      tile_code[ti * tile_cols + tj] = mx_oracles::te_float_to_e8m0(amax * static_cast<float>(1.0 / 448.0));
    }
  }
  for (const mx_axis axis : {mx_axis::rows, mx_axis::columns}) {
    const mx_matrix<float8_e4m3fn> m =
        mx_quantize<float8_e4m3fn>(w.data(), rows, cols, cols, axis, mx_scale_rule::round_up, mx_scale_sharing::tile);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        const int code = tile_code[r / 32 * tile_cols + c / 32];
        const float scale_inv = std::ldexp(1.0f, code - 127);
        REQUIRE(m.scale(r, c).bits() == code);
        REQUIRE(m.element(r, c).bits() ==
                convert<float8_e4m3fn>(w[r * cols + c] / scale_inv, rounding::nearest_even, overflow::saturate).bits());
      }
    }
  }
}

TEST_CASE("a NaN or an infinity in a tile gives all of the tile's blocks the NaN scale", "[mx]") {
  std::vector<float> a(64 * 64, 1.0f);
  a[5 * 64 + 40] = std::numeric_limits<float>::quiet_NaN();  // tile (0, 1)
  const mx_matrix<float8_e4m3fn> m =
      mx_quantize<float8_e4m3fn>(a.data(), 64, 64, 64, mx_axis::rows, mx_scale_rule::ocp, mx_scale_sharing::tile);
  for (std::size_t r = 0; r < 64; ++r) {
    CHECK(m.block_scale(r, 0).bits() == 119);
    CHECK(m.block_scale(r, 1).bits() == (r < 32 ? 0xFF : 119));
  }
  CHECK(std::isnan(m.value(31, 63)));
  CHECK(m.value(32, 63) == 1.0f);
}

// ---- stochastic rounding (issue 16, item 5) ----

namespace {

block_stochastic_rounding mx_stream(int k) {
  block_stochastic_rounding sr;
  sr.enabled = true;
  sr.seed = 0x5EED'0123'4567u;
  sr.tensor_id = 3;
  sr.step = 77;
  sr.random_bits = k;
  return sr;
}

// Every code of an SR quantisation against convert_stochastic (mxint8_element::stochastic) of
// the element times the block's round-to-nearest scale, with the element's word; the scales
// against round to nearest's.  Returns how many codes moved off the nearest one.
template <class T>
std::size_t check_stochastic(const std::vector<float>& a, std::size_t rows, std::size_t cols, mx_axis axis,
                             mx_scale_rule rule, mx_scale_sharing sharing, const block_stochastic_rounding& sr) {
  const mx_matrix<T> rn = mx_quantize<T>(a.data(), rows, cols, cols, axis, rule, sharing);
  const mx_matrix<T> m = mx_quantize<T>(a.data(), rows, cols, cols, axis, rule, sharing, sr);
  std::size_t bad = 0, moved = 0;
  for (std::size_t b = 0; b < rn.blocks(); ++b) bad += m.scales()[b].bits() != rn.scales()[b].bits();
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::uint8_t scale = m.scale(r, c).bits();
      const std::uint64_t i = axis == mx_axis::rows ? std::uint64_t{r} * cols + c
                                                    : std::uint64_t{rows} * cols + std::uint64_t{c} * rows + r;
      unsigned want = 0;
      if (scale != mx_nan_scale_code) {
        const float scaled = a[r * cols + c] * mx_scale_reciprocal(scale);
        if constexpr (std::is_same<T, mxint8_element>::value) {
          want = mxint8_element::stochastic(scaled, sr.word(i)).bits();
        } else {
          want = convert_stochastic<T>(scaled, sr.word(i), overflow::saturate).bits();
        }
      }
      bad += m.element(r, c).bits() != want;
      moved += m.element(r, c).bits() != rn.element(r, c).bits();
    }
  }
  CHECK(bad == 0);
  return moved;
}

}  // namespace

TEMPLATE_TEST_CASE("MX stochastic rounding: element i takes word i of (seed, tensor, step); scales stay RN", "[mx][sr]",
                   float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn, mxint8_element) {
  // Normal values over a few octaves (every block finite, so that codes can move); the
  // adversarial test matrix (NaN, inf, subnormal, huge rows) for the codes alone.
  const std::size_t rows = 45, cols = 70;
  std::vector<float> a(rows * cols);
  std::mt19937 random(31);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::ldexp(normal(random), static_cast<int>(i % 7) - 3);
  (void)check_stochastic<TestType>(test_matrix(rows, cols, cols, 31), rows, cols, mx_axis::rows, mx_scale_rule::ocp,
                                   mx_scale_sharing::block, mx_stream(8));
  for (const int k : {8, 16, 32}) {
    for (const mx_axis axis : {mx_axis::rows, mx_axis::columns}) {
      for (const mx_scale_rule rule : {mx_scale_rule::ocp, mx_scale_rule::round_up, mx_scale_rule::even}) {
        INFO("k " << k << " axis " << (axis == mx_axis::rows ? "rows" : "columns") << " rule " << to_string(rule));
        CHECK(check_stochastic<TestType>(a, rows, cols, axis, rule, mx_scale_sharing::block, mx_stream(k)) > 0);
      }
    }
  }
  CHECK(check_stochastic<TestType>(a, rows, cols, mx_axis::rows, mx_scale_rule::ocp, mx_scale_sharing::tile,
                                   mx_stream(8)) > 0);
  const mx_matrix<TestType> base = mx_quantize<TestType>(a.data(), rows, cols, cols, mx_axis::rows, mx_scale_rule::ocp,
                                                         mx_scale_sharing::block, mx_stream(16));
  on_every_path_and_thread_count([&] {  // the same bits on every path and thread count
    const mx_matrix<TestType> again = mx_quantize<TestType>(a.data(), rows, cols, cols, mx_axis::rows,
                                                            mx_scale_rule::ocp, mx_scale_sharing::block, mx_stream(16));
    CHECK(std::memcmp(again.data(), base.data(), base.data_bytes()) == 0);
  });
  for (int which = 0; which < 3; ++which) {
    block_stochastic_rounding changed = mx_stream(16);
    if (which == 0) changed.seed += 1;
    if (which == 1) changed.tensor_id += 1;
    if (which == 2) changed.step += 1;
    const mx_matrix<TestType> other = mx_quantize<TestType>(a.data(), rows, cols, cols, mx_axis::rows,
                                                            mx_scale_rule::ocp, mx_scale_sharing::block, changed);
    CHECK(std::memcmp(other.data(), base.data(), base.data_bytes()) != 0);
  }
}

TEST_CASE("MXINT8 stochastic rounding: 2^k random values round away floor(fraction · 2^k) times", "[mx][sr]") {
  // Values between k/64 and (k+1)/64 with fractions m / 2^16 of the step: exact in float.
  for (const int bits : {8, 16}) {
    block_stochastic_rounding sr;
    sr.enabled = true;
    sr.random_bits = bits;
    for (const std::uint32_t m : {0u, 1u, 255u, 256u, 257u, 32768u, 65535u}) {
      for (const int k : {0, 5, 126, -3}) {
        const double fraction = static_cast<double>(m) / 65536.0;
        const float x = static_cast<float>((k + (k < 0 ? -fraction : fraction)) / 64.0);
        const auto floor_f = static_cast<std::uint64_t>(std::floor(fraction * std::ldexp(1.0, bits)));
        std::uint64_t away = 0, others = 0;
        for (std::uint32_t r = 0; r < (1u << bits); ++r) {
          const int got = mxint8_element::stochastic(x, sr.aligned(r)).integer();
          const int toward = k, farther = k < 0 ? k - 1 : k + 1;
          away += got == farther;
          others += got != farther && got != toward;
        }
        INFO("bits " << bits << " m " << m << " k " << k);
        CHECK(away == floor_f);
        CHECK(others == 0);
      }
    }
  }
  CHECK(mxint8_element::stochastic(1.99f, 0xFFFF'FFFFu).integer() == 127);  // clamped
  CHECK(mxint8_element::stochastic(-5.0f, 0).integer() == -127);
  CHECK(mxint8_element::stochastic(std::numeric_limits<float>::quiet_NaN(), 7).integer() == 0);
}
