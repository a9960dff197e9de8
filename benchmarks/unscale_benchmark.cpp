// Fused unscale + inf/NaN check (scaling/unscale.hpp) over 64 Mi floats (256 MiB), as one array
// and as 1000 arrays of mixed sizes totalling 64 Mi, against:
//   inplace_pass    an in-place load-multiply-store pass over the same bytes, no check (the limit)
//   naive_two_pass  an isfinite loop over everything, then a multiply loop
//   per_tensor      per array: an isfinite loop, then a multiply loop (a framework's CPU loop)
// and, for 64 Mi bfloat16 / float16 gradients, against an in-place pass over the 16-bit codes (the
// limit) and the per-element scalar rule.  fused_then_culprit is a skipped step's cost: the fused
// pass, then find_first_nonfinite (scaling/nonfinite.hpp) with the inf in the last element (the
// worst case: it reads everything again), and culprit_search the search alone; a step with
// finite gradients runs the fused pass only.
// fused_amax is the fused pass that also returns each array's amax.
// Arguments: threads (1, 2).  The multiplier alternates between 0.5 and 2 so that the values
// stay in range; bytes_per_second counts the array once (4 bytes per element).
//   build-scaling/benchmarks/unscale_benchmark --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <mixprec/convert.hpp>
#include <mixprec/scaling/nonfinite.hpp>
#include <mixprec/scaling/unscale.hpp>
#include <mixprec/types.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t total = std::size_t{64} << 20;

std::vector<float>& buffer() {
  static std::vector<float> data = [] {
    std::vector<float> v(total);
    std::mt19937 g(1);
    std::uniform_real_distribution<float> d(-1000.f, 1000.f);
    for (float& x : v) x = d(g);
    return v;
  }();
  return data;
}

// 1000 arrays of mixed sizes (from a few elements to ~0.5 Mi) covering the buffer exactly.
std::vector<mixprec::gradient_view> many_views() {
  std::vector<float>& data = buffer();
  std::mt19937 g(2);
  std::vector<double> weights(1000);
  double sum = 0;
  for (double& w : weights) sum += (w = std::pow(10.0, std::uniform_real_distribution<double>(0, 4)(g)));
  std::vector<mixprec::gradient_view> views;
  std::size_t offset = 0;
  for (std::size_t a = 0; a < weights.size(); ++a) {
    const std::size_t n = a + 1 == weights.size()
                              ? total - offset
                              : static_cast<std::size_t>(weights[a] / sum * static_cast<double>(total));
    views.emplace_back(data.data() + offset, n);
    offset += n;
  }
  return views;
}

std::vector<mixprec::gradient_view> views_for(bool many) {
  return many ? many_views() : std::vector<mixprec::gradient_view>{mixprec::gradient_view(buffer().data(), total)};
}

float multiplier(std::int64_t iteration) { return iteration % 2 == 0 ? 0.5f : 2.0f; }

// Times `pass(multiplier)` (which returns whether every value was finite) once per benchmark
// iteration; bytes_per_second counts `bytes` per pass.
template <class Pass>
void run_passes(benchmark::State& state, std::size_t bytes, Pass pass) {
  std::int64_t it = 0;
  for (auto _ : state) {
    float s = multiplier(it++);
    benchmark::DoNotOptimize(s);
    const bool finite = pass(s);
    benchmark::DoNotOptimize(finite);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
}

void multiply_range(float* g, std::size_t n, float s) {
  for (std::size_t i = 0; i < n; ++i) g[i] *= s;
}

void inplace_pass(benchmark::State& state, bool many) {
  const auto views = views_for(many);
  const auto threads = static_cast<unsigned>(state.range(0));
  run_passes(state, total * sizeof(float), [&](float s) {
    // the same bytes split into `threads` equal shares of the concatenation
    std::vector<std::thread> workers;
    const std::size_t share = total / threads;
    for (unsigned t = 0; t < threads; ++t) {
      const auto work = [&views, s, t, share, threads] {
        const std::size_t first = t * share, last = t + 1 == threads ? total : first + share;
        std::size_t offset = 0;
        for (const auto& v : views) {
          const std::size_t b = std::max(first, offset), e = std::min(last, offset + v.size());
          if (b < e) multiply_range(static_cast<float*>(v.data()) + (b - offset), e - b, s);
          offset += v.size();
        }
      };
      if (t + 1 == threads) {
        work();
      } else {
        workers.emplace_back(work);
      }
    }
    for (auto& w : workers) w.join();
    return true;
  });
}

void fused(benchmark::State& state, bool many) {
  const auto views = views_for(many);
  mixprec::unscale_options options;
  options.threads = static_cast<unsigned>(state.range(0));
  run_passes(state, total * sizeof(float),
             [&](float s) { return mixprec::unscale_and_check(views.data(), views.size(), s, options); });
}

void fused_amax(benchmark::State& state, bool many) {
  const auto views = views_for(many);
  std::vector<float> amax(views.size());
  mixprec::unscale_options options;
  options.threads = static_cast<unsigned>(state.range(0));
  run_passes(state, total * sizeof(float),
             [&](float s) { return mixprec::unscale_and_check(views.data(), views.size(), s, amax.data(), options); });
}

void fused_then_culprit(benchmark::State& state, bool many) {
  const auto views = views_for(many);
  float& last = buffer().back();
  const float kept = last;
  last = std::numeric_limits<float>::infinity();
  mixprec::unscale_options options;
  options.threads = static_cast<unsigned>(state.range(0));
  run_passes(state, total * sizeof(float), [&](float s) {
    const bool finite = mixprec::unscale_and_check(views.data(), views.size(), s, options);
    const auto culprit = mixprec::find_first_nonfinite(views.data(), views.size());
    benchmark::DoNotOptimize(culprit);
    return finite;
  });
  last = kept;
}

// The search alone, with the inf in the last element: what a skipped step adds.
void culprit_search(benchmark::State& state, bool many) {
  const auto views = views_for(many);
  float& last = buffer().back();
  const float kept = last;
  last = std::numeric_limits<float>::infinity();
  run_passes(state, total * sizeof(float), [&](float) {
    const auto culprit = mixprec::find_first_nonfinite(views.data(), views.size());
    benchmark::DoNotOptimize(culprit);
    return !culprit.has_value();
  });
  last = kept;
}

bool two_pass(float* g, std::size_t n, float s) {
  bool finite = true;
  for (std::size_t i = 0; i < n; ++i) finite &= std::isfinite(g[i]);
  multiply_range(g, n, s);
  return finite;
}

void naive_two_pass(benchmark::State& state, bool many) {
  const auto views = views_for(many);
  run_passes(state, total * sizeof(float), [&](float s) {
    bool finite = true;
    for (const auto& v : views) {
      for (std::size_t i = 0; i < v.size(); ++i) finite &= std::isfinite(static_cast<float*>(v.data())[i]);
    }
    for (const auto& v : views) multiply_range(static_cast<float*>(v.data()), v.size(), s);
    return finite;
  });
}

void per_tensor(benchmark::State& state, bool many) {
  const auto views = views_for(many);
  run_passes(state, total * sizeof(float), [&](float s) {
    bool finite = true;
    for (const auto& v : views) finite &= two_pass(static_cast<float*>(v.data()), v.size(), s);
    return finite;
  });
}

// 16-bit gradients (bfloat16, float16): 64 Mi of them, one array.
template <class T>
std::vector<T>& narrow_buffer() {
  static std::vector<T> data = [] {
    std::vector<T> v(total);
    std::mt19937 g(3);
    std::uniform_real_distribution<float> d(-1000.f, 1000.f);
    for (T& x : v) x = mixprec::convert<T>(d(g));
    return v;
  }();
  return data;
}

// The limit for 16-bit data: load and store every code in place (a sign flip), no conversion.
template <class T>
void inplace_pass_16bit(benchmark::State& state) {
  auto* codes = reinterpret_cast<std::uint16_t*>(narrow_buffer<T>().data());
  run_passes(state, total * sizeof(T), [&](float) {
    for (std::size_t i = 0; i < total; ++i) codes[i] ^= 0x8000u;
    return true;
  });
}

template <class T>
void fused_16bit(benchmark::State& state) {
  auto& data = narrow_buffer<T>();
  run_passes(state, total * sizeof(T), [&](float s) { return mixprec::unscale_and_check(data.data(), total, s); });
}

// The rule one element at a time (widen, check, multiply, convert back): the loop a user writes
// with the scalar conversions.
template <class T>
void scalar_rule_16bit(benchmark::State& state) {
  auto& data = narrow_buffer<T>();
  run_passes(state, total * sizeof(T), [&](float s) {
    bool finite = true;
    for (T& g : data) {
      const auto x = static_cast<float>(g);
      finite &= std::isfinite(x);
      g = mixprec::convert<T>(x * s);
    }
    return finite;
  });
}

}  // namespace

BENCHMARK_TEMPLATE(inplace_pass_16bit, mixprec::bfloat16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(fused_16bit, mixprec::bfloat16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(scalar_rule_16bit, mixprec::bfloat16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(inplace_pass_16bit, mixprec::float16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(fused_16bit, mixprec::float16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(scalar_rule_16bit, mixprec::float16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(inplace_pass, one_array, false)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fused, one_array, false)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fused_amax, one_array, false)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fused_then_culprit, one_array, false)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(culprit_search, one_array, false)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(naive_two_pass, one_array, false)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(inplace_pass, 1000_arrays, true)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fused, 1000_arrays, true)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fused_amax, 1000_arrays, true)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(fused_then_culprit, 1000_arrays, true)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(culprit_search, 1000_arrays, true)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(naive_two_pass, 1000_arrays, true)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(per_tensor, 1000_arrays, true)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
