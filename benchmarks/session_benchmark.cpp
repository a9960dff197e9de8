// The training-session layer (session/) against the calls it is made of, on 100 M float
// parameters (400 MB):
//   master_refresh_bf16    master_weights::refresh(): masters -> bfloat16 working copies
//   bare_convert_n_bf16    convert_n of the same arrays (the limit; target: refresh >= 0.9 of it)
//   train_step             precision_session::train_step (static loss scale 1: the unscale pass
//                          reads and checks every gradient), forward/backward/optimizer empty
//   bare_scaler_calls      the same loss_scaler calls written by hand (target: train_step within 1%)
// bytes_per_second counts the bytes each pass reads and writes.
//   build/s/benchmarks/session_benchmark --benchmark_min_time=0.1 --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/scaling/loss_scaler.hpp>
#include <mixprec/session/master_weights.hpp>
#include <mixprec/session/parse_recipe.hpp>
#include <mixprec/session/precision_session.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "benchmark_support.hpp"

namespace {

constexpr std::size_t parameters = 100'000'000;

const std::vector<float>& masters() {
  static const std::vector<float> m = [] {
    std::vector<float> v(parameters);
    const std::vector<float>& g = gaussian_input(std::size_t{1} << 20);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = g[i & ((std::size_t{1} << 20) - 1)];
    return v;
  }();
  return m;
}

void master_refresh_bf16(benchmark::State& state) {
  mixprec::master_weights weights{mixprec::dtype::bfloat16};
  weights.add(masters().data(), parameters);
  for (auto _ : state) {
    weights.refresh();
    benchmark::DoNotOptimize(weights.working<mixprec::bfloat16>(0));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(parameters * 6));
}
BENCHMARK(master_refresh_bf16)->Unit(benchmark::kMillisecond)->UseRealTime();

void bare_convert_n_bf16(benchmark::State& state) {
  std::vector<mixprec::bfloat16> out(parameters);
  for (auto _ : state) {
    mixprec::convert_n(masters().data(), parameters, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(parameters * 6));
}
BENCHMARK(bare_convert_n_bf16)->Unit(benchmark::kMillisecond)->UseRealTime();

std::vector<float>& gradients() {
  static std::vector<float> g(masters());
  return g;
}

void train_step(benchmark::State& state) {
  mixprec::precision_session amp{mixprec::parse_recipe("recipe=O3, static_scale=1")};
  const std::vector<mixprec::gradient_view> grads = {mixprec::gradient_view(gradients().data(), parameters)};
  for (auto _ : state) {
    const mixprec::step_result r = amp.train_step([] { return 1.0f; }, [](float) {}, grads, [] {});
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(parameters * 4));
}
BENCHMARK(train_step)->Unit(benchmark::kMillisecond)->UseRealTime();

void bare_scaler_calls(benchmark::State& state) {
  mixprec::loss_scaler<mixprec::static_scaling> scaler{mixprec::static_scaling{1.0f}};
  const std::vector<mixprec::gradient_view> grads = {mixprec::gradient_view(gradients().data(), parameters)};
  for (auto _ : state) {
    float scaled = scaler.scale(1.0f);
    benchmark::DoNotOptimize(scaled);
    scaler.unscale(grads);
    const bool stepped = scaler.step([] {});
    scaler.update();
    benchmark::DoNotOptimize(stepped);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(parameters * 4));
}
BENCHMARK(bare_scaler_calls)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
