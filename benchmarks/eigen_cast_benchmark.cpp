// Eigen's .cast<>() of a whole float matrix into bfloat16 and float8_e4m3fn: mixprec's bulk
// route (eigen/cast.hpp: convert_n over the array), mixprec types through Eigen's element loop
// (a destination of the other storage order forces it; same scalar conversion), and Eigen's own
// Eigen::bfloat16, against memcpy of the same bytes.  Bytes counted: read plus written.
//   eigen_cast_benchmark --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <Eigen/Core>
#include <benchmark/benchmark.h>
#include <mixprec/eigen/cast.hpp>

#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace mixprec;

Eigen::MatrixXf gaussian(Eigen::Index rows) {
  std::mt19937 generator(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Eigen::MatrixXf m(rows, 1024);
  for (Eigen::Index k = 0; k < m.size(); ++k) m.data()[k] = normal(generator);
  return m;
}

void report(benchmark::State& state, std::size_t bytes_per_element) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0) * 1024 *
                          static_cast<std::int64_t>(bytes_per_element));
}

// The bulk route: contiguous source and destination of the same storage order.
template <class T>
void mixprec_bulk_cast(benchmark::State& state) {
  const Eigen::MatrixXf from = gaussian(state.range(0));
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> to(from.rows(), from.cols());
  for (auto _ : state) {
    to = from.cast<T>();
    benchmark::DoNotOptimize(to.data());
  }
  report(state, 4 + sizeof(T));
}

// Eigen's element loop with mixprec's scalar conversion: the destination is row-major.
template <class T>
void mixprec_element_loop_cast(benchmark::State& state) {
  const Eigen::MatrixXf from = gaussian(state.range(0));
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to(from.rows(), from.cols());
  for (auto _ : state) {
    to = from.cast<T>();
    benchmark::DoNotOptimize(to.data());
  }
  report(state, 4 + sizeof(T));
}

void eigen_bfloat16_cast(benchmark::State& state) {
  const Eigen::MatrixXf from = gaussian(state.range(0));
  Eigen::Matrix<Eigen::bfloat16, Eigen::Dynamic, Eigen::Dynamic> to(from.rows(), from.cols());
  for (auto _ : state) {
    to = from.cast<Eigen::bfloat16>();
    benchmark::DoNotOptimize(to.data());
  }
  report(state, 6);
}

// memcpy of the same traffic as a float -> 16-bit cast (3 bytes copied per element).
void memcpy_same_bytes(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) * 1024 * 3;
  std::vector<char> from(bytes, 1), to(bytes, 2);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::DoNotOptimize(to.data());
  }
  report(state, 6);
}

// 256 rows of 1024 (256 Ki elements, in cache) and 16384 rows (16 Mi, in memory).
#define SIZES ->Arg(256)->Arg(16384)->Unit(benchmark::kMicrosecond)
BENCHMARK(memcpy_same_bytes) SIZES;
BENCHMARK_TEMPLATE(mixprec_bulk_cast, bfloat16) SIZES;
BENCHMARK_TEMPLATE(mixprec_element_loop_cast, bfloat16) SIZES;
BENCHMARK(eigen_bfloat16_cast) SIZES;
BENCHMARK_TEMPLATE(mixprec_bulk_cast, float8_e4m3fn) SIZES;
BENCHMARK_TEMPLATE(mixprec_element_loop_cast, float8_e4m3fn) SIZES;

}  // namespace

BENCHMARK_MAIN();
