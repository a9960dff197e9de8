// Reproducible random test inputs.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

// n floats from N(0, sigma²), from std::mt19937 seeded with `seed`.
inline std::vector<float> gaussian(std::size_t n, float sigma, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> out(n);
  for (float& x : out) x = normal(generator);
  return out;
}
