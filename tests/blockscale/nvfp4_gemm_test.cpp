// blockscale/nvfp4_gemm.hpp against a double reference of the dequantised operands (each â = q·s·d
// exact in double: 2 + 4 + 24 significant bits), within the bound of the header:
//   |C - (alpha Σ â b̂ + beta C0)| <= gamma_(nb + 4) (|alpha| Σ |â b̂| + |beta C0|),  nb = ceil(K / 16).
// And its order bit for bit against a transcription of the header's steps and against the scalar
// loop the library had before it ran on gemm (block_gemm_reference.hpp), on every gemm path and
// 1 or 2 threads, and its errors.
#include <mixprec/blockscale/nvfp4_gemm.hpp>
#include <mixprec/gemm/options.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "block_gemm_reference.hpp"
#include "float_bits.hpp"
#include "gemm_paths.hpp"

namespace {

using namespace mixprec::blockscale;

std::vector<float> random_matrix(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exponent(-6, 6);
  std::vector<float> a(rows * cols);
  for (float& x : a) x = std::ldexp(normal(gen), exponent(gen));
  return a;
}

// The exact dequantised value of element (r, c) of a copy: q × s × d in double.
double exact_value(const nvfp4_matrix& m, std::size_t r, std::size_t c) {
  const std::size_t line = m.columnwise() ? c : r, position = m.columnwise() ? r : c;
  const double q = static_cast<double>(mixprec::float4_e2m1fn::from_bits(static_cast<std::uint8_t>(m.code(r, c))));
  const double s = static_cast<double>(m.scale(line, position / nvfp4_block_size));
  if (m.rule() == nvfp4_rule::torchao) return q * static_cast<double>(m.decode_scale() * static_cast<float>(s));
  return q * s * static_cast<double>(m.decode_scale());
}

// A (M × K, its row-wise copy) and B (K × N, its column-wise 16 × 16 copy) quantised from random
// matrices drawn with seeds `seed` and seed + 1, as a linear layer's forward takes them.
std::pair<nvfp4_tensor, nvfp4_tensor> random_operands(std::size_t M, std::size_t N, std::size_t K, nvfp4_rule rule,
                                                      unsigned seed) {
  const std::vector<float> a = random_matrix(M, K, seed), b = random_matrix(K, N, seed + 1);
  nvfp4_options o;
  o.rule = rule;
  nvfp4_tensor qa = nvfp4_quantize(a.data(), M, K, K, o);
  o.rowwise = false;
  o.columnwise = true;
  o.tile = nvfp4_tile::square_16;
  return {std::move(qa), nvfp4_quantize(b.data(), K, N, N, o)};
}

TEST_CASE("nvfp4_gemm is within its bound of the double product of the dequantised operands", "[nvfp4][gemm]") {
  struct shape {
    std::size_t M, N, K;
  };
  for (const shape s : {shape{33, 50, 47}, shape{1, 1, 16}, shape{7, 5, 1}, shape{16, 16, 256}, shape{9, 13, 100}}) {
    for (const nvfp4_rule rule : {nvfp4_rule::transformer_engine, nvfp4_rule::torchao}) {
      for (const float beta : {0.0f, 0.75f}) {
        const auto [qa, qb] = random_operands(s.M, s.N, s.K, rule, 1);
        const std::vector<float> c0 = random_matrix(s.M, s.N, 3);
        std::vector<float> c = c0;
        const float alpha = 1.5f;
        nvfp4_gemm(alpha, qa, qb, beta, c.data(), s.N);
        const std::size_t blocks = (s.K + 15) / 16;
        const double u = std::ldexp(1.0, -24), n = static_cast<double>(blocks + 4);
        const double gamma = n * u / (1 - n * u);
        std::size_t outside = 0;
        double worst = 0;
        for (std::size_t i = 0; i < s.M; ++i) {
          for (std::size_t j = 0; j < s.N; ++j) {
            double exact = 0, magnitude = 0;
            for (std::size_t k = 0; k < s.K; ++k) {
              const double p = exact_value(*qa.rowwise, i, k) * exact_value(*qb.columnwise, k, j);
              exact += p;
              magnitude += std::fabs(p);
            }
            const double c_beta = static_cast<double>(beta) * c0[i * s.N + j];
            const double want = alpha * exact + c_beta;
            const double bound = gamma * (alpha * magnitude + std::fabs(c_beta)) + 1e-37;
            const double error = std::fabs(static_cast<double>(c[i * s.N + j]) - want);
            outside += error > bound;
            if (bound > 0) worst = std::max(worst, error / bound);
          }
        }
        INFO(s.M << "×" << s.N << "×" << s.K << " " << to_string(rule) << " beta " << beta << " worst " << worst);
        CHECK(outside == 0);
      }
    }
  }
}

TEST_CASE("nvfp4_gemm sums in the header's order: exact block sums, float accumulation, one epilogue",
          "[nvfp4][gemm]") {
  const std::size_t M = 5, N = 6, K = 70;
  const std::vector<float> a = random_matrix(M, K, 4), b = random_matrix(K, N, 5);
  nvfp4_options o;
  o.columnwise = true;
  const nvfp4_tensor qa = nvfp4_quantize(a.data(), M, K, K, o), qb = nvfp4_quantize(b.data(), K, N, N, o);
  std::vector<float> c(M * N, 2.0f);
  nvfp4_gemm(0.5f, qa, qb, -1.0f, c.data(), N);
  const nvfp4_matrix &ma = *qa.rowwise, &mb = *qb.columnwise;
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (std::size_t kb = 0; kb < (K + 15) / 16; ++kb) {
        double block = 0;  // exact: at most 16 products of e2m1 values
        for (std::size_t k = kb * 16; k < std::min(K, kb * 16 + 16); ++k) {
          block += static_cast<double>(mixprec::float4_e2m1fn::from_bits(static_cast<std::uint8_t>(ma.code(i, k)))) *
                   static_cast<double>(mixprec::float4_e2m1fn::from_bits(static_cast<std::uint8_t>(mb.code(k, j))));
        }
        const double scales = static_cast<double>(ma.scale(i, kb)) * static_cast<double>(mb.scale(j, kb));
        acc += static_cast<float>(block * scales);
      }
      const float head = (0.5f * (ma.decode_scale() * mb.decode_scale())) * acc;
      const float tail = -1.0f * 2.0f;
      CHECK(c[i * N + j] == head + tail);
    }
  }
}

// C from nvfp4_gemm and from the reference loop on the same operands and the same C0, bit for bit.
void check_same_as_reference(const nvfp4_matrix& a, const nvfp4_matrix& b, float alpha, float beta,
                             const std::vector<float>& c0, std::size_t ldc) {
  std::vector<float> fast = c0, reference = c0;
  nvfp4_gemm(alpha, a, b, beta, fast.data(), ldc);
  block_gemm_reference::nvfp4_gemm_reference(alpha, a, b, beta, reference.data(), ldc);
  std::size_t differing = 0;
  for (std::size_t x = 0; x < fast.size(); ++x) differing += bits_of(fast[x]) != bits_of(reference[x]);
  CHECK(differing == 0);
}

TEST_CASE("nvfp4_gemm equals the scalar reference bit for bit on every gemm path: shapes, tile edges, alpha, beta",
          "[nvfp4][gemm]") {
  struct shape {
    std::size_t M, N, K;
  };
  // K not a multiple of 16 (the last block padded with zero codes), M and N across the 192 × 512
  // tiles of C (blockscale/detail/block_products.hpp) and gemm's micro-tiles.
  const shape shapes[] = {{1, 1, 1},      {1, 1, 16},     {7, 5, 1},     {6, 16, 17},    {33, 50, 47},
                          {193, 513, 40}, {13, 600, 100}, {200, 7, 261}, {192, 512, 32}, {2, 3, 0}};
  for (const mixprec::gemm_path path : supported_gemm_paths()) {
    mixprec::force_gemm_path(path);
    for (const shape s : shapes) {
      for (const nvfp4_rule rule : {nvfp4_rule::transformer_engine, nvfp4_rule::torchao}) {
        const auto [qa, qb] = random_operands(s.M, s.N, s.K, rule, 6);
        const std::size_t ldc = s.N + 3;
        const std::vector<float> c0 = random_matrix(s.M, ldc, 8);
        for (const float alpha : {1.0f, -0.3f}) {
          for (const float beta : {0.0f, 1.0f, 0.75f}) {
            INFO(mixprec::to_string(path) << " " << s.M << "×" << s.N << "×" << s.K << " " << to_string(rule)
                                          << " alpha " << alpha << " beta " << beta);
            check_same_as_reference(*qa.rowwise, *qb.columnwise, alpha, beta, c0, ldc);
          }
        }
      }
    }
  }
  mixprec::reset_gemm_path();
}

TEST_CASE("nvfp4_gemm equals the scalar reference on Hadamard-transformed copies and on zero blocks", "[nvfp4][gemm]") {
  const std::size_t m = 48, n = 40, k = 70;  // wgrad: dW = dYᵀ · X over the 48 rows
  std::vector<float> dy = random_matrix(m, n, 9), x = random_matrix(m, k, 10);
  for (std::size_t c = 0; c < k; ++c) x[17 * k + c] = 0.0f;  // a zero row: blocks with scale 0
  for (std::size_t r = 0; r < m; ++r) dy[r * n + 3] = 0.0f;  // a zero column of dY
  nvfp4_options o;
  o.rowwise = false;
  o.columnwise = true;
  o.columnwise_rht.enabled = true;
  const nvfp4_tensor qdy = nvfp4_quantize(dy.data(), m, n, n, o), qx = nvfp4_quantize(x.data(), m, k, k, o);
  const std::vector<float> c0(n * k, 1.0f);
  for (const mixprec::gemm_path path : supported_gemm_paths()) {
    INFO(mixprec::to_string(path));
    mixprec::force_gemm_path(path);
    check_same_as_reference(qdy.columnwise->transposed(), *qx.columnwise, 1.0f, 0.0f, c0, k);
    check_same_as_reference(qdy.columnwise->transposed(), *qx.columnwise, 2.0f, -1.0f, c0, k);
  }
  mixprec::reset_gemm_path();
}

TEST_CASE("nvfp4_gemm gives the same bits on 1 and 2 threads", "[nvfp4][gemm][threads]") {
  // 200 × 300 × 300: 18 M multiply-adds, above gemm's 2^23 per thread, so 2 threads split it.
  const std::size_t M = 200, N = 300, K = 300;
  const std::vector<float> a = random_matrix(M, K, 11), b = random_matrix(K, N, 12);
  nvfp4_options o;
  const nvfp4_tensor qa = nvfp4_quantize(a.data(), M, K, K, o);
  o.rowwise = false;
  o.columnwise = true;
  const nvfp4_tensor qb = nvfp4_quantize(b.data(), K, N, N, o);
  std::vector<float> one(M * N, 0.5f), two = one, reference = one;
  mixprec::set_gemm_threads(1);
  nvfp4_gemm(1.0f, qa, qb, 0.5f, one.data(), N);
  mixprec::set_gemm_threads(2);
  nvfp4_gemm(1.0f, qa, qb, 0.5f, two.data(), N);
  mixprec::set_gemm_threads(1);
  block_gemm_reference::nvfp4_gemm_reference(1.0f, *qa.rowwise, *qb.columnwise, 0.5f, reference.data(), N);
  std::size_t differing = 0, from_reference = 0;
  for (std::size_t x = 0; x < one.size(); ++x) {
    differing += bits_of(one[x]) != bits_of(two[x]);
    from_reference += bits_of(one[x]) != bits_of(reference[x]);
  }
  CHECK(differing == 0);
  CHECK(from_reference == 0);
}

TEST_CASE("nvfp4_gemm rejects operands it cannot multiply, naming them", "[nvfp4][gemm]") {
  const std::vector<float> a(std::size_t{16} * 32, 1.0f);
  nvfp4_options both;
  both.columnwise = true;
  const nvfp4_tensor t = nvfp4_quantize(a.data(), 16, 32, 32, both);    // 16 × 32
  const nvfp4_tensor rows_only = nvfp4_quantize(a.data(), 32, 16, 16);  // 32 × 16, no columnwise copy
  std::vector<float> c(std::size_t{32} * 32);
  CHECK_THROWS_AS(nvfp4_gemm(1.0f, t, rows_only, 0.0f, c.data(), 32), mixprec::invalid_argument);
  CHECK_THROWS_WITH(
      nvfp4_gemm(1.0f, t, rows_only, 0.0f, c.data(), 32),
      Catch::Contains("nvfp4_gemm: needs A's rowwise copy and B's columnwise copy; A has its rowwise copy, "
                      "B lacks its columnwise copy"));
  CHECK_THROWS_WITH(nvfp4_gemm(1.0f, *t.columnwise, *t.columnwise, 0.0f, c.data(), 32),
                    Catch::Contains("nvfp4_gemm: A must be a rowwise copy and B a columnwise copy"));
  CHECK_THROWS_WITH(nvfp4_gemm(1.0f, t, t, 0.0f, c.data(), 32),
                    Catch::Contains("nvfp4_gemm: A is 16 × 32 but B is 16 × 32 (A's columns must be B's rows)"));
  const nvfp4_tensor b = nvfp4_quantize(a.data(), 32, 16, 16, both);
  CHECK_THROWS_WITH(nvfp4_gemm(1.0f, t, b, 0.0f, c.data(), 8),
                    Catch::Contains("nvfp4_gemm: leading dimension 8 is smaller than the 16 columns"));
}

}  // namespace
