// The values whose conversion error format_comparison measures: what a training run stores in
// low precision.  Each set is generated in double, the reference the formats are compared with.
//
//   weights      Gaussian at four scales: σ = 1 (unit-variance activations), 0.02 (GPT-2's and
//                BERT's initialisation), 1e-3 and 1e-5 (small or decayed weights)
//   pixels       the UCI digits' 8x8 images, as stored (integers 0..16) and as a network sees
//                them (divided by 16)
//   gradients    heavy-tailed values spread over many decades: Student's t with 3 degrees of
//                freedom, and a log-normal magnitude with a random sign
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../common/digits.hpp"
#include "../common/random.hpp"

namespace mixprec_example {

struct sample_set {
  std::string name;
  std::vector<double> values;
};

inline std::vector<double> gaussian_values(std::size_t count, double sigma, reproducible_random& random) {
  std::vector<double> values(count);
  for (double& v : values) v = sigma * random.normal();
  return values;
}

// Student's t with `dof` degrees of freedom: Z / sqrt(V / dof), with Z standard normal and V a
// chi-square variable (a sum of dof squared standard normals).  Its tails fall like |t|^-(dof+1):
// with dof = 3, 0.2% of the values lie beyond 10 times the scale (for a Gaussian, 1.5e-23).
inline std::vector<double> student_t_values(std::size_t count, int dof, double scale, reproducible_random& random) {
  std::vector<double> values(count);
  for (double& v : values) {
    double chi_square = 0;
    for (int k = 0; k < dof; ++k) {
      const double z = random.normal();
      chi_square += z * z;
    }
    v = scale * random.normal() / std::sqrt(chi_square / dof);
  }
  return values;
}

// |v| = 10^(log10_median + decades_per_sigma * Z), with a random sign: the magnitudes spread
// evenly over decades, as the gradients of a deep network's layers do.
inline std::vector<double> log_normal_values(std::size_t count, double log10_median, double decades_per_sigma,
                                             reproducible_random& random) {
  std::vector<double> values(count);
  for (double& v : values) {
    const double magnitude = std::pow(10.0, log10_median + decades_per_sigma * random.normal());
    v = random.uniform() < 0.5 ? -magnitude : magnitude;
  }
  return values;
}

// `count` values per generated set; the pixel sets hold every pixel of the data set.
inline std::vector<sample_set> measurement_samples(std::size_t count, const digits_data& digits, std::uint64_t seed) {
  reproducible_random random(seed);
  std::vector<sample_set> sets;
  sets.push_back({"weights σ=1", gaussian_values(count, 1.0, random)});
  sets.push_back({"weights σ=0.02", gaussian_values(count, 0.02, random)});
  sets.push_back({"weights σ=1e-3", gaussian_values(count, 1e-3, random)});
  sets.push_back({"weights σ=1e-5", gaussian_values(count, 1e-5, random)});
  std::vector<double> pixels(digits.pixels.begin(), digits.pixels.end());
  sets.push_back({"digits pixels", pixels});
  for (double& p : pixels) p /= digits_data::max_pixel;
  sets.push_back({"digits pixels / 16", pixels});
  sets.push_back({"gradients, Student t", student_t_values(count, 3, 1e-4, random)});
  sets.push_back({"gradients, log-normal", log_normal_values(count, -6.0, 2.0, random)});
  return sets;
}

}  // namespace mixprec_example
