// float -> packed int4, int2, int1 (pack_n) and back (unpack_n) against memcpy of the same
// traffic (4.5 bytes per element for int4: the floats read and the nibbles written, or the
// reverse; 4.25 for int2, 4.125 for int1), as bulk_convert_benchmark counts it.  Inputs: Gaussian
// floats scaled by 4, so that every int4 value occurs.  64 Mi elements (in memory) and 256 Ki (in
// cache), 1 and 2 threads.
//   intn_pack_benchmark --benchmark_filter='/67108864/1$'
#include <benchmark/benchmark.h>
#include <mixprec/bulk/intn_pack.hpp>

#include "benchmark_support.hpp"

#include <cstring>
#include <vector>

namespace {

using namespace mixprec;

// Bytes: 4 of float, 1/2 of int4 (1/4 of int2, 1/8 of int1).
template <class T>
constexpr double traffic_per_element = 4.0 + T::bits_per_value / 8.0;

template <class T>
void report(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(state.iterations()) *
                                                    static_cast<double>(elements(state)) * traffic_per_element<T>));
}

std::vector<float> scaled_input(std::size_t n) {
  std::vector<float> in = gaussian_input(n);
  for (float& x : in) x *= 4.0f;
  return in;
}

template <class T>
void memcpy_same_traffic(benchmark::State& state) {
  copy_same_traffic(state, static_cast<std::size_t>(static_cast<double>(elements(state)) * traffic_per_element<T>));
  report<T>(state);
}

template <class T, rounding R>
void pack(benchmark::State& state) {
  const std::size_t n = elements(state);
  const std::vector<float> in = scaled_input(n);
  std::vector<unsigned char> out(packed_bytes<T>(n));
  set_bulk_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    pack_n<T>(in.data(), n, out.data(), R);
    benchmark::ClobberMemory();
  }
  set_bulk_threads(1);
  report<T>(state);
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
  report<int4>(state);
}

template <class T>
void unpack(benchmark::State& state) {
  const std::size_t n = elements(state);
  const std::vector<float> in = scaled_input(n);
  std::vector<unsigned char> packed(packed_bytes<T>(n));
  pack_n<T>(in.data(), n, packed.data());
  std::vector<float> out(n);
  set_bulk_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    unpack_n<T>(packed.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  set_bulk_threads(1);
  report<T>(state);
}

void sizes_and_threads(benchmark::internal::Benchmark* b) {
  b->Args({1 << 18, 1});
  for (std::int64_t threads : {1, 2}) b->Args({1 << 26, threads});
  b->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK_TEMPLATE(memcpy_same_traffic, int4)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(pack, int4, rounding::nearest_even)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(pack, int4, rounding::nearest_away)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(pack, int4, rounding::to_odd)->Apply(sizes_and_threads);
BENCHMARK(pack_int4_stochastic)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(unpack, int4)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(memcpy_same_traffic, int2)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(pack, int2, rounding::nearest_even)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(unpack, int2)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(memcpy_same_traffic, int1)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(pack, int1, rounding::nearest_even)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(unpack, int1)->Apply(sizes_and_threads);
BENCHMARK_MAIN();
