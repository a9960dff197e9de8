// What the GEMM benchmarks share: the GFLOP/s counter of an n × n × n product (2n³ per
// iteration), and gemm<T, T> itself on Gaussian operands as the baseline each format's product
// is compared with in the same run.
#pragma once

#include <benchmark/benchmark.h>
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/gemm/gemm.hpp>

#include <vector>

#include "benchmark_support.hpp"

inline void report_square_gemm(benchmark::State& state) {
  const double n = static_cast<double>(state.range(0));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2 * n * n * n * static_cast<double>(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

// C = A · B (TransB = no) or A · Bᵀ (yes, as the block-scaled products take B), one thread.
template <class T, mixprec::transpose TransB = mixprec::transpose::no>
void square_gemm_on(benchmark::State& state) {
  using namespace mixprec;
  const std::size_t n = elements(state);
  std::vector<T> a(n * n), b(n * n);
  convert_n(gaussian_input(n * n).data(), n * n, a.data());
  convert_n(gaussian_input(n * n).data(), n * n, b.data());
  std::vector<float> c(n * n);
  for (auto _ : state) {
    gemm(transpose::no, TransB, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  report_square_gemm(state);
}
