// References for the gemm tests, sharing no code with the library's kernels:
//
//   same_order_sum   the documented summation order of each path, one element at a time with
//                    std::fma (docs/gemm.md, "Accumulation order"); the kernels must match it
//                    bit for bit
//   exact_dot        the exact dot product in double-double (products of floats are exact in
//                    double; Ogita, Rump & Oishi's Sum2 adds them), with its own error bound
//   error_bound      the documented bound |C_computed - C_exact| for a path, computed, not guessed
//
// Matrices are given as accessors: a(i, k), b(k, j) return the exact float value of op(A), op(B).
#pragma once

#include <mixprec/gemm/options.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace gemm_test {

enum class summation { sequential, pairs_swapped, amx_chunks };

// The order a path sums an element's products in, for operands exact in bfloat16 or not.
inline summation order_of(mixprec::gemm_path path, bool bf16_operands) {
  if (!bf16_operands) return summation::sequential;
  return path == mixprec::gemm_path::amx_bf16 || path == mixprec::gemm_path::amx_bf16_emulated
             ? summation::amx_chunks
             : summation::pairs_swapped;
}

// The float sum of products p(k), k < K, in a path's order.  p(k) is given as its two factors.
template <class Factors>
float same_order_sum(std::size_t K, summation order, Factors factors) {
  float sum = 0.0f;
  if (order == summation::sequential || order == summation::pairs_swapped) {
    for (std::size_t step = 0; step < K; ++step) {
      std::size_t k = step;
      if (order == summation::pairs_swapped && (step ^ 1u) < K) k = step ^ 1u;
      const auto f = factors(k);
      sum = std::fma(f.first, f.second, sum);
    }
    return sum;
  }
  for (std::size_t chunk = 0; chunk < K; chunk += 32) {  // TDPBF16PS: even and odd chains per 32 k
    float even = 0.0f, odd = 0.0f;
    for (std::size_t k = chunk; k < K && k < chunk + 32; ++k) {
      const auto f = factors(k);
      float& chain = k % 2 == 0 ? even : odd;
      chain = std::fma(f.first, f.second, chain);
    }
    const float pair_sum = even + odd;
    sum = sum + pair_sum;
  }
  return sum;
}

// The epilogue of gemm.hpp.
inline float epilogue(float factor, float sum, float beta, float old) {
  if (beta == 0.0f) return factor * sum;
  const float scaled_old = beta * old;
  return std::fma(factor, sum, scaled_old);
}

struct double_double {
  double hi = 0.0, lo = 0.0;
};

inline double_double two_sum(double a, double b) {
  const double s = a + b;
  const double bv = s - a;
  return {s, (a - (s - bv)) + (b - bv)};
}

inline double_double two_product(double a, double b) {
  const double p = a * b;
  return {p, std::fma(a, b, -p)};
}

// Sum of the products and of their magnitudes; |(hi + lo) - exact| <= error.
struct exact_dot {
  double_double sum;
  double magnitudes = 0.0;  // sum |a_k b_k|, rounded upward by a relative 2^-50 margin
  double error = 0.0;
};

template <class Factors>
exact_dot dot_in_double_double(std::size_t K, Factors factors) {
  exact_dot r;
  double s = 0.0, e = 0.0, magnitudes = 0.0;
  for (std::size_t k = 0; k < K; ++k) {
    const auto f = factors(k);
    const double p = static_cast<double>(f.first) * static_cast<double>(f.second);  // exact
    const double_double t = two_sum(s, p);
    s = t.hi;
    e += t.lo;
    magnitudes += std::fabs(p);
  }
  const double_double total = two_sum(s, e);
  r.sum = total;
  const double u = 0x1p-53;
  const double n = static_cast<double>(K);
  r.magnitudes = magnitudes * (1.0 + (n + 2.0) * u) * (1.0 + 0x1p-50);
  // Ogita, Rump & Oishi 2005, Prop. 4.5 (without the final rounding, kept in lo): gamma_{n-1}^2.
  const double gamma = n * u / (1.0 - n * u);
  r.error = gamma * gamma * r.magnitudes + 4.0 * u * std::fabs(total.lo);
  return r;
}

inline double gamma(double n) {
  const double u = 0x1p-24;
  return n * u / (1.0 - n * u);
}

// docs/gemm.md, "Error bound": with s the exact sum, S the sum of |products|, d the depth of the
// summation (K on every path), f = alpha * scale_a * scale_b exactly and f_hat its float,
//   |C_hat - (f s + beta c)| <= gamma_{d+1} |f_hat| S + gamma_2 |f| |s| + [beta != 0] (2u + u^2) |beta c|
//                               + (1 + u) d |f_hat| eta + 3 eta,         u = 2^-24, eta = 2^-150.
inline double error_bound(double depth, double f_hat, double f, double s, double S, double beta, double old) {
  const double u = 0x1p-24, eta = 0x1p-150;
  double bound = gamma(depth + 1.0) * std::fabs(f_hat) * S + gamma(2.0) * std::fabs(f) * std::fabs(s) +
                 (1.0 + u) * depth * std::fabs(f_hat) * eta + 3.0 * eta;
  if (beta != 0.0) bound += (2.0 * u + u * u) * std::fabs(beta * old);
  return bound;
}

}  // namespace gemm_test
