// OpenBLAS sgemm (row-major cblas), threads through openblas_set_num_threads.  OpenBLAS picks its
// kernels for the CPU at run time.
#include <cblas.h>

#include "peer_support.hpp"

namespace {

void openblas_sgemm(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const int size = static_cast<int>(n);
  const std::vector<float> A = gemm_bench::random_matrix(n, 1), B = gemm_bench::random_matrix(n, 2);
  std::vector<float> C(n * n);
  openblas_set_num_threads(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size, size, 1.0f, A.data(), size, B.data(), size, 0.0f,
                C.data(), size);
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  openblas_set_num_threads(1);
  gemm_bench::count_flops(state, n);
}

BENCHMARK(openblas_sgemm)->Apply(gemm_bench::sizes_and_threads)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
