// The matrix product on MX operands (mx_gemm: the MX matrices as gemm's panel sources, on
// gemm's bf16 kernels when their values are bf16 values) against gemm on float, bf16 and
// per-tensor fp8 operands, at M = N = K = n, one thread.  GFLOP/s counts 2n³.
//   mx_gemm_benchmark --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/gemm/gemm.hpp>
#include <mixprec/mx/mx.hpp>

#include <vector>

#include "benchmark_support.hpp"
#include "square_gemm.hpp"

namespace {

using namespace mixprec;

template <class T>
void mx_gemm_on(benchmark::State& state) {
  const std::size_t n = elements(state);
  const mx_matrix<T> a = mx_quantize<T>(gaussian_input(n * n).data(), n, n, n, mx_axis::rows);
  const mx_matrix<T> b = mx_quantize<T>(gaussian_input(n * n).data(), n, n, n, mx_axis::columns);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    mx_gemm(1.0f, a, b, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  report_square_gemm(state);
}

#define SIZES ->Arg(256)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)
BENCHMARK_TEMPLATE(square_gemm_on, float) SIZES;
BENCHMARK_TEMPLATE(square_gemm_on, bfloat16) SIZES;
BENCHMARK_TEMPLATE(square_gemm_on, float8_e4m3fn) SIZES;
BENCHMARK_TEMPLATE(mx_gemm_on, float8_e4m3fn) SIZES;
BENCHMARK_TEMPLATE(mx_gemm_on, float6_e2m3fn) SIZES;
BENCHMARK_TEMPLATE(mx_gemm_on, float4_e2m1fn) SIZES;

}  // namespace

BENCHMARK_MAIN();
