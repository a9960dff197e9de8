// blockscale/nvfp4_gemm.hpp against a double reference of the dequantised operands (each â = q·s·d
// exact in double: 2 + 4 + 24 significant bits), within the bound of the header:
//   |C - (alpha Σ â b̂ + beta C0)| <= gamma_(nb + 4) (|alpha| Σ |â b̂| + |beta C0|),  nb = ceil(K / 16).
// And its order bit for bit against a transcription of the header's steps, and its errors.
#include <mixprec/blockscale/nvfp4_gemm.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

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

TEST_CASE("nvfp4_gemm is within its bound of the double product of the dequantised operands", "[nvfp4][gemm]") {
  struct shape {
    std::size_t M, N, K;
  };
  for (const shape s : {shape{33, 50, 47}, shape{1, 1, 16}, shape{7, 5, 1}, shape{16, 16, 256}, shape{9, 13, 100}}) {
    for (const nvfp4_rule rule : {nvfp4_rule::transformer_engine, nvfp4_rule::torchao}) {
      for (const float beta : {0.0f, 0.75f}) {
        const std::vector<float> a = random_matrix(s.M, s.K, 1), b = random_matrix(s.K, s.N, 2);
        nvfp4_options o;
        o.rule = rule;
        const nvfp4_tensor qa = nvfp4_quantize(a.data(), s.M, s.K, s.K, o);
        o.rowwise = false;
        o.columnwise = true;
        o.tile = nvfp4_tile::square_16;
        const nvfp4_tensor qb = nvfp4_quantize(b.data(), s.K, s.N, s.N, o);
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
