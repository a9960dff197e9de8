// Eigen's GEMM, compiled for this machine (-march=native, see peers.cmake) so that it runs its
// AVX-512 kernels: float (Eigen::MatrixXf) and Eigen::bfloat16 (whose product rounds every
// partial sum to bfloat16).  Threads through Eigen::setNbThreads (OpenMP).
#include <Eigen/Core>

#include "peer_support.hpp"

namespace {

template <class Scalar>
void eigen_gemm(benchmark::State& state) {
  using float_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto size = static_cast<Eigen::Index>(n);
  const std::vector<float> a_values = gemm_bench::random_matrix(n, 1), b_values = gemm_bench::random_matrix(n, 2);
  const matrix A = Eigen::Map<const float_matrix>(a_values.data(), size, size).template cast<Scalar>();
  const matrix B = Eigen::Map<const float_matrix>(b_values.data(), size, size).template cast<Scalar>();
  matrix C(size, size);
  Eigen::setNbThreads(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    C.noalias() = A * B;
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  Eigen::setNbThreads(1);
  gemm_bench::count_flops(state, n);
}

BENCHMARK_TEMPLATE(eigen_gemm, float)
    ->Apply(gemm_bench::sizes_and_threads)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(eigen_gemm, Eigen::bfloat16)
    ->Apply(gemm_bench::sizes_and_threads)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
