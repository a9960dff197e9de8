// Test helpers for gradient arrays of float: raw bits, finite floats of every magnitude, and the
// loss scales the unscale tests use.
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

// The scales training meets: powers of two across the range, and arbitrary values whose
// reciprocal is inexact (down to the smallest subnormal, whose reciprocal overflows float).
inline constexpr float test_scales[] = {65536.f, 1.f,     0.5f,     0x1p100f, 0x1p-100f,
                                        3.f,     1000.1f, 7.3e-12f, 1.7e38f,  1e-45f};
