// blockscale/fp8_block_gemm.hpp: the documented order of operations bit for bit (a transcription of
// DeepSeek-V3's fp8_gemm_kernel loop on the CPU), an exact known answer, and the documented error
// bound against a double-precision product of the dequantised operands.
#include <mixprec/blockscale/fp8_block_gemm.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "float_bits.hpp"
#include "random_floats.hpp"

namespace {

using namespace mixprec;
using namespace mixprec::blockscale;

double gamma(double n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1.0 - n * u);
}

// accumulator += tl.dot(a, b) * a_s[:, None] * b_s[None, :], chunk by chunk, one element of C.
template <class TA, class TB>
std::vector<float> transcribed_gemm(const fp8_block_matrix<TA>& a, const fp8_block_matrix<TB>& b) {
  const std::size_t M = a.rows(), N = b.rows(), K = a.cols();
  std::vector<float> c(M * N);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      float accumulator = 0.0f;
      for (std::size_t k0 = 0; k0 < K; k0 += 128) {
        float dot = 0.0f;
        for (std::size_t k = k0; k < std::min(K, k0 + 128); ++k) {
          dot += static_cast<float>(a.element(i, k)) * static_cast<float>(b.element(j, k));
        }
        const float a_s = a.scale_inv_at(i, k0), b_s = b.scale_inv_at(j, k0);
        const float scaled = dot * a_s;
        accumulator += scaled * b_s;
      }
      c[i * N + j] = accumulator;
    }
  }
  return c;
}

template <class TA, class TB>
void check_gemm(std::size_t M, std::size_t N, std::size_t K, fp8_block_kind kind_a, fp8_block_kind kind_b,
                fp8_block_rule rule) {
  INFO(M << " × " << N << " × " << K << ", A " << to_string(kind_a) << ", B " << to_string(kind_b) << ", "
         << to_string(rule));
  std::vector<float> x = gaussian(M * K, 1.0f, 11), w = gaussian(N * K, 0.05f, 12);
  for (std::size_t i = 0; i < M; ++i) x[i * K] *= 300.0f;  // an outlier per row
  fp8_block_options oa{rule, kind_a}, ob{rule, kind_b};
  const auto a = fp8_block_quantize<TA>(x.data(), M, K, K, oa);
  const auto b = fp8_block_quantize<TB>(w.data(), N, K, K, ob);
  const std::size_t ldc = N + 2;
  std::vector<float> c(M * ldc, -7.0f);
  fp8_block_gemm(a, b, c.data(), ldc);

  const std::vector<float> expected = transcribed_gemm(a, b);
  const std::size_t chunk_count = (K + 127) / 128;
  const double chunks = static_cast<double>(chunk_count), depth = static_cast<double>(std::min<std::size_t>(K, 128));
  const double bound_factor = gamma(depth - 1 + 2 + chunks - 1);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      double exact = 0, magnitude = 0;
      for (std::size_t k = 0; k < K; ++k) {
        const double ak = static_cast<double>(static_cast<float>(a.element(i, k))) * a.scale_inv_at(i, k);
        const double bk = static_cast<double>(static_cast<float>(b.element(j, k))) * b.scale_inv_at(j, k);
        const double p = ak * bk;  // double rounding: about 2^-53, far below the bound
        exact += p;
        magnitude += std::fabs(p);
      }
      const float got = c[i * ldc + j];
      INFO("C(" << i << ", " << j << ") = " << got << ", exact " << exact);
      REQUIRE(bits_of(got) == bits_of(expected[i * N + j]));
      REQUIRE(std::fabs(static_cast<double>(got) - exact) <= bound_factor * magnitude);
    }
    REQUIRE(c[i * ldc + N] == -7.0f);  // the gap between rows is not written
  }
}

}  // namespace

TEST_CASE("fp8 block gemm: documented order and bound vs double, every pair of block kinds", "[blockscale][gemm]") {
  using K1 = fp8_block_kind;
  check_gemm<float8_e4m3fn, float8_e4m3fn>(130, 67, 257, K1::row_1x128, K1::tile_128x128, fp8_block_rule::deepseek_v3);
  check_gemm<float8_e4m3fn, float8_e4m3fn>(37, 131, 300, K1::row_1x128, K1::row_1x128,
                                           fp8_block_rule::transformer_engine);
  check_gemm<float8_e4m3fn, float8_e5m2>(20, 140, 129, K1::tile_128x128, K1::row_1x128,
                                         fp8_block_rule::transformer_engine);
  check_gemm<float8_e5m2, float8_e5m2>(5, 3, 100, K1::tile_128x128, K1::tile_128x128,
                                       fp8_block_rule::transformer_engine_reference);
}

TEST_CASE("fp8 block gemm on an exact known answer: chunk sums scaled, then added", "[blockscale][gemm]") {
  // A = [1 ... 1 | 2 ... 2] (1 × 256), B = [3 ... 3 | 0.5 ... 0.5] (1 × 256).  With amax 1 and 2 the
  // TE pow2 scales are 256 and 128 (448 / 1 → 256, 448 / 2 → 128), decode 2^-8 and 2^-7; for B
  // 448 / 3 → 128 and 448 / 0.5 = 896 → 512.  Codes: 256, 256, 384, 256; chunk sums 128 · 256 · 384
  // and 128 · 256 · 256; scaled 128 · 3 = 384 and 128 · 1 = 128; C = 512, every step exact.
  std::vector<float> a(256), b(256);
  for (std::size_t k = 0; k < 256; ++k) {
    a[k] = k < 128 ? 1.0f : 2.0f;
    b[k] = k < 128 ? 3.0f : 0.5f;
  }
  const auto qa = fp8_block_quantize<float8_e4m3fn>(a.data(), 1, 256, 256);
  const auto qb = fp8_block_quantize<float8_e4m3fn>(b.data(), 1, 256, 256,
                                                    {fp8_block_rule::transformer_engine, fp8_block_kind::tile_128x128});
  CHECK(qa.scale_inv(0, 1) == 0x1p-7f);
  CHECK(qb.scale_inv(0, 1) == 0x1p-9f);
  float c = 0;
  fp8_block_gemm(qa, qb, &c, 1);
  CHECK(c == 512.0f);
}

TEST_CASE("fp8 block gemm refuses mismatched shapes and bad outputs; empty products", "[blockscale][gemm]") {
  std::vector<float> x(std::size_t{3} * 200, 1.0f);
  const auto a = fp8_block_quantize<float8_e4m3fn>(x.data(), 3, 200, 200);
  const auto b = fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 199, 199);
  std::vector<float> c(6);
  CHECK_THROWS_WITH(fp8_block_gemm(a, b, c.data(), 2),
                    Catch::Contains("A is 3 × 200 but B is 2 × 199 (C = A · Bᵀ: both must have K columns)"));
  const auto b2 = fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 200, 200);
  CHECK_THROWS_WITH(fp8_block_gemm(a, b2, nullptr, 2), Catch::Contains("null output pointer for 3 × 2 elements"));
  CHECK_THROWS_WITH(fp8_block_gemm(a, b2, c.data(), 1), Catch::Contains("leading dimension 1 is smaller than the 2"));
  // M = 0: nothing written; K = 0: C = 0.
  const auto a0 = fp8_block_quantize<float8_e4m3fn>(x.data(), 0, 200, 200);
  fp8_block_gemm(a0, b2, nullptr, 2);
  const auto k0a = fp8_block_quantize<float8_e4m3fn>(x.data(), 3, 0, 0);
  const auto k0b = fp8_block_quantize<float8_e4m3fn>(x.data(), 2, 0, 0);
  fp8_block_gemm(k0a, k0b, c.data(), 2);
  for (float v : c) CHECK(v == 0.0f);
}
