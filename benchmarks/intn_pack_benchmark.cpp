// float -> packed int4 (pack_n) and packed int4 -> float (unpack_n) against memcpy of the same
// traffic (4.5 bytes per element: the floats read and the nibbles written, or the reverse), as
// bulk_convert_benchmark counts it.  Inputs: Gaussian floats scaled by 4, so that every int4
// value occurs.  64 Mi elements (in memory) and 256 Ki (in cache), 1 and 2 threads.
//   intn_pack_benchmark --benchmark_filter='/67108864/1$'
#include <benchmark/benchmark.h>
#include <mixprec/bulk/intn_pack.hpp>

#include "benchmark_support.hpp"

#include <cstring>
#include <vector>

namespace {

using namespace mixprec;

constexpr double traffic_per_element = 4.5;  // bytes: 4 of float, 1/2 of int4

void report(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(state.iterations()) *
                                                    static_cast<double>(elements(state)) * traffic_per_element));
}

std::vector<float> scaled_input(std::size_t n) {
  std::vector<float> in = gaussian_input(n);
  for (float& x : in) x *= 4.0f;
  return in;
}

void memcpy_same_traffic(benchmark::State& state) {
  copy_same_traffic(state, static_cast<std::size_t>(static_cast<double>(elements(state)) * traffic_per_element));
  report(state);
}

template <rounding R>
void pack_int4(benchmark::State& state) {
  const std::size_t n = elements(state);
  const std::vector<float> in = scaled_input(n);
  std::vector<unsigned char> out(packed_bytes<int4>(n));
  set_bulk_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    pack_n<int4>(in.data(), n, out.data(), R);
    benchmark::ClobberMemory();
  }
  set_bulk_threads(1);
  report(state);
}

void pack_int4_stochastic(benchmark::State& state) {
  const std::size_t n = elements(state);
  const std::vector<float> in = scaled_input(n);
  std::vector<unsigned char> out(packed_bytes<int4>(n));
  set_bulk_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    pack_stochastic_n<int4>(in.data(), n, out.data(), 1);
    benchmark::ClobberMemory();
  }
  set_bulk_threads(1);
  report(state);
}

void unpack_int4(benchmark::State& state) {
  const std::size_t n = elements(state);
  const std::vector<float> in = scaled_input(n);
  std::vector<unsigned char> packed(packed_bytes<int4>(n));
  pack_n<int4>(in.data(), n, packed.data());
  std::vector<float> out(n);
  set_bulk_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    unpack_n<int4>(packed.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  set_bulk_threads(1);
  report(state);
}

void sizes_and_threads(benchmark::internal::Benchmark* b) {
  b->Args({1 << 18, 1});
  for (std::int64_t threads : {1, 2}) b->Args({1 << 26, threads});
  b->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(memcpy_same_traffic)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(pack_int4, rounding::nearest_even)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(pack_int4, rounding::nearest_away)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(pack_int4, rounding::to_odd)->Apply(sizes_and_threads);
BENCHMARK(pack_int4_stochastic)->Apply(sizes_and_threads);
BENCHMARK(unpack_int4)->Apply(sizes_and_threads);
BENCHMARK_MAIN();
