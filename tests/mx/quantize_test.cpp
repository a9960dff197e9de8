// mx/quantize.hpp against a direct transcription of OCP MX v1.0 §6.3 in double (scale from
// floor(log2(amax)), each element convert<T>(V / X) with saturation, the quotient exact in
// double), on every SIMD path and thread count, both axes, both scale rules; the quantisation
// error against its bound on random, heavy-tailed and adversarial blocks; dequantisation exact.
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
#include <vector>

#include "float_bits.hpp"
#include "simd_paths.hpp"

namespace {

using namespace mixprec;

// The reference quantisation of one block (its elements in `v`, up to 32, zero padding implied).
template <class T>
struct reference_block {
  int code = 0;                 // e8m0 code of X
  std::vector<unsigned> codes;  // element codes
};

template <class T>
reference_block<T> reference_quantize(const std::vector<float>& v, mx_scale_rule rule) {
  reference_block<T> out;
  double amax = 0;
  bool special = false;
  for (const float x : v) {
    special = special || !std::isfinite(x);
    amax = std::max(amax, std::fabs(static_cast<double>(x)));
  }
  if (special) {
    out.code = 0xFF;
    out.codes.assign(v.size(), 0);
    return out;
  }
  if (rule == mx_scale_rule::ocp) {
    // Algorithm 1: shared_exp = floor(log2(max |V_i|)) - emax_elem, clamped to e8m0's range.
    const double shared_exp = amax == 0 ? -127 : std::floor(std::log2(amax)) - mx_element<T>::emax;
    out.code = static_cast<int>(std::max(shared_exp, -127.0)) + 127;
  } else {
    // TE: the smallest power of two >= amax × float(1/max) (amax × rcp in float, as TE).
    const float scaled = static_cast<float>(amax) * static_cast<float>(1.0 / mx_element<T>::max_value);
    int e = scaled == 0.0f ? -127 : static_cast<int>(std::ceil(std::log2(static_cast<double>(scaled))));
    out.code = std::min(std::max(e, -127), 127) + 127;
  }
  const double x_scale = std::ldexp(1.0, out.code - 127);
  for (const float x : v) {
    out.codes.push_back(
        convert<T>(static_cast<double>(x) / x_scale, rounding::nearest_even, overflow::saturate).bits());
  }
  return out;
}

// The error bound above for one element.
template <class T>
double error_bound(double v, int code) {
  using traits = format_traits<typename T::format>;
  const double x_scale = std::ldexp(1.0, code - 127), max = mx_element<T>::max_value;
  const int m = traits::mantissa_bits, emin = traits::min_exponent;
  if (std::fabs(v) > max * x_scale) return (std::ldexp(1.0, mx_element<T>::emax + 1) - max) * x_scale;
  const int e_v = v == 0 ? emin + code - 127 : static_cast<int>(std::floor(std::log2(std::fabs(v))));
  return std::ldexp(1.0, std::max(e_v, emin + code - 127) - m - 1);
}

// Checks mx_quantize of the rows × cols matrix `a` (leading dimension lda) along `axis` against
// the reference block by block, the error bound and dequantisation.  Returns elements checked.
template <class T>
std::size_t check_matrix(const std::vector<float>& a, std::size_t rows, std::size_t cols, std::size_t lda, mx_axis axis,
                         mx_scale_rule rule) {
  const mx_matrix<T> m = mx_quantize<T>(a.data(), rows, cols, lda, axis, rule);
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
      const reference_block<T> expected = reference_quantize<T>(v, rule);
      INFO("line " << line << ", block " << j << ", rule " << to_string(rule) << ", axis " << to_string(axis));
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
      for (const mx_scale_rule rule : {mx_scale_rule::ocp, mx_scale_rule::round_up}) {
        checked += check_matrix<T>(a, rows, cols, lda, axis, rule);
      }
    }
  });
  CHECK(checked > 0);
}

}  // namespace

TEMPLATE_TEST_CASE("MX quantisation equals the spec's algorithm, within the error bound, on every path", "[mx]",
                   float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn) {
  check_every_path<TestType>(45, 100, 100);  // partial blocks both ways
  check_every_path<TestType>(64, 96, 101);   // whole blocks, padded rows
  check_every_path<TestType>(1, 33, 33);
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

TEST_CASE("dequantised values beyond float's range become infinite (round_up rule, amax near FLT_MAX)", "[mx]") {
  std::vector<float> block(32, 0.0f);
  block[0] = std::numeric_limits<float>::max();  // X = 2^126, P = 4: 2^128 has no float
  const mx_matrix<float4_e2m1fn> m =
      mx_quantize<float4_e2m1fn>(block.data(), 1, 32, 32, mx_axis::rows, mx_scale_rule::round_up);
  CHECK(m.block_scale(0, 0).bits() == 127 + 126);
  CHECK(static_cast<float>(m.element(0, 0)) == 4.0f);
  CHECK(m.value(0, 0) == std::numeric_limits<float>::infinity());
}

TEST_CASE("bad arguments are refused with the value and the limit named", "[mx]") {
  mx_matrix<float8_e5m2> m(3, 40, mx_axis::rows);
  std::vector<float> a(200, 1.0f);
  CHECK_THROWS_WITH(mx_quantize(a.data(), 39, m), Catch::Contains("leading dimension 39") && Catch::Contains("40"));
  CHECK_THROWS_WITH(mx_quantize(static_cast<const float*>(nullptr), 40, m), Catch::Contains("null"));
  CHECK_THROWS_AS(mx_dequantize(m, a.data(), 10), invalid_argument);
  CHECK_THROWS_AS(mx_quantize(a.data(), 40, m, static_cast<mx_scale_rule>(5)), invalid_argument);
  // A leading dimension whose last row lies beyond the largest array (it used to wrap the pointer).
  const std::size_t far = std::size_t{1} << 62;
  CHECK_THROWS_WITH(mx_quantize(a.data(), far, m), Catch::Contains("spans more than the largest array"));
  CHECK_THROWS_AS(mx_dequantize(m, a.data(), far), invalid_argument);
}
