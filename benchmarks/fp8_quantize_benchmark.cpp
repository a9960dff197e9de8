// Quantisation throughput of the fp8 recipes and the MX formats against the memory limit.
//
// Every benchmark reports bytes/s counting the bytes it must read plus write: per element 4
// (float) + 1 (fp8 code) for the per-tensor recipes; 4 + bits/8 plus one e8m0 scale per 32
// elements for MX.  memcpy_per_32<N> copies the same traffic (N bytes per 32 elements, half of it
// copied) on the same thread count: the physical limit.  64 Mi elements (a 8192 × 8192 matrix for
// MX) on 1 and 2 threads, and 256 Ki (in cache) on one.
// quantize_with_statistics against quantize_alone: the cost of TE's statistics fused in.
// The block-scaled quantisers of blockscale/ (issue 16, item 8), on the same matrices: fp8 blocks
// (TE's rule; 4 + 1 bytes per element and a float per 128, rounded to the 161 and 160 of the
// memcpy rows), NVFP4 (4 + 1/2 bytes per element and a ue4m3 scale per 16: 146 per 32) as its
// row-wise copy, and as its column-wise copy with the random Hadamard transform.
//   fp8_quantize_benchmark --benchmark_format=json | python3 scripts/bulk_benchmark_table.py
#include <benchmark/benchmark.h>
#include <mixprec/blockscale/fp8_block.hpp>
#include <mixprec/blockscale/nvfp4.hpp>
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/bulk/quantize.hpp>
#include <mixprec/matrix.hpp>
#include <mixprec/mx/quantize.hpp>
#include <mixprec/scaling/fp8/current_scaling.hpp>
#include <mixprec/scaling/fp8/delayed_scaler.hpp>
#include <mixprec/scaling/fp8/quantization_statistics.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "benchmark_support.hpp"

namespace {

using namespace mixprec;

// Bytes/s of the traffic, and the name of the memcpy benchmark with the same traffic, which
// scripts/bulk_benchmark_table.py divides by.
void report(benchmark::State& state, std::size_t traffic_per_32) {
  state.SetLabel("limit=memcpy_per_32<" + std::to_string(traffic_per_32) + ">");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(elements(state) / 32 * traffic_per_32));
}

template <std::size_t TrafficPer32>
void memcpy_per_32(benchmark::State& state) {
  copy_same_traffic(state, elements(state) / 32 * TrafficPer32);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(elements(state) / 32 * TrafficPer32));
}

// Runs pass() (one call over the whole input) with range(1) bulk threads.
template <class Pass>
void time_pass(benchmark::State& state, std::size_t traffic_per_32, Pass pass) {
  set_bulk_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    pass();
    benchmark::ClobberMemory();
  }
  set_bulk_threads(1);
  report(state, traffic_per_32);
}

// Delayed scaling's quantise: the fused scale, convert and amax of quantize_n, plus recording.
void delayed_quantize(benchmark::State& state) {
  const std::vector<float>& x = gaussian_input(elements(state));
  std::vector<float8_e4m3fn> q(elements(state));
  delayed_scaler scaler(delayed_scaling{}, fp8_pass::forward, 1);
  time_pass(state, 32 * 5, [&] { benchmark::DoNotOptimize(scaler.quantize(0, x.data(), elements(state), q.data())); });
}

// Current scaling's quantise: an amax pass, then the scaled conversion (the data is read twice).
void current_quantize(benchmark::State& state) {
  const std::vector<float>& x = gaussian_input(elements(state));
  std::vector<float8_e4m3fn> q(elements(state));
  const current_scaling recipe;
  time_pass(state, 32 * 5,
            [&] { benchmark::DoNotOptimize(recipe.quantize(fp8_pass::forward, x.data(), elements(state), q.data())); });
}

// The same quantise as delayed_quantize's quantize_n with TE's statistics of the tensor and of the
// quantisation, fused (scaling/fp8/quantization_statistics.hpp): the same traffic.
void quantize_with_statistics(benchmark::State& state) {
  const std::vector<float>& x = gaussian_input(elements(state));
  std::vector<float8_e4m3fn> q(elements(state));
  time_pass(state, 32 * 5, [&] {
    benchmark::DoNotOptimize(mixprec::quantize_with_statistics(x.data(), elements(state), q.data(), 64.0f));
  });
}

// quantize_n alone with the same scale: the baseline of the fused statistics.
void quantize_alone(benchmark::State& state) {
  const std::vector<float>& x = gaussian_input(elements(state));
  std::vector<float8_e4m3fn> q(elements(state));
  time_pass(state, 32 * 5, [&] { benchmark::DoNotOptimize(quantize_n(x.data(), elements(state), q.data(), 64.0f)); });
}

// The tensor's statistics alone (a read of the floats: 4 bytes per element).
void tensor_statistics_alone(benchmark::State& state) {
  const std::vector<float>& x = gaussian_input(elements(state));
  time_pass(state, 32 * 4, [&] { benchmark::DoNotOptimize(statistics_of(x.data(), elements(state))); });
}

constexpr std::size_t matrix_side(std::size_t n) { return n == (std::size_t{1} << 26) ? 8192 : 512; }

// The side × side matrix of gaussian_input's values with 64-byte aligned rows, as a mixprec::matrix
// (a training step's operands) holds them: a std::vector's large storage starts 16 bytes into a
// cache line, so that every vector load of a column-wise pass (32 rows a block) touched two lines.
const float* gaussian_matrix(std::size_t side) {
  static matrix a;
  if (a.rows() != side) {
    a = matrix(dtype::float32, side, side);
    std::copy_n(gaussian_input(side * side).data(), side * side, a.data<float>());
  }
  return a.data<float>();
}

template <class T>
constexpr std::size_t mx_traffic_per_32() {
  return 32 * 4 + mx_element<T>::block_bytes + 1;
}

template <class T, mx_axis Axis>
void mx_quantize_matrix(benchmark::State& state) {
  const std::size_t side = matrix_side(elements(state));
  const float* a = gaussian_matrix(side);
  mx_matrix<T> m(side, side, Axis);
  time_pass(state, mx_traffic_per_32<T>(), [&] { mx_quantize(a, side, m); });
}

template <class T>
void mx_dequantize_rows(benchmark::State& state) {
  const std::size_t side = matrix_side(elements(state));
  const mx_matrix<T> m = mx_quantize<T>(gaussian_input(side * side).data(), side, side, side, mx_axis::rows);
  std::vector<float> out(side * side);
  time_pass(state, mx_traffic_per_32<T>(), [&] { mx_dequantize(m, out.data(), side); });
}

template <blockscale::fp8_block_kind Kind>
void fp8_block_quantize_matrix(benchmark::State& state) {
  const std::size_t side = matrix_side(elements(state));
  const float* a = gaussian_matrix(side);
  blockscale::fp8_block_options o;
  o.kind = Kind;
  blockscale::fp8_block_matrix<float8_e4m3fn> m(side, side, Kind, o.rule);
  time_pass(state, Kind == blockscale::fp8_block_kind::row_1x128 ? 161 : 160,
            [&] { blockscale::fp8_block_quantize(a, side, m, o); });
}

// The NVFP4 copies TE makes: activations and gradients row-wise (1×16), weights in 16×16 tiles,
// the wgrad operands column-wise with the random Hadamard transform.
enum class nvfp4_copy { rowwise, rowwise_16x16, columnwise, columnwise_rht };

// Into a tensor that keeps its storage between calls (nvfp4_quantize's overload), as a training
// loop's tensors do; nvfp4_fresh_tensor below is the same with a new result per call.
template <nvfp4_copy Copy>
void nvfp4_quantize_matrix(benchmark::State& state) {
  const std::size_t side = matrix_side(elements(state));
  const float* a = gaussian_matrix(side);
  blockscale::nvfp4_options o;
  o.rowwise = Copy == nvfp4_copy::rowwise || Copy == nvfp4_copy::rowwise_16x16;
  o.columnwise = !o.rowwise;
  o.columnwise_rht.enabled = Copy == nvfp4_copy::columnwise_rht;
  if (Copy == nvfp4_copy::rowwise_16x16) o.tile = blockscale::nvfp4_tile::square_16;
  blockscale::nvfp4_tensor t;
  time_pass(state, 146, [&] { blockscale::nvfp4_quantize(a, side, side, side, t, o); });
}

void nvfp4_fresh_tensor(benchmark::State& state) {
  const std::size_t side = matrix_side(elements(state));
  const float* a = gaussian_matrix(side);
  time_pass(state, 146, [&] { benchmark::DoNotOptimize(blockscale::nvfp4_quantize(a, side, side, side)); });
}

constexpr std::int64_t in_cache = 1 << 18, in_memory = 1 << 26;

void sizes_and_threads(benchmark::internal::Benchmark* b) {
  b->Args({in_cache, 1});
  for (std::int64_t threads : {1, 2}) b->Args({in_memory, threads});
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_TEMPLATE(memcpy_per_32, 160)->Apply(sizes_and_threads);  // float -> fp8, per tensor
BENCHMARK_TEMPLATE(memcpy_per_32, 128)->Apply(sizes_and_threads);  // a read of floats
BENCHMARK_TEMPLATE(memcpy_per_32, 161)->Apply(sizes_and_threads);  // MXFP8
BENCHMARK_TEMPLATE(memcpy_per_32, 153)->Apply(sizes_and_threads);  // MXFP6
BENCHMARK_TEMPLATE(memcpy_per_32, 145)->Apply(sizes_and_threads);  // MXFP4
BENCHMARK_TEMPLATE(memcpy_per_32, 146)->Apply(sizes_and_threads);  // NVFP4
BENCHMARK(delayed_quantize)->Apply(sizes_and_threads);
BENCHMARK(current_quantize)->Apply(sizes_and_threads);
BENCHMARK(quantize_alone)->Apply(sizes_and_threads);
BENCHMARK(quantize_with_statistics)->Apply(sizes_and_threads);
BENCHMARK(tensor_statistics_alone)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mx_quantize_matrix, float8_e4m3fn, mx_axis::rows)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mx_quantize_matrix, float8_e5m2, mx_axis::rows)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mx_quantize_matrix, float6_e3m2fn, mx_axis::rows)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mx_quantize_matrix, float6_e2m3fn, mx_axis::rows)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mx_quantize_matrix, float4_e2m1fn, mx_axis::rows)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mx_quantize_matrix, float8_e4m3fn, mx_axis::columns)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mx_quantize_matrix, float4_e2m1fn, mx_axis::columns)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(fp8_block_quantize_matrix, blockscale::fp8_block_kind::row_1x128)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(fp8_block_quantize_matrix, blockscale::fp8_block_kind::tile_128x128)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(nvfp4_quantize_matrix, nvfp4_copy::rowwise)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(nvfp4_quantize_matrix, nvfp4_copy::rowwise_16x16)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(nvfp4_quantize_matrix, nvfp4_copy::columnwise)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(nvfp4_quantize_matrix, nvfp4_copy::columnwise_rht)->Apply(sizes_and_threads);
BENCHMARK(nvfp4_fresh_tensor)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mx_dequantize_rows, float8_e4m3fn)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mx_dequantize_rows, float4_e2m1fn)->Apply(sizes_and_threads);

}  // namespace

BENCHMARK_MAIN();
