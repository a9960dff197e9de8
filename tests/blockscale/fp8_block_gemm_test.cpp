// blockscale/fp8_block_gemm.hpp: the documented order of operations bit for bit (a transcription of
// DeepSeek-V3's fp8_gemm_kernel loop on the CPU, each 128-chunk's tl.dot summed in gemm's order
// for bf16-exact operands on the path in use), on every gemm path and 1 or 2 threads, an exact
// known answer, and the documented error bound against a double-precision product of the
// dequantised operands.
#include <mixprec/blockscale/fp8_block_gemm.hpp>
#include <mixprec/gemm/options.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "block_gemm_reference.hpp"
#include "float_bits.hpp"
#include "gemm_paths.hpp"
#include "random_floats.hpp"

namespace {

using namespace mixprec;
using namespace mixprec::blockscale;

double gamma(double n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1.0 - n * u);
}

// accumulator += tl.dot(a, b) * a_s[:, None] * b_s[None, :], chunk by chunk, one element of C, with
// tl.dot the chunk's sum from +0 in the order gemm<bfloat16, bfloat16> has on `path`
// (docs/gemm.md; tests/gemm/gemm_reference.hpp writes each order out).  Until fp8_block_gemm ran
// on gemm this was the sequential order; every order is within the same bound.
template <class TA, class TB>
std::vector<float> transcribed_gemm(const fp8_block_matrix<TA>& a, const fp8_block_matrix<TB>& b, gemm_path path) {
  std::vector<float> c(a.rows() * b.rows());
  block_gemm_reference::fp8_block_gemm_in_order(a, b, c.data(), b.rows(), gemm_test::order_of(path, true));
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
  for (const gemm_path path : supported_gemm_paths()) {  // the order on each path, bit for bit
    INFO("gemm path " << to_string(path));
    force_gemm_path(path);
    std::fill(c.begin(), c.end(), -7.0f);
    fp8_block_gemm(a, b, c.data(), ldc);
    const std::vector<float> expected = transcribed_gemm(a, b, path);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) differing += bits_of(c[i * ldc + j]) != bits_of(expected[i * N + j]);
      REQUIRE(c[i * ldc + N] == -7.0f);  // the gap between rows is not written
    }
    CHECK(differing == 0);
  }
  reset_gemm_path();
  // The bound, on the automatic path's C.
  fp8_block_gemm(a, b, c.data(), ldc);
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
  // Across the 192 × 512 tiles of C (blockscale/detail/block_products.hpp) and the 128 × 128
  // blocks of both operands.
  check_gemm<float8_e4m3fn, float8_e4m3fn>(193, 513, 300, K1::tile_128x128, K1::tile_128x128,
                                           fp8_block_rule::deepseek_v3);
  check_gemm<float8_e4m3fn, float8_e4m3fn>(1, 1, 1, K1::row_1x128, K1::row_1x128, fp8_block_rule::deepseek_v3);
  check_gemm<float8_e5m2, float8_e4m3fn>(200, 9, 128, K1::tile_128x128, K1::row_1x128,
                                         fp8_block_rule::transformer_engine);
}

TEST_CASE("fp8 block gemm gives the same bits on 1 and 2 threads", "[blockscale][gemm][threads]") {
  // 200 × 300 × 300: 18 M multiply-adds, above gemm's 2^23 per thread, so 2 threads split it.
  const std::size_t M = 200, N = 300, K = 300;
  const std::vector<float> x = gaussian(M * K, 1.0f, 13), w = gaussian(N * K, 0.05f, 14);
  const auto a = fp8_block_quantize<float8_e4m3fn>(x.data(), M, K, K);
  const auto b =
      fp8_block_quantize<float8_e4m3fn>(w.data(), N, K, K, {fp8_block_rule::deepseek_v3, fp8_block_kind::tile_128x128});
  std::vector<float> one(M * N), two(M * N);
  set_gemm_threads(1);
  fp8_block_gemm(a, b, one.data(), N);
  set_gemm_threads(2);
  fp8_block_gemm(a, b, two.data(), N);
  set_gemm_threads(1);
  const std::vector<float> expected = transcribed_gemm(a, b, resolve_gemm_path());
  std::size_t differing = 0, from_transcription = 0;
  for (std::size_t x_ = 0; x_ < one.size(); ++x_) {
    differing += bits_of(one[x_]) != bits_of(two[x_]);
    from_transcription += bits_of(one[x_]) != bits_of(expected[x_]);
  }
  CHECK(differing == 0);
  CHECK(from_transcription == 0);
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
