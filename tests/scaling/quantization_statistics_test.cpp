// scaling/fp8/quantization_statistics.hpp and mx/statistics.hpp: Transformer Engine's tensor and quantisation
// statistics, against known answers worked from TE's formulas
// (transformer_engine/debug/features/utils/stats_computation.py) and against a double-precision
// transcription of them on random tensors; every SIMD path gives the same bits.
#include <mixprec/blockscale/statistics.hpp>
#include <mixprec/bulk/quantize.hpp>
#include <mixprec/mx/statistics.hpp>
#include <mixprec/scaling/fp8/delayed_scaler.hpp>
#include <mixprec/scaling/fp8/quantization_statistics.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../support/simd_paths.hpp"

using namespace mixprec;

namespace {

// TE's formulas in double, element by element (torch.std is unbiased; dynamic_range over the
// nonzero magnitudes; underflows = count_nonzero(x) - count_nonzero(q); overflows against
// max · scale_inv; mse against float(q) · scale_inv).
struct reference {
  double min = 0, max = 0, mean = 0, std = 0, l1 = 0, l2 = 0, amax = 0, dynamic_range = 0;
  std::size_t underflows = 0, overflows = 0;
  double total_square_error = 0;
};

template <class T>
reference reference_statistics(const std::vector<float>& x, const std::vector<T>& q, float scale_inv) {
  reference r;
  const std::size_t n = x.size();
  double sum = 0, low = std::numeric_limits<double>::infinity(), high = -low, smallest = low;
  std::size_t nonzero_x = 0, nonzero_q = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i];
    sum += v;
    r.l1 += std::fabs(v);
    r.l2 += v * v;
    low = std::min(low, v);
    high = std::max(high, v);
    r.amax = std::max(r.amax, std::fabs(v));
    if (v != 0) {
      smallest = std::min(smallest, std::fabs(v));
      ++nonzero_x;
    }
    if (!q.empty()) {
      const float f = static_cast<float>(q[i]);
      if (f != 0) ++nonzero_q;
      const float bound = static_cast<float>(std::numeric_limits<T>::max()) * scale_inv;
      if (x[i] > bound || x[i] < -bound) ++r.overflows;
      const double e = static_cast<double>(f * scale_inv) - v;
      r.total_square_error += e * e;
    }
  }
  r.min = low;
  r.max = high;
  r.mean = sum / static_cast<double>(n);
  double m2 = 0;
  for (const float v : x) m2 += (v - r.mean) * (v - r.mean);
  r.std = n < 2 ? 0 : std::sqrt(m2 / static_cast<double>(n - 1));
  r.l2 = std::sqrt(r.l2);
  r.dynamic_range = nonzero_x == 0 ? 0 : std::log2(r.amax) - std::log2(smallest);
  r.underflows = q.empty() ? 0 : nonzero_x - nonzero_q;
  return r;
}

std::vector<float> normal_values(std::size_t n, float mean, float spread, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(mean, spread);
  std::vector<float> x(n);
  for (auto& v : x) v = normal(random);
  return x;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void require_same(const tensor_statistics& a, const tensor_statistics& b) {
  CHECK(a.numel == b.numel);
  CHECK(same_bits(a.min, b.min));
  CHECK(same_bits(a.max, b.max));
  CHECK(same_bits(a.amax, b.amax));
  CHECK(same_bits(a.mean, b.mean));
  CHECK(same_bits(a.std, b.std));
  CHECK(same_bits(a.l1_norm, b.l1_norm));
  CHECK(same_bits(a.l2_norm, b.l2_norm));
  CHECK(same_bits(a.dynamic_range, b.dynamic_range));
}

void require_same(const quantization_statistics& a, const quantization_statistics& b) {
  CHECK(a.numel == b.numel);
  CHECK(a.underflows == b.underflows);
  CHECK(a.overflows == b.overflows);
  CHECK(same_bits(a.total_square_error, b.total_square_error));
  CHECK(same_bits(a.mse, b.mse));
  CHECK(same_bits(a.scale_inv_min, b.scale_inv_min));
  CHECK(same_bits(a.scale_inv_max, b.scale_inv_max));
}

}  // namespace

TEST_CASE("tensor statistics: known answers from TE's formulas", "[quantization_statistics]") {
  const std::vector<float> x = {1, -2, 0, 4};
  const tensor_statistics t = statistics_of(x.data(), x.size());
  CHECK(t.numel == 4);
  CHECK(t.min == -2);
  CHECK(t.max == 4);
  CHECK(t.amax == 4);
  CHECK(t.mean == 0.75);
  CHECK(t.std == Approx(2.5).epsilon(1e-12));  // deviations 0.25 -2.75 -0.75 3.25: 18.75 / 3
  CHECK(t.l1_norm == 7);
  CHECK(t.l2_norm == Approx(std::sqrt(21.0)).epsilon(1e-12));
  CHECK(t.dynamic_range == 2);  // log2(4) - log2(1): the zero is left out

  const tensor_statistics empty = statistics_of(static_cast<const float*>(nullptr), 0);
  CHECK(empty.numel == 0);
  CHECK(empty.std == 0);
  const float one = -0.375f;
  const tensor_statistics single = statistics_of(&one, 1);
  CHECK(single.std == 0);  // n - 1 = 0: no spread
  CHECK(single.min == -0.375f);
  CHECK(single.amax == 0.375f);
  CHECK(single.dynamic_range == 0);
  const std::vector<float> zeros(100, 0.0f);
  const tensor_statistics z = statistics_of(zeros.data(), zeros.size());
  CHECK(z.dynamic_range == 0);  // no nonzero value (TE's formula gives inf here)
  CHECK(z.amax == 0);
  CHECK(z.std == 0);
}

TEST_CASE("quantisation statistics: known answers for e4m3 and e5m2", "[quantization_statistics]") {
  // e4m3 at scale 1: 1e-6 underflows to 0 (the smallest subnormal is 2^-9), 500 is clipped to
  // 448, 1.0625 is a tie between 1 and 1.125 and rounds to 1 (even).
  const std::vector<float> x = {0.0f, 1e-6f, 500.0f, 1.0625f};
  std::vector<float8_e4m3fn> q(4);
  const quantized_with_statistics r = quantize_with_statistics(x.data(), x.size(), q.data(), 1.0f);
  CHECK(r.quantized.amax == 500);
  CHECK(r.quantized.scale_inv == 1);
  CHECK(r.quantization.underflows == 1);
  CHECK(r.quantization.overflows == 1);
  CHECK(r.quantization.underflows_percent == 25);
  CHECK(r.quantization.overflows_percent == 25);
  const double expected_error = 1e-6f * static_cast<double>(1e-6f) + 52.0 * 52.0 + 0.0625 * 0.0625;
  CHECK(r.quantization.total_square_error == Approx(expected_error).epsilon(1e-12));
  CHECK(r.quantization.mse == Approx(expected_error / 4).epsilon(1e-12));
  CHECK(static_cast<float>(q[2]) == 448);

  // e5m2 with scale 2^-8: scale_inv 256, the bound 57344 · 256 = 14680064; 1.4e7 is within it,
  // ±2e7 beyond; 1e-3 / 256 is below half of e5m2's smallest subnormal (2^-16) and becomes 0.
  const std::vector<float> y = {1.4e7f, -2e7f, 2e7f, 1e-3f};
  std::vector<float8_e5m2> p(4);
  quantize_n(y.data(), y.size(), p.data(), 1.0f / 256);
  const quantization_statistics s = quantization_statistics_of(y.data(), y.size(), p.data(), 256.0f);
  CHECK(s.overflows == 2);
  CHECK(s.scale_inv_min == 256);
  CHECK(s.scale_inv_max == 256);
  CHECK(s.underflows == 1);
}

TEST_CASE("quantisation statistics agree with a double-precision transcription of TE's formulas",
          "[quantization_statistics]") {
  for (const std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17}, std::size_t{2047},
                              std::size_t{2048}, std::size_t{2049}, std::size_t{100'003}}) {
    // A large mean against a small spread: the variance must not cancel away.
    for (const float mean : {0.0f, 3.0f}) {
      INFO("n = " << n << ", mean " << mean);
      std::vector<float> x = normal_values(n, mean, mean == 0 ? 1.0f : 0.01f, static_cast<unsigned>(n));
      if (n > 3) x[n / 3] = 0.0f;
      std::vector<float8_e4m3fn> q(n);
      const float scale = mean == 0 ? 64.0f : 100.0f;  // some values clip, some underflow
      const quantized_with_statistics r = quantize_with_statistics(x.data(), n, q.data(), scale);
      const reference ref = reference_statistics(x, q, 1.0f / scale);
      CHECK(r.tensor.min == ref.min);
      CHECK(r.tensor.max == ref.max);
      CHECK(r.tensor.amax == ref.amax);
      CHECK(r.tensor.mean == Approx(ref.mean).epsilon(1e-6).margin(1e-6 * ref.std));
      CHECK(r.tensor.std == Approx(ref.std).epsilon(1e-4));
      CHECK(r.tensor.l1_norm == Approx(ref.l1).epsilon(1e-6));
      CHECK(r.tensor.l2_norm == Approx(ref.l2).epsilon(1e-6));
      CHECK(r.tensor.dynamic_range == Approx(ref.dynamic_range).epsilon(1e-12));
      CHECK(r.quantization.underflows == ref.underflows);
      CHECK(r.quantization.overflows == ref.overflows);
      CHECK(r.quantization.total_square_error == Approx(ref.total_square_error).epsilon(1e-5));
      // The codes are quantize_n's.
      std::vector<float8_e4m3fn> expected(n);
      quantize_n(x.data(), n, expected.data(), scale);
      CHECK(std::memcmp(q.data(), expected.data(), n) == 0);
    }
  }
}

TEST_CASE("every SIMD path and the fused quantise give the same bits", "[quantization_statistics]") {
  const std::size_t n = 3 * 2048 + 37;
  std::vector<float> x = normal_values(n, 0.5f, 2.0f, 7);
  x[5] = 0;
  x[4000] = 1e-9f;
  x[4001] = -3000.0f;
  const float scale = 16.0f;
  std::vector<float8_e4m3fn> q(n);
  quantize_n(x.data(), n, q.data(), scale);
  set_bulk_threads(1);
  const tensor_statistics tensor = statistics_of(x.data(), n);
  const quantization_statistics quantization = quantization_statistics_of(x.data(), n, q.data(), 1.0f / scale);
  for (const simd_path p : {simd_path::portable, simd_path::avx2, simd_path::avx512}) {
    if (!simd_path_supported(p)) continue;
    INFO("path " << to_string(p));
    const simd_path_guard guard(p);
    require_same(statistics_of(x.data(), n), tensor);
    require_same(quantization_statistics_of(x.data(), n, q.data(), 1.0f / scale), quantization);
    std::vector<float8_e4m3fn> fused(n);
    const quantized_with_statistics r = quantize_with_statistics(x.data(), n, fused.data(), scale);
    require_same(r.tensor, tensor);
    require_same(r.quantization, quantization);
    CHECK(std::memcmp(fused.data(), q.data(), n) == 0);
  }
}

TEST_CASE("NaN and infinity in the tensor", "[quantization_statistics]") {
  std::vector<float> x = normal_values(5000, 0.0f, 1.0f, 3);
  x[4321] = std::numeric_limits<float>::quiet_NaN();
  const tensor_statistics t = statistics_of(x.data(), x.size());
  CHECK(std::isnan(t.min));
  CHECK(std::isnan(t.max));
  CHECK(std::isnan(t.amax));
  CHECK(std::isnan(t.mean));
  CHECK(std::isnan(t.std));
  CHECK(std::isnan(t.l1_norm));
  CHECK(std::isnan(t.dynamic_range));
  std::vector<float8_e4m3fn> q(x.size());
  const quantized_with_statistics r = quantize_with_statistics(x.data(), x.size(), q.data(), 1.0f);
  CHECK(std::isnan(r.quantized.amax));  // as quantize_n's amax
  CHECK(std::isnan(r.quantization.mse));

  x[4321] = -std::numeric_limits<float>::infinity();
  const tensor_statistics u = statistics_of(x.data(), x.size());
  CHECK(u.min == -std::numeric_limits<float>::infinity());
  CHECK(u.amax == std::numeric_limits<float>::infinity());
  CHECK(u.l1_norm == std::numeric_limits<double>::infinity());
  const quantized_with_statistics s = quantize_with_statistics(x.data(), x.size(), q.data(), 1.0f);
  CHECK(s.quantization.overflows == 1);  // saturated to -448
}

TEST_CASE("max_blockwise_dynamic_range: TE's 1-D blocks", "[quantization_statistics]") {
  const std::vector<float> x = {1, 2, 0, -8, 0, 0, 0, 0, 3, 3, 3, 3};
  CHECK(max_blockwise_dynamic_range(x.data(), x.size(), 4) == 3);  // log2(8) - log2(1); then 0, 0
  CHECK(max_blockwise_dynamic_range(x.data(), x.size(), 12) == Approx(3.0));
  CHECK(max_blockwise_dynamic_range(x.data(), 4, 1) == 0);  // one value per block
  CHECK(max_blockwise_dynamic_range(x.data(), 0, 32) == 0);
  CHECK_THROWS_WITH(max_blockwise_dynamic_range(x.data(), x.size(), 5),
                    "max_blockwise_dynamic_range: n = 12 is not a multiple of block_size 5");
  CHECK_THROWS_WITH(max_blockwise_dynamic_range(x.data(), x.size(), 0), "max_blockwise_dynamic_range: block_size is 0");
}

TEST_CASE("bad arguments are refused by name", "[quantization_statistics]") {
  std::vector<float> x(8, 1.0f);
  std::vector<float8_e4m3fn> q(8);
  CHECK_THROWS_WITH(statistics_of(static_cast<const float*>(nullptr), 3),
                    "statistics_of: null input pointer with n = 3");
  CHECK_THROWS_WITH(quantization_statistics_of(x.data(), 8, q.data(), 0.0f),
                    "quantization_statistics_of: scale_inv is 0, it must be finite and > 0");
  CHECK_THROWS_WITH(quantization_statistics_of(x.data(), 8, q.data(), std::numeric_limits<float>::infinity()),
                    "quantization_statistics_of: scale_inv is inf, it must be finite and > 0");
  CHECK_THROWS_WITH(quantization_statistics_of(x.data(), 8, static_cast<const float8_e4m3fn*>(nullptr), 1.0f),
                    "quantization_statistics_of: null quantised pointer with n = 8");
  CHECK_THROWS_WITH(quantize_with_statistics(x.data(), 8, q.data(), -2.0f),
                    "quantize_with_statistics: scale is -2, it must be finite and > 0");
  CHECK_THROWS_WITH(quantize_with_statistics(x.data(), 8, q.data(), 1e-39f),
                    Catch::Contains("quantize_with_statistics: scale_inv is inf"));
}

TEST_CASE("MX statistics: underflows, square error and the block scales' range", "[quantization_statistics]") {
  // One MXFP4 block of 32 values: amax 6 gives the scale 2^0 (OCP rule: floor(log2 6) - 2 = 0);
  // 0.2 is below half of fp4's smallest step (0.5) and becomes 0; 0.3 rounds to 0.5.
  std::vector<float> a(64, 0.0f);
  a[0] = 6.0f;
  a[1] = 0.2f;
  a[2] = -0.3f;
  a[32] = 1e-3f;  // the second block: 1e-3 alone, under its own scale 2^-12 (4.096 -> 4)
  const mx_matrix<float4_e2m1fn> m = mx_quantize<float4_e2m1fn>(a.data(), 1, 64, 64, mx_axis::rows);
  const quantization_report r = mx_statistics(a.data(), 64, m);
  CHECK(r.tensor.numel == 64);
  CHECK(r.tensor.amax == 6);
  CHECK(r.quantization.underflows == 1);
  CHECK(r.quantization.overflows == 0);
  const double expected =
      0.2 * 0.2 + 0.2 * 0.2 + (static_cast<double>(m.value(0, 32)) - 1e-3f) * (m.value(0, 32) - 1e-3f);
  CHECK(r.quantization.total_square_error == Approx(0.2f * 0.2f + 0.2f * 0.2f).margin(1e-6));
  CHECK(r.quantization.total_square_error == Approx(expected).epsilon(1e-6));
  CHECK(r.quantization.scale_inv_max == 1.0f);
  CHECK(r.quantization.scale_inv_min == static_cast<float>(m.block_scale(0, 1)));

  // A random matrix, column-wise blocks, against the values one by one.
  const std::size_t rows = 70, cols = 37, lda = 40;
  std::vector<float> b = normal_values(rows * lda, 0.0f, 1.0f, 11);
  for (std::size_t i = 0; i < b.size(); i += 13) b[i] *= 1e-4f;
  const mx_matrix<float8_e4m3fn> q = mx_quantize<float8_e4m3fn>(b.data(), rows, cols, lda, mx_axis::columns);
  const quantization_report s = mx_statistics(b.data(), lda, q);
  std::size_t underflows = 0;
  double error = 0;
  float low = std::numeric_limits<float>::infinity(), high = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const float x = b[i * lda + j], v = q.value(i, j);
      underflows += x != 0 && v == 0;
      error += (static_cast<double>(v) - x) * (static_cast<double>(v) - x);
      low = std::min(low, static_cast<float>(q.scale(i, j)));
      high = std::max(high, static_cast<float>(q.scale(i, j)));
    }
  }
  CHECK(s.tensor.numel == rows * cols);
  CHECK(s.quantization.underflows == underflows);
  CHECK(s.quantization.total_square_error == Approx(error).epsilon(1e-5));
  CHECK(s.quantization.scale_inv_min == low);
  CHECK(s.quantization.scale_inv_max == high);
  CHECK_THROWS_WITH(mx_statistics(b.data(), 10, q), "mx_statistics: lda = 10 is less than cols = 37");
}

// TE's compute_max_blockwise_dynamic_range transcribed on a contiguous row-major copy: dims 1
// cuts the flattened copy into consecutive blocks, dims 2 into tiles (reshape(-1, bs, cols / bs,
// bs) permuted); each block's log2(amax) - log2(smallest nonzero), 0 for an all-zero block.
double transcribed_blockwise_range(const std::vector<float>& m, std::size_t rows, std::size_t cols, std::size_t bs,
                                   int dims) {
  std::vector<std::vector<float>> blocks;
  if (dims == 1) {
    for (std::size_t b = 0; b < m.size(); b += bs)
      blocks.emplace_back(m.begin() + static_cast<long>(b), m.begin() + static_cast<long>(b + bs));
  } else {
    for (std::size_t i = 0; i < rows / bs; ++i) {
      for (std::size_t j = 0; j < cols / bs; ++j) {
        blocks.emplace_back();
        for (std::size_t a = 0; a < bs; ++a) {
          for (std::size_t b = 0; b < bs; ++b) blocks.back().push_back(m[(i * bs + a) * cols + j * bs + b]);
        }
      }
    }
  }
  double largest = 0;
  for (const std::vector<float>& block : blocks) {
    double amax = 0, amin = std::numeric_limits<double>::infinity();
    for (const float v : block) {
      if (v == 0) continue;
      amax = std::max(amax, std::fabs(static_cast<double>(v)));
      amin = std::min(amin, std::fabs(static_cast<double>(v)));
    }
    if (amax != 0) largest = std::max(largest, std::log2(amax) - std::log2(amin));
  }
  return largest;
}

TEST_CASE("max blockwise dynamic range of a matrix: 1-D blocks, tiles, both orientations",
          "[quantization_statistics]") {
  // 4 × 4, blocks of 2.  Row-major pairs: (1, 8) gives 3, (1/16, 1/8) 1, the rest 0; down the
  // columns (8, 1/8) gives 6 and (1, 1/16) 4; the 2 × 2 tile of 1, 8, 1/16, 1/8 gives 7; the
  // all-zero tile counts 0.
  const std::vector<float> m = {1,         8,        1, 1,  //
                                1 / 16.0f, 1 / 8.0f, 1, 1,  //
                                2,         2,        0, 0,  //
                                2,         2,        0, 0};
  CHECK(max_blockwise_dynamic_range(m.data(), 4, 4, 4, 2, 1) == 3);
  CHECK(max_blockwise_dynamic_range(m.data(), 4, 4, 4, 2, 1, true) == 6);
  CHECK(max_blockwise_dynamic_range(m.data(), 4, 4, 4, 2, 2) == 7);
  CHECK(max_blockwise_dynamic_range(m.data(), 4, 4, 4, 2, 2, true) == 7);
  CHECK(max_blockwise_dynamic_range(m.data(), 16, 2) == 3);  // the flat form, the same blocks

  // Random matrices with a leading dimension, zero tiles, tiny values and blocks that cross rows
  // (dims 1 with cols not a multiple of the block), against the transcription.
  const std::size_t rows = 48, cols = 40, ld = 45;
  std::vector<float> x = normal_values(rows * ld, 0.0f, 1.0f, 41);
  for (std::size_t i = 0; i < x.size(); i += 11) x[i] *= 1e-6f;
  for (std::size_t r = 0; r < 16; ++r) {
    for (std::size_t c = 0; c < 16; ++c) x[r * ld + c] = 0;
  }
  std::vector<float> contiguous(rows * cols), transposed(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      contiguous[r * cols + c] = transposed[c * rows + r] = x[r * ld + c];
    }
  }
  for (const std::size_t bs : {std::size_t{8}, std::size_t{16}, std::size_t{32}}) {
    INFO("block " << bs);
    const double rows_1d = transcribed_blockwise_range(contiguous, rows, cols, bs, 1);
    const double columns_1d = transcribed_blockwise_range(transposed, cols, rows, bs, 1);
    CHECK(max_blockwise_dynamic_range(x.data(), rows, cols, ld, bs, 1) == Approx(rows_1d).epsilon(1e-12));
    CHECK(max_blockwise_dynamic_range(x.data(), rows, cols, ld, bs, 1, true) ==
          Approx(std::max(rows_1d, columns_1d)).epsilon(1e-12));
    if (rows % bs == 0 && cols % bs == 0) {
      CHECK(max_blockwise_dynamic_range(x.data(), rows, cols, ld, bs, 2) ==
            Approx(transcribed_blockwise_range(contiguous, rows, cols, bs, 2)).epsilon(1e-12));
    }
  }
  std::vector<float> with_nan = contiguous;
  with_nan[17] = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(max_blockwise_dynamic_range(with_nan.data(), rows, cols, cols, 8, 2)));
  CHECK(std::isnan(max_blockwise_dynamic_range(with_nan.data(), rows, cols, cols, 8, 1, true)));
  CHECK(max_blockwise_dynamic_range(static_cast<const float*>(nullptr), 0, 8, 8, 8, 2) == 0);
  CHECK_THROWS_WITH(max_blockwise_dynamic_range(x.data(), rows, cols, ld, 16, 2),
                    "max_blockwise_dynamic_range: a 48 × 40 matrix is not made of 16 × 16 tiles");
  CHECK_THROWS_WITH(max_blockwise_dynamic_range(x.data(), 3, 5, 5, 4, 1),
                    "max_blockwise_dynamic_range: 3 × 5 = 15 values are not a multiple of block_size 4");
  CHECK_THROWS_WITH(max_blockwise_dynamic_range(x.data(), rows, cols, ld, 8, 3),
                    "max_blockwise_dynamic_range: dims is 3, it must be 1 or 2");
  CHECK_THROWS_WITH(max_blockwise_dynamic_range(x.data(), rows, cols, 39, 8, 1),
                    "max_blockwise_dynamic_range: ldx = 39 is less than cols = 40");
  CHECK_THROWS_WITH(max_blockwise_dynamic_range(x.data(), rows, cols, ld, 0, 1),
                    "max_blockwise_dynamic_range: block_size is 0");
}

// What a report of a block quantiser must say, from its values one by one: the count of nonzero
// inputs whose value is 0, the square error in double, and the range of the given scales.
struct expected_report {
  std::size_t underflows = 0;
  double square_error = 0;
  float scale_low = std::numeric_limits<float>::infinity(), scale_high = -std::numeric_limits<float>::infinity();
};
template <class Value>
expected_report expected_from(const std::vector<float>& a, std::size_t rows, std::size_t cols, std::size_t lda,
                              Value value, const std::vector<float>& scales) {
  expected_report e;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      const float x = a[i * lda + j], v = value(i, j);
      e.underflows += x != 0 && v == 0;
      e.square_error += (static_cast<double>(v) - x) * (static_cast<double>(v) - x);
    }
  }
  for (const float s : scales) {
    e.scale_low = std::min(e.scale_low, s);
    e.scale_high = std::max(e.scale_high, s);
  }
  return e;
}
void check_report(const quantization_report& r, const expected_report& e, std::size_t numel) {
  CHECK(r.tensor.numel == numel);
  CHECK(r.quantization.underflows == e.underflows);
  CHECK(r.quantization.overflows == 0);
  CHECK(r.quantization.total_square_error == Approx(e.square_error).epsilon(1e-5));
  CHECK(r.quantization.scale_inv_min == e.scale_low);
  CHECK(r.quantization.scale_inv_max == e.scale_high);
}

TEST_CASE("block fp8 statistics: underflows, square error and the block decode scales", "[quantization_statistics]") {
  using blockscale::fp8_block_kind;
  // One row, one 1×128 block: amax 448 gives TE's power-of-two scale 1, so scale_inv 1; 5e-4 is
  // below half of e4m3's smallest subnormal 2^-9 and becomes 0; 0.3 rounds to 0.3125.
  std::vector<float> a(128, 0.0f);
  a[0] = 448.0f;
  a[1] = 5e-4f;
  a[2] = 0.3f;
  const auto m = blockscale::fp8_block_quantize<float8_e4m3fn>(a.data(), 1, 128, 128);
  const quantization_report r = blockscale::fp8_block_statistics(a.data(), 128, m);
  CHECK(r.tensor.numel == 128);
  CHECK(r.tensor.amax == 448);
  CHECK(r.quantization.underflows == 1);
  const double e1 = static_cast<double>(5e-4f), e2 = 0.3125 - static_cast<double>(0.3f);
  CHECK(r.quantization.total_square_error == Approx(e1 * e1 + e2 * e2).epsilon(1e-6));
  CHECK(r.quantization.scale_inv_min == 1.0f);
  CHECK(r.quantization.scale_inv_max == 1.0f);

  // Random matrices with edge blocks, both block kinds, against the values one by one.
  const std::size_t rows = 150, cols = 300, lda = 310;
  std::vector<float> b = normal_values(rows * lda, 0.0f, 1.0f, 21);
  for (std::size_t i = 0; i < b.size(); i += 7) b[i] *= 1e-5f;
  for (std::size_t j = 0; j < cols; ++j) b[3 * lda + j] *= 1e-3f;  // a row of its own scale
  for (const fp8_block_kind kind : {fp8_block_kind::row_1x128, fp8_block_kind::tile_128x128}) {
    blockscale::fp8_block_options options;
    options.kind = kind;
    const auto q = blockscale::fp8_block_quantize<float8_e4m3fn>(b.data(), rows, cols, lda, options);
    const std::vector<float> scales(q.scale_invs(), q.scale_invs() + q.block_rows() * q.block_cols());
    const expected_report e = expected_from(
        b, rows, cols, lda, [&](std::size_t i, std::size_t j) { return q.value(i, j); }, scales);
    CHECK(e.underflows > 0);
    CHECK(e.scale_low < e.scale_high);
    check_report(blockscale::fp8_block_statistics(b.data(), lda, q), e, rows * cols);
  }
  const auto q = blockscale::fp8_block_quantize<float8_e5m2>(b.data(), rows, cols, lda);
  CHECK_THROWS_WITH(blockscale::fp8_block_statistics(b.data(), 299, q),
                    "fp8_block_statistics: lda = 299 is less than cols = 300");
  CHECK_THROWS_WITH(blockscale::fp8_block_statistics(static_cast<const float*>(nullptr), lda, q),
                    "fp8_block_statistics: null input pointer for a 150 × 300 matrix");
  const blockscale::fp8_block_matrix<float8_e4m3fn> empty(0, 5, fp8_block_kind::row_1x128,
                                                          blockscale::fp8_block_rule::transformer_engine);
  const quantization_report none = blockscale::fp8_block_statistics(nullptr, 5, empty);
  CHECK(none.tensor.numel == 0);
  CHECK(none.quantization.underflows == 0);
}

TEST_CASE("NVFP4 statistics: underflows, square error and the ue4m3 block scales, both copies",
          "[quantization_statistics]") {
  // 16×16 tiles and 1×16 blocks, TE's rule and torchao's, row-wise and column-wise copies of a
  // matrix whose sizes are not multiples of 16, with values far below their blocks' amax.
  const std::size_t rows = 45, cols = 70, lda = 72;
  std::vector<float> a = normal_values(rows * lda, 0.0f, 1.0f, 31);
  for (std::size_t i = 0; i < a.size(); i += 5) a[i] *= 1e-3f;
  for (std::size_t i = 0; i < rows; ++i) a[i * lda + 17] *= 1e4f;  // a column of large values
  for (const blockscale::nvfp4_rule rule :
       {blockscale::nvfp4_rule::transformer_engine, blockscale::nvfp4_rule::torchao}) {
    for (const blockscale::nvfp4_tile tile : {blockscale::nvfp4_tile::row_16, blockscale::nvfp4_tile::square_16}) {
      blockscale::nvfp4_options options;
      options.rule = rule;
      options.tile = tile;
      options.columnwise = true;
      const blockscale::nvfp4_tensor t = blockscale::nvfp4_quantize(a.data(), rows, cols, lda, options);
      for (const blockscale::nvfp4_matrix* m : {&*t.rowwise, &*t.columnwise}) {
        std::vector<float> scales;
        for (std::size_t line = 0; line < m->lines(); ++line) {
          for (std::size_t j = 0; j < m->blocks_per_line(); ++j)
            scales.push_back(static_cast<float>(m->scale(line, j)));
        }
        const expected_report e = expected_from(
            a, rows, cols, lda, [&](std::size_t i, std::size_t j) { return m->value(i, j); }, scales);
        INFO(to_string(rule) << (m->columnwise() ? " column-wise" : " row-wise"));
        CHECK(e.underflows > 0);
        check_report(blockscale::nvfp4_statistics(a.data(), lda, *m), e, rows * cols);
      }
    }
  }
  const blockscale::nvfp4_tensor t = blockscale::nvfp4_quantize(a.data(), rows, cols, lda);
  CHECK_THROWS_WITH(blockscale::nvfp4_statistics(a.data(), 69, *t.rowwise),
                    "nvfp4_statistics: lda = 69 is less than cols = 70");
}

TEST_CASE("torchao cast statistics: underflows, square error and 1 / scale, every granularity",
          "[quantization_statistics]") {
  using blockscale::scale_axis;
  using blockscale::scaling_granularity;
  // Rows of very different magnitudes (so that a tensor-wise scale underflows the small ones), and
  // values far below their row's amax.
  const std::size_t rows = 37, cols = 53, lda = 60, ldq = 55;
  std::vector<float> a = normal_values(rows * lda, 0.0f, 1.0f, 51);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) a[i * lda + j] *= std::ldexp(1.0f, static_cast<int>(i % 7) * -4);
  }
  for (std::size_t i = 0; i < a.size(); i += 11) a[i] *= 1e-4f;
  for (const blockscale::torchao_scaling scaling :
       {blockscale::torchao_scaling{scaling_granularity::tensorwise, scale_axis::rows, false},
        blockscale::torchao_scaling{scaling_granularity::axiswise, scale_axis::rows, true},
        blockscale::torchao_scaling{scaling_granularity::axiswise, scale_axis::columns, true},
        blockscale::torchao_scaling{scaling_granularity::axiswise, scale_axis::rows, false}}) {
    std::vector<float8_e4m3fn> q(rows * ldq);
    const std::vector<float> scales = blockscale::torchao_quantize(a.data(), rows, cols, lda, scaling, q.data(), ldq);
    std::vector<float> scale_invs;
    for (const float sc : scales) scale_invs.push_back(1.0f / sc);
    const expected_report e = expected_from(
        a, rows, cols, lda,
        [&](std::size_t i, std::size_t j) {
          const float sc = scales.size() == 1 ? scales[0] : scales[scaling.axis == scale_axis::rows ? i : j];
          return static_cast<float>(q[i * ldq + j]) / sc;
        },
        scale_invs);
    INFO(static_cast<int>(scaling.granularity)
         << " " << to_string(scaling.axis) << " pow2 " << scaling.round_scales_to_power_of_2);
    CHECK(e.underflows > 0);
    const quantization_report r =
        blockscale::torchao_statistics(a.data(), rows, cols, lda, scaling, q.data(), ldq, scales);
    check_report(r, e, rows * cols);
  }
  const blockscale::torchao_scaling by_rows{scaling_granularity::axiswise, scale_axis::rows, true};
  std::vector<float8_e4m3fn> q(rows * ldq);
  const std::vector<float> scales = blockscale::torchao_quantize(a.data(), rows, cols, lda, by_rows, q.data(), ldq);
  CHECK_THROWS_WITH(blockscale::torchao_statistics(a.data(), rows, cols, lda, by_rows, q.data(), ldq,
                                                   std::vector<float>(scales.begin(), scales.end() - 1)),
                    "torchao_statistics: 36 scales for a 37 × 53 matrix whose scaling has 37");
  CHECK_THROWS_WITH(blockscale::torchao_statistics(a.data(), rows, cols, 52, by_rows, q.data(), ldq, scales),
                    "torchao_statistics: lda = 52 is less than cols = 53");
}

// mx_statistics of one MX block of 32 values: `planted` first, ones after (the block's scale
// must come out 1).
template <class T>
quantization_report block_of_32_report(std::initializer_list<float> planted) {
  std::vector<float> a(32, 1.0f);
  std::copy(planted.begin(), planted.end(), a.begin());
  const auto m = mx_quantize<T>(a.data(), 1, 32, 32, mx_axis::rows);
  REQUIRE(static_cast<float>(m.block_scale(0, 0)) == 1.0f);
  return mx_statistics(a.data(), 32, m);
}

TEST_CASE("block quantisers' overflows: the values their rounded scale leaves beyond the format",
          "[quantization_statistics]") {
  // MX, OCP rule: a block's scale is 2^(floor(log2 amax) - emax), so amax / scale lies in
  // [2^emax, 2^(emax + 1)), above the format's largest value m when amax's significand is large.
  // e4m3 (m = 448, spacing 32 there, 448's code even): beyond 464 clips, 464 itself rounds to 448.
  const quantization_report r4 = block_of_32_report<float8_e4m3fn>({500.0f, 470.0f, 464.0f, 460.0f, -480.0f});
  CHECK(r4.quantization.overflows == 3);
  CHECK(r4.quantization.overflows_percent == Approx(100.0 * 3 / 32));
  // e5m2 (m = 57344, spacing 8192, 57344's code odd: a tie at 61440 goes up, so it overflows).
  CHECK(block_of_32_report<float8_e5m2>({63000.0f, 61440.0f, 61439.0f}).quantization.overflows == 2);
  // e2m1 (m = 6, spacing 2, 6's code odd): 7 and above overflow.
  CHECK(block_of_32_report<float4_e2m1fn>({7.5f, 7.0f, 6.9f}).quantization.overflows == 2);

  // Random MX e4m3 blocks along both axes, against the scalar conversion without saturation: an
  // element overflows when x / scale converts to NaN (e4m3fn has no infinity).
  const std::size_t rows = 64, cols = 96, lda = 100;
  const std::vector<float> b = normal_values(rows * lda, 0.0f, 1.0f, 41);
  for (const mx_axis axis : {mx_axis::rows, mx_axis::columns}) {
    const auto q = mx_quantize<float8_e4m3fn>(b.data(), rows, cols, lda, axis);
    std::size_t expected = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        const double scaled = static_cast<double>(b[i * lda + j]) / static_cast<double>(q.scale(i, j));
        expected += std::isnan(
            static_cast<float>(convert<float8_e4m3fn>(scaled, rounding::nearest_even, overflow::non_finite)));
      }
    }
    INFO((axis == mx_axis::rows ? "rows" : "columns"));
    CHECK(expected > 0);  // Gaussian blocks of 32 clip now and then
    CHECK(mx_statistics(b.data(), lda, q).quantization.overflows == expected);
  }

  // Block fp8 with power-of-two scales rounds every scale down: nothing clips.
  const auto blocks = blockscale::fp8_block_quantize<float8_e4m3fn>(b.data(), rows, cols, lda);
  CHECK(blockscale::fp8_block_statistics(b.data(), lda, blocks).quantization.overflows == 0);

  // NVFP4: a block whose amax is far below the tensor's gets a subnormal ue4m3 scale, rounded
  // coarsely enough to clip.  Block 0 sets the tensor's amax (1); block 1 holds 6.47e-6, whose
  // scale (6.47e-6 / 6 · 2688 ≈ 2.9e-3) rounds to the subnormal 2^-9.
  std::vector<float> c(32, 0.0f);
  c[0] = 1.0f;
  c[16] = 6.47e-6f;
  const blockscale::nvfp4_tensor t = blockscale::nvfp4_quantize(c.data(), 1, 32, 32);
  const blockscale::nvfp4_matrix& m = *t.rowwise;
  REQUIRE(m.scale(0, 1).bits() == 1);  // the smallest subnormal ue4m3
  CHECK(m.value(0, 16) == m.decode(std::numeric_limits<float4_e2m1fn>::max().bits(), m.scale(0, 1)));  // clipped
  CHECK(blockscale::nvfp4_statistics(c.data(), 32, m).quantization.overflows == 1);
}

TEST_CASE("delayed_scaler collects statistics every N iterations without changing what it does",
          "[quantization_statistics]") {
  delayed_scaler plain(delayed_scaling{}, fp8_pass::forward, 2);
  delayed_scaler measured(delayed_scaling{}, fp8_pass::forward, 2);
  measured.collect_statistics(1, 2);
  CHECK_FALSE(measured.statistics(1).has_value());
  const std::size_t n = 5000;
  for (unsigned it = 0; it < 6; ++it) {
    for (std::size_t t = 0; t < 2; ++t) {
      const std::vector<float> x = normal_values(n, 0.0f, 1.0f + 10.0f * static_cast<float>(it + t), 100 + it);
      std::vector<float8_e4m3fn> a(n), b(n);
      const fp8_quantized qa = plain.quantize(t, x.data(), n, a.data());
      const fp8_quantized qb = measured.quantize(t, x.data(), n, b.data());
      CHECK(std::memcmp(a.data(), b.data(), n) == 0);
      CHECK(same_bits(qa.amax, qb.amax));
      CHECK(same_bits(qa.scale, qb.scale));
      if (t == 1 && it % 2 == 0) {
        REQUIRE(measured.statistics(1).has_value());
        CHECK(measured.statistics(1)->iteration == static_cast<std::int64_t>(it));
        require_same(measured.statistics(1)->report.quantization,
                     quantization_statistics_of(x.data(), n, b.data(), qb.scale_inv));
        require_same(measured.statistics(1)->report.tensor, statistics_of(x.data(), n));
      }
    }
    plain.update();
    measured.update();
    CHECK(same_bits(plain.scale(0), measured.scale(0)));
    CHECK(same_bits(plain.scale(1), measured.scale(1)));
  }
  CHECK(measured.statistics(1)->iteration == 4);
  CHECK_FALSE(measured.statistics(0).has_value());
  CHECK_FALSE(plain.statistics(1).has_value());
  const std::string json = measured.statistics_json();
  CHECK_THAT(json, Catch::StartsWith("{\"pass\": \"forward\", \"tensors\": [{\"tensor\": 1, \"iteration\": 4, "
                                     "\"stats\": {\"numel\": 5000, \"min\": "));
  CHECK_THAT(json,
             Catch::Contains("\"underflows%\": ") && Catch::Contains("\"scale_inv_max\": ") && Catch::EndsWith("}}]}"));
  CHECK(plain.statistics_json() == "{\"pass\": \"forward\", \"tensors\": []}");

  CHECK_THROWS_WITH(measured.collect_statistics(0, -1),
                    "delayed_scaler::collect_statistics: every is -1, it must be >= 0 (0 turns collection off)");
  CHECK_THROWS_WITH(measured.collect_statistics(2, 1), "delayed_scaler: tensor 2 out of range, the scaler has 2");
  measured.collect_statistics(1, 0);  // off: the last record stays
  CHECK(measured.statistics(1)->iteration == 4);
}

TEST_CASE("the statistics' JSON: TE's names, non-finite values as strings", "[quantization_statistics]") {
  std::vector<float> x = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  std::vector<float8_e4m3fn> q(2);
  const quantized_with_statistics r = quantize_with_statistics(x.data(), 2, q.data(), 1.0f);
  const std::string json = to_json(quantization_report{r.tensor, r.quantization});
  CHECK(
      json ==
      "{\"numel\": 2, \"min\": \"nan\", \"max\": \"nan\", \"mean\": \"nan\", \"std\": \"nan\", \"l1_norm\": \"nan\", "
      "\"l2_norm\": \"nan\", \"cur_amax\": \"nan\", \"dynamic_range\": \"nan\", \"underflows_num\": 0, "
      "\"underflows%\": 0, \"overflows_num\": 0, \"overflows%\": 0, \"mse\": \"nan\", \"total_square_error\": \"nan\", "
      "\"scale_inv_min\": 1, \"scale_inv_max\": 1}");
}
