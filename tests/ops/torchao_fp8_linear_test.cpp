// ops/torchao_fp8_linear.hpp: each GEMM of torchao's three recipes on operands cast by
// torchao_quantize, within the bound of the documented order against the exact product of the
// dequantised operands (codes / scales), and near the float32 layer.
#include <mixprec/ops/torchao_fp8_linear.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ops_reference.hpp"
#include "quantised_linear_checks.hpp"

using namespace mixprec;
using namespace ops_test;
namespace bs = mixprec::blockscale;

namespace {

// The dequantised values of the rows × cols matrix v cast as `cast` says (or v itself).
std::vector<double> dequantised(const std::vector<float>& v, std::size_t rows, std::size_t cols,
                                const bs::operand_cast& cast, bool pow2) {
  if (cast.high_precision) return std::vector<double>(v.begin(), v.end());
  std::vector<double> out(v.size());
  const bs::torchao_scaling s{cast.granularity, cast.axis, pow2};
  const auto run = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> q(v.size());
    const std::vector<float> scales = bs::torchao_quantize(v.data(), rows, cols, cols, s, q.data(), cols);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        const float scale = scales.size() == 1 ? scales[0] : scales[cast.axis == bs::scale_axis::rows ? r : c];
        out[r * cols + c] = static_cast<double>(static_cast<float>(q[r * cols + c])) / scale;
      }
    }
  };
  if (cast.element == fp8_element::e5m2) {
    run(float8_e5m2{});
  } else {
    run(float8_e4m3fn{});
  }
  return out;
}

// |got − Σ_k a_ik b_kj| <= (γ_K + 2u) Σ_k |a_ik b_kj| (+ a tiny absolute term for underflow), a
// and b the dequantised operands, A (M × K) and B (K × N) row-major.
std::size_t beyond_bound(const matrix& got, const std::vector<double>& a, const std::vector<double>& b, std::size_t M,
                         std::size_t K, std::size_t N) {
  const double u = std::ldexp(1.0, -24),
               gamma = (static_cast<double>(K) + 2) * u / (1 - (static_cast<double>(K) + 2) * u);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      double exact = 0, magnitude = 0;
      for (std::size_t k = 0; k < K; ++k) {
        exact += a[i * K + k] * b[k * N + j];
        magnitude += std::fabs(a[i * K + k] * b[k * N + j]);
      }
      bad += std::fabs(got.data<float>()[i * N + j] - exact) > gamma * magnitude + 1e-37 ? std::size_t{1} : 0;
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("torchao_fp8_linear: every GEMM of the three recipes within its bound of the dequantised product",
          "[ops][torchao]") {
  const std::size_t M = 37, K = 70, N = 29;
  const matrix x = random_matrix(dtype::float32, M, K, 601), w = random_matrix(dtype::float32, N, K, 602, 0.2f);
  const matrix bias = random_matrix(dtype::float32, 1, N, 603), dy = random_matrix(dtype::float32, M, N, 604, 1e-2f);
  const matrix no_bias(dtype::float32, 0, 0);
  const std::vector<float> xf = floats_of(x), wt = floats_of(w, true), dyf = floats_of(dy);
  for (const bs::torchao_recipe recipe :
       {bs::torchao_recipe::tensorwise, bs::torchao_recipe::rowwise, bs::torchao_recipe::rowwise_with_gw_hp}) {
    INFO(to_string(recipe));
    const bs::linear_cast_config c = bs::linear_cast_config_for(recipe);
    const bool pow2 = c.round_scales_to_power_of_2;
    // y = x · wᵀ (without the bias, checked below).
    CHECK(beyond_bound(ops::torchao_fp8_linear(x, w, no_bias, c), dequantised(xf, M, K, c.input, pow2),
                       dequantised(wt, K, N, c.weight, pow2), M, K, N) == 0);
    const ops::linear_grads g = ops::torchao_fp8_linear_backward(dy, x, w, bias, c);
    // dx = dy · w: w = (wᵀ)ᵀ, cast as wᵀ.
    CHECK(beyond_bound(
              g.input, dequantised(dyf, M, N, c.grad_output, pow2),
              [&] {
                const std::vector<double> t = dequantised(wt, K, N, c.weight_for_grad_input, pow2);
                std::vector<double> out(t.size());  // (K × N)ᵀ = N × K
                for (std::size_t k = 0; k < K; ++k) {
                  for (std::size_t n = 0; n < N; ++n) out[n * K + k] = t[k * N + n];
                }
                return out;
              }(),
              M, N, K) == 0);
    // dw = dyᵀ · x: dy cast as dy, used transposed.
    const std::vector<double> dyq = dequantised(dyf, M, N, c.grad_output_for_grad_weight, pow2);
    std::vector<double> dyt(dyq.size());
    for (std::size_t m = 0; m < M; ++m) {
      for (std::size_t n = 0; n < N; ++n) dyt[n * M + m] = dyq[m * N + n];
    }
    CHECK(beyond_bound(g.weight, dyt, dequantised(xf, M, K, c.input_for_grad_weight, pow2), N, M, K) == 0);
    // The whole layer near the float32 one (e4m3 keeps 4 significant bits, e5m2 3).
    check_near_float_linear(ops::torchao_fp8_linear(x, w, bias, c), g, x, w, bias, dy, 0.05, 0.1);
  }
}

TEST_CASE("torchao_fp8_linear refuses a scale across the contraction and bad shapes", "[ops][torchao]") {
  const matrix x(dtype::float32, 4, 3), w(dtype::float32, 5, 3), no_bias(dtype::float32, 0, 0);
  bs::linear_cast_config c = bs::linear_cast_config_for(bs::torchao_recipe::rowwise);
  c.input.axis = bs::scale_axis::columns;
  c.input_for_grad_weight.axis = bs::scale_axis::rows;
  CHECK_THROWS_WITH(ops::torchao_fp8_linear(x, w, no_bias, c),
                    Catch::Contains("torchao_fp8_linear: the output GEMM's left operand is scaled by columns, not "
                                    "along the contraction dimension"));
  const bs::linear_cast_config ok = bs::linear_cast_config_for(bs::torchao_recipe::rowwise);
  CHECK_THROWS_AS(ops::torchao_fp8_linear(x, matrix(dtype::float32, 5, 2), no_bias, ok), invalid_argument);
  CHECK_THROWS_AS(ops::torchao_fp8_linear_backward(matrix(dtype::float32, 4, 4), x, w, no_bias, ok), invalid_argument);
  bs::linear_cast_config mixed = ok;
  mixed.weight.high_precision = true;
  CHECK_THROWS_WITH(ops::torchao_fp8_linear(x, w, no_bias, mixed), Catch::Contains("incompatible operand precision"));
}
