// mixprec::gemm against its peers and the physical limit (docs/performance.md, "Matrix product").
//
//   mixprec_gemm<T>          C = A * B, A and B of type T, float C, the best path of this CPU
//   mixprec_gemm_on_path<T>  the same on one forced path (n = 1024)
//   fma_loop / vdpbf16ps_loop  24 independent chains of the bare instruction: this core's peak
//   eigen_gemm<float>, eigen_gemm<Eigen::bfloat16>, openblas_sgemm, onednn_bf16_matmul
//                            the peers, in gemm_peers/ (each optional; see peers.cmake)
//
// Every benchmark reports FLOP/s = 2 n^3 per product; args are (n, threads).
#include <mixprec/bulk/simd_path.hpp>
#include <mixprec/gemm/gemm.hpp>
#include <mixprec/types.hpp>

#include <benchmark/benchmark.h>

#include <vector>

#include "peer_support.hpp"

#if MIXPREC_X86_SIMD
#include <immintrin.h>
#endif

namespace {

template <class T>
std::vector<T> operand(std::size_t n, std::uint32_t seed) {
  const std::vector<float> values = gemm_bench::random_matrix(n, seed);
  std::vector<T> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values[i]);
  return out;
}

template <class T>
void run_gemm(benchmark::State& state, std::size_t n, unsigned threads, mixprec::gemm_path path) {
  if (!mixprec::gemm_path_supported(path)) return state.SkipWithError("path not available on this CPU");
  const std::vector<T> A = operand<T>(n, 1), B = operand<T>(n, 2);
  std::vector<float> C(n * n);
  mixprec::gemm_options options;
  options.threads = threads;
  options.path = path;
  for (auto _ : state) {
    mixprec::gemm(mixprec::transpose::no, mixprec::transpose::no, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f,
                  C.data(), n, options);
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  gemm_bench::count_flops(state, n);
  state.SetLabel(mixprec::to_string(mixprec::resolve_gemm_path(options)));
}

template <class T>
void mixprec_gemm(benchmark::State& state) {
  run_gemm<T>(state, static_cast<std::size_t>(state.range(0)), static_cast<unsigned>(state.range(1)),
              mixprec::gemm_path::automatic);
}

template <class T>
void mixprec_gemm_on_path(benchmark::State& state) {
  run_gemm<T>(state, 1024, 1, static_cast<mixprec::gemm_path>(state.range(0)));
}

void every_path(benchmark::internal::Benchmark* b) {
  for (mixprec::gemm_path p : {mixprec::gemm_path::portable, mixprec::gemm_path::avx2, mixprec::gemm_path::avx512,
                               mixprec::gemm_path::avx512_bf16, mixprec::gemm_path::amx_bf16}) {
    b->Arg(static_cast<int>(p));
  }
}

BENCHMARK_TEMPLATE(mixprec_gemm, float)
    ->Apply(gemm_bench::sizes_and_threads)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(mixprec_gemm, mixprec::bfloat16)
    ->Apply(gemm_bench::sizes_and_threads)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(mixprec_gemm, mixprec::float16)
    ->Apply(gemm_bench::sizes_and_threads)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(mixprec_gemm, mixprec::float8_e4m3fn)
    ->Apply(gemm_bench::sizes_and_threads)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(mixprec_gemm, mixprec::float8_e5m2)
    ->Apply(gemm_bench::sizes_and_threads)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(mixprec_gemm_on_path, mixprec::bfloat16)
    ->Apply(every_path)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(mixprec_gemm_on_path, mixprec::float16)
    ->Apply(every_path)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(mixprec_gemm_on_path, mixprec::float8_e4m3fn)
    ->Apply(every_path)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#if MIXPREC_X86_SIMD
// 24 independent accumulators, enough to cover both instructions' latency on two pipes.
constexpr int chains = 24;
constexpr std::int64_t steps = 1 << 16;

__attribute__((target("avx512f"))) float fma_chains(std::int64_t count) {
  __m512 sum[chains];
  for (__m512& s : sum) s = _mm512_setzero_ps();
  __m512 a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(1e-8f);
  for (std::int64_t i = 0; i < count; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < chains; ++c) sum[c] = _mm512_fmadd_ps(a, b, sum[c]);
    __asm__ volatile("" : "+v"(a));  // keeps the loop from being folded
  }
  __m512 total = sum[0];
  for (int c = 1; c < chains; ++c) total = _mm512_add_ps(total, sum[c]);
  float lanes[16];
  _mm512_storeu_ps(lanes, total);
  return lanes[0];
}

__attribute__((target("avx512f,avx512bf16"))) float vdpbf16ps_chains(std::int64_t count) {
  __m512 sum[chains];
  for (__m512& s : sum) s = _mm512_setzero_ps();
  __m512i a = _mm512_set1_epi16(0x3F80), b = _mm512_set1_epi16(0x3200);  // bf16 1 and 2^-27
  for (std::int64_t i = 0; i < count; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < chains; ++c) sum[c] = _mm512_dpbf16_ps(sum[c], (__m512bh)a, (__m512bh)b);
    __asm__ volatile("" : "+v"(a));
  }
  __m512 total = sum[0];
  for (int c = 1; c < chains; ++c) total = _mm512_add_ps(total, sum[c]);
  float lanes[16];
  _mm512_storeu_ps(lanes, total);
  return lanes[0];
}

template <int FlopsPerInstruction, float (*Loop)(std::int64_t)>
void instruction_loop(benchmark::State& state, mixprec::simd_path needs) {
  if (!mixprec::simd_path_supported(needs)) return state.SkipWithError("instruction not available on this CPU");
  for (auto _ : state) benchmark::DoNotOptimize(Loop(steps));
  state.counters["FLOP/s"] = benchmark::Counter(static_cast<double>(steps) * chains * FlopsPerInstruction,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void fma_loop(benchmark::State& state) { instruction_loop<32, fma_chains>(state, mixprec::simd_path::avx512); }
void vdpbf16ps_loop(benchmark::State& state) {
  instruction_loop<64, vdpbf16ps_chains>(state, mixprec::simd_path::avx512_bf16);
}

BENCHMARK(fma_loop)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(vdpbf16ps_loop)->Threads(1)->Threads(2)->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();
