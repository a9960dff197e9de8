// The block-scaled GEMMs (blockscale/fp8_block_gemm.hpp: 1×128 A × 128×128 B, e4m3; and
// blockscale/nvfp4_gemm.hpp: 1×16 blocks) against gemm on float and bf16 operands, at
// M = N = K = n, one thread.  GFLOP/s counts 2n³.  The *_reference cases run the scalar loops the
// two had before they ran on gemm (tests/blockscale/block_gemm_reference.hpp).
//   blockscale_gemm_benchmark --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <mixprec/blockscale/fp8_block_gemm.hpp>
#include <mixprec/blockscale/nvfp4_gemm.hpp>
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/gemm/gemm.hpp>

#include <vector>

#include "../tests/blockscale/block_gemm_reference.hpp"
#include "benchmark_support.hpp"
#include "square_gemm.hpp"

namespace {

using namespace mixprec;

template <bool Reference>
void fp8_block_gemm_on(benchmark::State& state) {
  using namespace mixprec::blockscale;
  const std::size_t n = elements(state);
  const auto a = fp8_block_quantize<float8_e4m3fn>(gaussian_input(n * n).data(), n, n, n);
  const auto b = fp8_block_quantize<float8_e4m3fn>(gaussian_input(n * n).data(), n, n, n,
                                                   {fp8_block_rule::deepseek_v3, fp8_block_kind::tile_128x128});
  std::vector<float> c(n * n);
  for (auto _ : state) {
    if (Reference) {
      block_gemm_reference::fp8_block_gemm_sequential(a, b, c.data(), n);
    } else {
      fp8_block_gemm(a, b, c.data(), n);
    }
    benchmark::DoNotOptimize(c.data());
  }
  report_square_gemm(state);
}

template <bool Reference>
void nvfp4_gemm_on(benchmark::State& state) {
  using namespace mixprec::blockscale;
  const std::size_t n = elements(state);
  const nvfp4_tensor a = nvfp4_quantize(gaussian_input(n * n).data(), n, n, n);
  nvfp4_options columns;
  columns.rowwise = false;
  columns.columnwise = true;
  const nvfp4_tensor b = nvfp4_quantize(gaussian_input(n * n).data(), n, n, n, columns);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    if (Reference) {
      block_gemm_reference::nvfp4_gemm_reference(1.0f, *a.rowwise, *b.columnwise, 0.0f, c.data(), n);
    } else {
      nvfp4_gemm(1.0f, a, b, 0.0f, c.data(), n);
    }
    benchmark::DoNotOptimize(c.data());
  }
  report_square_gemm(state);
}

#define SIZES ->Arg(256)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)
BENCHMARK_TEMPLATE(square_gemm_on, float, transpose::yes) SIZES;
BENCHMARK_TEMPLATE(square_gemm_on, bfloat16, transpose::yes) SIZES;
BENCHMARK_TEMPLATE(fp8_block_gemm_on, false) SIZES;
BENCHMARK_TEMPLATE(nvfp4_gemm_on, false) SIZES;
// The scalar loops: about 4 GFLOP/s, so not at 2048 (7 s an iteration).
BENCHMARK_TEMPLATE(fp8_block_gemm_on, true)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(nvfp4_gemm_on, true)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
BENCHMARK_MAIN();
