// What the bulk benchmarks share: their input and the physical limit they compare against.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

// n Gaussian floats (σ = 1, std::mt19937 seed 1), generated once and grown on demand.
inline const std::vector<float>& gaussian_input(std::size_t n) {
  static std::vector<float> data;
  if (data.size() < n) {
    data.resize(n);
    std::mt19937 generator(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& x : data) x = normal(generator);
  }
  return data;
}

// The size argument, range(0).
inline std::size_t elements(const benchmark::State& state) { return static_cast<std::size_t>(state.range(0)); }

// The physical limit of a pass over memory: memcpy of the same traffic (half of `traffic_bytes`
// copied, so that the bytes read plus written are equal), split over state.range(1) threads as
// the pass under test is.
inline void copy_same_traffic(benchmark::State& state, std::size_t traffic_bytes) {
  const std::size_t bytes = traffic_bytes / 2;
  std::vector<char> from(bytes, 1), to(bytes, 2);
  const auto threads = static_cast<std::size_t>(state.range(1));
  for (auto _ : state) {
    std::vector<std::thread> helpers;
    const std::size_t part = bytes / threads;
    for (std::size_t t = 1; t < threads; ++t) {
      helpers.emplace_back([&, t] {
        std::memcpy(to.data() + t * part, from.data() + t * part, t + 1 == threads ? bytes - t * part : part);
      });
    }
    std::memcpy(to.data(), from.data(), threads == 1 ? bytes : part);
    for (auto& h : helpers) h.join();
    benchmark::ClobberMemory();
  }
}
