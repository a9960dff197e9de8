// What the CPFloat-parity rounding options cost in bulk (issue 17, item 2): float -> float8_e4m3fn
// and float -> bfloat16 at 64 Mi Gaussian elements, one thread, under nearest-even (the baseline),
// nearest_zero, subnormals::flush, stochastic rounding with each rule, and bit-flip fault
// injection over the codes, beside memcpy of the same traffic (bytes read + written).
//   rounding_options_benchmark --benchmark_format=json
#include <benchmark/benchmark.h>
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/fault_injection.hpp>
#include <mixprec/types.hpp>

#include "benchmark_support.hpp"

#include <vector>

namespace {

using namespace mixprec;

void report(benchmark::State& state, std::size_t bytes_per_element) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(elements(state) * bytes_per_element));
}

template <std::size_t BytesPerElement>
void memcpy_same_bytes(benchmark::State& state) {
  copy_same_traffic(state, elements(state) * BytesPerElement);
  report(state, BytesPerElement);
}

// Times pass(in, n, out) over Gaussian floats into T.
template <class T, class Pass>
void time_encode(benchmark::State& state, Pass pass) {
  const std::size_t n = elements(state);
  const std::vector<float>& in = gaussian_input(n);
  std::vector<T> out(n);
  for (auto _ : state) {
    pass(in.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  report(state, sizeof(float) + sizeof(T));
}

template <class T>
void nearest_even(benchmark::State& state) {
  time_encode<T>(state, [](const float* in, std::size_t n, T* out) { convert_n(in, n, out); });
}
template <class T>
void nearest_zero(benchmark::State& state) {
  time_encode<T>(state, [](const float* in, std::size_t n, T* out) { convert_n(in, n, out, rounding::nearest_zero); });
}
template <class T>
void nearest_even_flush(benchmark::State& state) {
  time_encode<T>(state, [](const float* in, std::size_t n, T* out) {
    convert_n(in, n, out, rounding::nearest_even, overflow::non_finite, subnormals::flush);
  });
}
template <class T>
void stochastic_proportional(benchmark::State& state) {
  time_encode<T>(state, [](const float* in, std::size_t n, T* out) { convert_stochastic_n(in, n, out, 7); });
}
template <class T>
void stochastic_equal(benchmark::State& state) {
  time_encode<T>(state, [](const float* in, std::size_t n, T* out) {
    convert_stochastic_n(in, n, out, 7, overflow::non_finite, stochastic_rule::equal_probability);
  });
}
// In place over the codes: one read and one write of each code.
template <class T>
void bit_flips_one_in_a_thousand(benchmark::State& state) {
  const std::size_t n = elements(state);
  std::vector<T> codes(n);
  convert_n(gaussian_input(n).data(), n, codes.data());
  for (auto _ : state) {
    inject_bit_flips_n(codes.data(), n, bit_flips{1e-3, flip_bits::any, 11});
    benchmark::ClobberMemory();
  }
  report(state, 2 * sizeof(T));
}

void in_memory(benchmark::internal::Benchmark* b) {
  b->Args({1 << 26, 1})->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK_TEMPLATE(memcpy_same_bytes, 5)->Apply(in_memory);  // float -> 8-bit
BENCHMARK_TEMPLATE(nearest_even, float8_e4m3fn)->Apply(in_memory);
BENCHMARK_TEMPLATE(nearest_zero, float8_e4m3fn)->Apply(in_memory);
BENCHMARK_TEMPLATE(nearest_even_flush, float8_e4m3fn)->Apply(in_memory);
BENCHMARK_TEMPLATE(stochastic_proportional, float8_e4m3fn)->Apply(in_memory);
BENCHMARK_TEMPLATE(stochastic_equal, float8_e4m3fn)->Apply(in_memory);
BENCHMARK_TEMPLATE(memcpy_same_bytes, 6)->Apply(in_memory);  // float -> 16-bit
BENCHMARK_TEMPLATE(nearest_even, bfloat16)->Apply(in_memory);
BENCHMARK_TEMPLATE(nearest_zero, bfloat16)->Apply(in_memory);
BENCHMARK_TEMPLATE(nearest_even_flush, bfloat16)->Apply(in_memory);
BENCHMARK_TEMPLATE(memcpy_same_bytes, 2)->Apply(in_memory);  // 8-bit codes in place
BENCHMARK_TEMPLATE(bit_flips_one_in_a_thousand, float8_e4m3fn)->Apply(in_memory);

BENCHMARK_MAIN();
