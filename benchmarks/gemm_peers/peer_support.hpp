// What gemm_benchmark.cpp and its peers (one translation unit each, gemm_peers/*.cpp) share:
// the sizes, the operands, and the FLOP/s counter.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

namespace gemm_bench {

// M = N = K = n in {256, 1024, 2048}, on 1 and 2 threads.
inline void sizes_and_threads(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    for (int n : {256, 1024, 2048}) b->Args({n, threads});
  }
}

// n * n Gaussian values (sigma 1), the same for every benchmark of a size.
inline std::vector<float> random_matrix(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gaussian(0.0f, 1.0f);
  std::vector<float> m(n * n);
  for (float& x : m) x = gaussian(rng);
  return m;
}

// 2 n^3 floating-point operations per product, reported as a rate.
inline void count_flops(benchmark::State& state, std::size_t n) {
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace gemm_bench
