// Bulk conversion throughput against the memory limit and the peers, in one run.
//
// Every benchmark reports bytes/s counting the bytes read plus the bytes written, so that
// memcpy of (input + output) / 2 bytes — the same traffic — is the physical limit beside it.
// Sizes: 256 Ki elements (in cache) and 64 Mi (in memory); mixprec at 1 and 2 threads.
//   bulk_convert_benchmark --benchmark_format=json | python3 scripts/bulk_benchmark_table.py
#include <Eigen/Core>
#include <benchmark/benchmark.h>
#include <fp16.h>
#include <immintrin.h>
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/bulk/quantize.hpp>
#include <mixprec/types.hpp>

#include "benchmark_support.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

using namespace mixprec;

template <class T>
void report(benchmark::State& state, std::size_t bytes_per_element) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(elements(state) * bytes_per_element));
  state.counters["elements"] = static_cast<double>(elements(state));
  (void)sizeof(T);
}

// memcpy of the same traffic, on range(1) threads.
template <std::size_t BytesPerElement>
void memcpy_same_bytes(benchmark::State& state) {
  copy_same_traffic(state, elements(state) * BytesPerElement);
  report<char>(state, BytesPerElement);
}

// Times `pass(in, n, out)` (one mixprec call over the whole array) on range(1) threads; `in`
// holds Gaussian floats, or their codes in From when From is a mixprec type.
template <class From, class To, class Pass>
void time_mixprec_pass(benchmark::State& state, Pass pass) {
  const std::size_t n = elements(state);
  std::vector<From> in(n);
  convert_n(gaussian_input(n).data(), n, in.data());
  std::vector<To> out(n);
  set_bulk_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    pass(in.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  set_bulk_threads(1);
  report<To>(state, sizeof(From) + sizeof(To));
}

template <class T>
void mixprec_encode(benchmark::State& state) {
  time_mixprec_pass<float, T>(state, [](const float* in, std::size_t n, T* out) { convert_n(in, n, out); });
}

// float -> T for the unsigned scale formats (ue4m3): |Gaussian| inputs, as their scales are.
template <class T>
void mixprec_encode_magnitudes(benchmark::State& state) {
  const std::size_t n = elements(state);
  std::vector<float> in = gaussian_input(n);
  for (float& v : in) v = std::fabs(v);
  std::vector<T> out(n);
  set_bulk_threads(static_cast<unsigned>(state.range(1)));
  for (auto _ : state) {
    convert_n(in.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  set_bulk_threads(1);
  report<T>(state, sizeof(float) + sizeof(T));
}

template <class T>
void mixprec_decode(benchmark::State& state) {
  time_mixprec_pass<T, float>(state, [](const T* in, std::size_t n, float* out) { convert_n(in, n, out); });
}

// The portable path: the kernels over plain arrays, as the compiler vectorises them for
// baseline x86-64 (SSE2), i.e. what a CPU without AVX2 or a non-x86 build gets.
template <class T>
void portable_path_encode(benchmark::State& state) {
  force_simd_path(simd_path::portable);
  mixprec_encode<T>(state);
  reset_simd_path();
}

// The scalar conversion in a plain loop (what convert_n replaces).
template <class T>
void scalar_loop_encode(benchmark::State& state) {
  const std::size_t n = elements(state);
  const std::vector<float>& in = gaussian_input(n);
  std::vector<T> out(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) out[i] = T(in[i]);
    benchmark::ClobberMemory();
  }
  report<T>(state, 4 + sizeof(T));
}

// The fp8 recipe's quantise step: q = convert(x * scale) and amax of x in one pass.
template <class T>
void fused_quantize(benchmark::State& state) {
  time_mixprec_pass<float, T>(
      state, [](const float* in, std::size_t n, T* out) { benchmark::DoNotOptimize(quantize_n(in, n, out, 64.0f)); });
}

// convert_stochastic_n: Philox-4x32-10 bits per element and stochastic rounding.
template <class T>
void mixprec_stochastic(benchmark::State& state) {
  time_mixprec_pass<float, T>(state,
                              [](const float* in, std::size_t n, T* out) { convert_stochastic_n(in, n, out, 2026); });
}

// Eigen's conversion loop (Array::cast), one thread.
template <class E>
void eigen_encode(benchmark::State& state) {
  const std::vector<float>& in = gaussian_input(elements(state));
  std::vector<E> out(elements(state));
  const auto n = static_cast<Eigen::Index>(elements(state));
  for (auto _ : state) {
    Eigen::Map<Eigen::Array<E, Eigen::Dynamic, 1>>(out.data(), n) =
        Eigen::Map<const Eigen::ArrayXf>(in.data(), n).template cast<E>();
    benchmark::ClobberMemory();
  }
  report<E>(state, 4 + sizeof(E));
}

template <class E>
void eigen_decode(benchmark::State& state) {
  const auto n = static_cast<Eigen::Index>(elements(state));
  std::vector<E> in(elements(state));
  Eigen::Map<Eigen::Array<E, Eigen::Dynamic, 1>>(in.data(), n) =
      Eigen::Map<const Eigen::ArrayXf>(gaussian_input(elements(state)).data(), n).template cast<E>();
  std::vector<float> out(elements(state));
  for (auto _ : state) {
    Eigen::Map<Eigen::ArrayXf>(out.data(), n) =
        Eigen::Map<const Eigen::Array<E, Eigen::Dynamic, 1>>(in.data(), n).template cast<float>();
    benchmark::ClobberMemory();
  }
  report<E>(state, 4 + sizeof(E));
}

// The FP16 library's conversion loop (float16 only), one thread.
void fp16_library_encode(benchmark::State& state) {
  const std::vector<float>& in = gaussian_input(elements(state));
  std::vector<std::uint16_t> out(elements(state));
  for (auto _ : state) {
    for (std::size_t i = 0; i < elements(state); ++i) out[i] = fp16_ieee_from_fp32_value(in[i]);
    benchmark::ClobberMemory();
  }
  report<std::uint16_t>(state, 6);
}

void fp16_library_decode(benchmark::State& state) {
  std::vector<std::uint16_t> in(elements(state));
  for (std::size_t i = 0; i < elements(state); ++i)
    in[i] = fp16_ieee_from_fp32_value(gaussian_input(elements(state))[i]);
  std::vector<float> out(elements(state));
  for (auto _ : state) {
    for (std::size_t i = 0; i < elements(state); ++i) out[i] = fp16_ieee_to_fp32_value(in[i]);
    benchmark::ClobberMemory();
  }
  report<std::uint16_t>(state, 6);
}

// GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized when inlined (see bulk/x86/avx512.hpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The bare hardware instruction in a loop with plain stores (not exact at the edges: this is
// the speed the instruction alone allows).
__attribute__((target("avx512f,avx512bf16,avx512vl"))) void instruction_loop_bf16(benchmark::State& state) {
  if (!simd_path_supported(simd_path::avx512_bf16)) return state.SkipWithError("no AVX-512 BF16 on this CPU");
  const std::vector<float>& in = gaussian_input(elements(state));
  std::vector<std::uint16_t> out(elements(state));
  for (auto _ : state) {
    for (std::size_t i = 0; i + 16 <= elements(state); i += 16) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.data() + i),
                          (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(in.data() + i)));
    }
    benchmark::ClobberMemory();
  }
  report<std::uint16_t>(state, 6);
}

__attribute__((target("avx512f"))) void instruction_loop_fp16(benchmark::State& state) {
  if (!simd_path_supported(simd_path::avx512)) return state.SkipWithError("no AVX-512 on this CPU");
  const std::vector<float>& in = gaussian_input(elements(state));
  std::vector<std::uint16_t> out(elements(state));
  for (auto _ : state) {
    for (std::size_t i = 0; i + 16 <= elements(state); i += 16) {
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(out.data() + i),
          _mm512_cvtps_ph(_mm512_loadu_ps(in.data() + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    benchmark::ClobberMemory();
  }
  report<std::uint16_t>(state, 6);
}

#pragma GCC diagnostic pop

constexpr std::int64_t in_cache = 1 << 18, in_memory = 1 << 26;

// Two threads only for the large size: set_bulk_threads splits a conversion only when each thread
// gets bulk_elements_per_thread (2^20) elements, so at 256 Ki both would be one-thread runs.
void sizes_and_threads(benchmark::internal::Benchmark* b) {
  b->Args({in_cache, 1});
  for (std::int64_t threads : {1, 2}) b->Args({in_memory, threads});
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}
void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t n : {in_cache, in_memory}) b->Args({n, 1});
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_TEMPLATE(memcpy_same_bytes, 6)->Apply(sizes_and_threads);  // float <-> 16-bit
BENCHMARK_TEMPLATE(memcpy_same_bytes, 5)->Apply(sizes_and_threads);  // float <-> 8-bit
BENCHMARK_TEMPLATE(memcpy_same_bytes, 8)->Apply(sizes_and_threads);  // float <-> tfloat32
BENCHMARK_TEMPLATE(mixprec_encode, bfloat16)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_encode, float16)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_encode, float8_e4m3fn)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_encode, float8_e5m2)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_encode, float8_e4m3)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_encode, float8_e3m4)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_encode, float8_e4m3b11fnuz)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_encode_magnitudes, float8_ue4m3)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_encode, float8_ue4m3)->Apply(sizes_and_threads);  // both signs: half out of domain
BENCHMARK_TEMPLATE(mixprec_encode, tfloat32)->Apply(sizes_and_threads);      // integer loop, 4 + 4 bytes
BENCHMARK_TEMPLATE(mixprec_decode, bfloat16)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_decode, float16)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_decode, float8_e4m3fn)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_decode, float8_e5m2)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_decode, float8_e4m3)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_decode, float8_e3m4)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_decode, float8_e4m3b11fnuz)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_decode, tfloat32)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(fused_quantize, float8_e4m3fn)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_stochastic, bfloat16)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(mixprec_stochastic, float8_e4m3fn)->Apply(sizes_and_threads);
BENCHMARK_TEMPLATE(portable_path_encode, bfloat16)->Apply(sizes);
BENCHMARK_TEMPLATE(portable_path_encode, float16)->Apply(sizes);
BENCHMARK_TEMPLATE(portable_path_encode, float8_e4m3fn)->Apply(sizes);
BENCHMARK_TEMPLATE(scalar_loop_encode, bfloat16)->Apply(sizes);
BENCHMARK_TEMPLATE(scalar_loop_encode, float16)->Apply(sizes);
BENCHMARK_TEMPLATE(scalar_loop_encode, float8_e4m3fn)->Apply(sizes);
BENCHMARK_TEMPLATE(eigen_encode, Eigen::bfloat16)->Apply(sizes);
BENCHMARK_TEMPLATE(eigen_encode, Eigen::half)->Apply(sizes);
BENCHMARK_TEMPLATE(eigen_decode, Eigen::bfloat16)->Apply(sizes);
BENCHMARK_TEMPLATE(eigen_decode, Eigen::half)->Apply(sizes);
BENCHMARK(fp16_library_encode)->Apply(sizes);
BENCHMARK(fp16_library_decode)->Apply(sizes);
BENCHMARK(instruction_loop_bf16)->Apply(sizes);
BENCHMARK(instruction_loop_fp16)->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
