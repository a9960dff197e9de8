// Test helpers for gradient arrays of float: raw bits, and finite floats of every magnitude.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Finite floats of every magnitude, both signs, zeros and subnormals included (random bit
// patterns, infinities and NaNs redrawn).
inline std::vector<float> finite_gradients(std::size_t n, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::vector<float> out(n);
  for (auto& x : out) {
    do {
      const auto bits = static_cast<std::uint32_t>(generator());
      std::memcpy(&x, &bits, sizeof x);
    } while (!std::isfinite(x));
  }
  return out;
}
