// Random numbers for the examples that come out the same on every platform.
//
// The engines of <random> are specified exactly, but its distributions are not:
// std::normal_distribution and std::shuffle draw different values from the same engine under
// libstdc++ and libc++.  The examples print measured figures that the README quotes, so they use
// this small generator, whose every step is written here.
//
//   reproducible_random random(seed);
//   random.uniform();      // [0, 1)
//   random.normal();       // mean 0, standard deviation 1
//   random.below(n);       // an integer in [0, n)
//   random.shuffle(v);     // a uniformly random permutation of v
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mixprec_example {

class reproducible_random {
 public:
  explicit reproducible_random(std::uint64_t seed) noexcept : state_(seed) {}

  // SplitMix64 (G. Steele, D. Lea, C. Flood, "Fast splittable pseudorandom number generators",
  // OOPSLA 2014), with the constants of S. Vigna's reference splitmix64.c.  It passes BigCrush
  // and needs one 64-bit word of state.
  std::uint64_t next() noexcept {
    state_ += 0x9E3779B97F4A7C15u;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
  }

  // The top 53 bits as a fraction: every double k * 2^-53 in [0, 1) is equally likely.
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1p-53; }

  // Uniform in [0, n) without modulo bias: draws that fall in the incomplete last copy of
  // [0, n) inside [0, 2^64) are rejected.  n must be at least 1.
  std::uint64_t below(std::uint64_t n) noexcept {
    const std::uint64_t rejected_below = (std::uint64_t{0} - n) % n;  // 2^64 mod n
    std::uint64_t draw = next();
    while (draw < rejected_below) draw = next();
    return draw % n;
  }

  // Box-Muller: sqrt(-2 ln u1) cos(2 pi u2) is standard normal for independent uniform u1, u2.
  // u1 is taken in (0, 1] so that the logarithm is finite.
  double normal() noexcept {
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    constexpr double two_pi = 6.283185307179586476925;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2);
  }

  // Fisher-Yates: position i takes a uniformly chosen element of those not yet placed.
  template <class T>
  void shuffle(std::vector<T>& values) noexcept {
    for (std::size_t i = values.size(); i > 1; --i) {
      const auto j = static_cast<std::size_t>(below(i));
      std::swap(values[i - 1], values[j]);
    }
  }

 private:
  std::uint64_t state_;
};

}  // namespace mixprec_example
