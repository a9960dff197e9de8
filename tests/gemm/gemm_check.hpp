// One gemm call checked against both references of gemm_reference.hpp: every element bit for
// bit against the path's documented order, and within the documented error bound of the exact
// result.  Shared by the unit tests and the exhaustive sweep.
#pragma once

#include <mixprec/convert.hpp>
#include <mixprec/gemm/gemm.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gemm_paths.hpp"
#include "gemm_reference.hpp"

namespace gemm_test {

// The values a test fills its operands with.
enum class values {
  gaussian,    // N(0, 1), rounded to the type
  wide_range,  // every binade of the type (random codes for the narrow formats), random signs
  cancelling,  // the second half of K repeats the first half's A and negates its B, plus small noise
  tiny,        // like gaussian, with some values scaled into the bottom binades (bf16 subnormals)
};

inline const char* name(values v) {
  switch (v) {
    case values::gaussian:
      return "gaussian";
    case values::wide_range:
      return "wide_range";
    case values::cancelling:
      return "cancelling";
    case values::tiny:
      return "tiny";
  }
  return "?";
}

template <class T>
float as_float(T x) {
  return static_cast<float>(x);
}

template <class T>
T from_float(float x) {
  if constexpr (std::is_same<T, float>::value) {
    return x;
  } else {
    return mixprec::convert<T>(x, mixprec::rounding::nearest_even, mixprec::overflow::saturate);
  }
}

template <class T>
constexpr bool is_narrow() {
  if constexpr (std::is_same<T, float>::value) {
    return false;
  } else {
    return mixprec::format_traits<typename T::format>::total_bits <= 8;
  }
}

// A value of T drawn as `kind` says (for wide_range, from a finite code or a random binade).
template <class T>
T draw(values kind, std::mt19937& rng) {
  std::normal_distribution<float> gaussian(0.0f, 1.0f);
  if (kind == values::wide_range) {
    if constexpr (is_narrow<T>()) {
      using traits = mixprec::format_traits<typename T::format>;
      for (;;) {
        const T x = T::from_bits(static_cast<typename traits::storage_type>(rng() & traits::code_mask));
        if (std::isfinite(as_float(x))) return x;
      }
    } else {
      // Binades 2^-e ... 2^e with e what the type holds, at most 40 (no product overflows).
      const int top = std::min(40, static_cast<int>(std::log2(static_cast<double>(std::numeric_limits<T>::max()))));
      const int bottom = std::max(-40, std::numeric_limits<T>::min_exponent - 1);
      std::uniform_int_distribution<int> exponent(bottom, top);
      const float x = std::ldexp(1.0f + std::uniform_real_distribution<float>(0.0f, 1.0f)(rng), exponent(rng));
      return from_float<T>(rng() % 2 == 0 ? x : -x);
    }
  }
  float x = gaussian(rng);
  if (kind == values::tiny && rng() % 4 == 0) x = std::ldexp(x, -120 - static_cast<int>(rng() % 16));
  return from_float<T>(x);
}

struct case_spec {
  std::size_t M = 1, N = 1, K = 1;
  mixprec::transpose trans_a = mixprec::transpose::no, trans_b = mixprec::transpose::no;
  float alpha = 1.0f, beta = 0.0f, scale_a = 1.0f, scale_b = 1.0f;
  mixprec::gemm_path path = mixprec::gemm_path::automatic;
  unsigned threads = 1;
  std::size_t ld_padding = 0;  // extra elements per stored row of A, B and C
  values kind = values::gaussian;
  std::uint32_t seed = 1;

  std::string describe() const {
    std::ostringstream s;
    s << M << "x" << N << "x" << K << (trans_a == mixprec::transpose::yes ? " A^T" : "")
      << (trans_b == mixprec::transpose::yes ? " B^T" : "") << " alpha " << alpha << " beta " << beta << " scales "
      << scale_a << "," << scale_b << " path " << mixprec::to_string(path) << " threads " << threads << " values "
      << name(kind) << " seed " << seed;
    return s.str();
  }
};

// Operands of one product, stored as the transposes say, with op() accessors.
template <class TA, class TB>
struct operands {
  case_spec spec;
  std::size_t lda, ldb, ldc;
  std::vector<TA> A;
  std::vector<TB> B;
  std::vector<float> C;  // C before the call

  explicit operands(const case_spec& s) : spec(s) {
    const bool a_plain = s.trans_a == mixprec::transpose::no, b_plain = s.trans_b == mixprec::transpose::no;
    lda = (a_plain ? s.K : s.M) + s.ld_padding;
    ldb = (b_plain ? s.N : s.K) + s.ld_padding;
    ldc = s.N + s.ld_padding;
    A.resize((a_plain ? s.M : s.K) * lda);
    B.resize((b_plain ? s.K : s.N) * ldb);
    C.resize(s.M * ldc);
    std::mt19937 rng(s.seed);
    for (TA& x : A) x = draw<TA>(s.kind, rng);
    for (TB& x : B) x = draw<TB>(s.kind, rng);
    for (float& x : C) x = draw<float>(values::gaussian, rng);
    if (s.kind == values::cancelling) make_cancelling(rng);
  }

  TA& a_at(std::size_t i, std::size_t k) {
    return spec.trans_a == mixprec::transpose::no ? A[i * lda + k] : A[k * lda + i];
  }
  TB& b_at(std::size_t k, std::size_t j) {
    return spec.trans_b == mixprec::transpose::no ? B[k * ldb + j] : B[j * ldb + k];
  }
  float a(std::size_t i, std::size_t k) const {
    return as_float(spec.trans_a == mixprec::transpose::no ? A[i * lda + k] : A[k * lda + i]);
  }
  float b(std::size_t k, std::size_t j) const {
    return as_float(spec.trans_b == mixprec::transpose::no ? B[k * ldb + j] : B[j * ldb + k]);
  }

  // Second half of K: A repeated, B negated (so the products cancel in pairs k, k + K/2), then
  // one in eight of them nudged by a small independent value.
  void make_cancelling(std::mt19937& rng) {
    const std::size_t half = spec.K / 2;
    for (std::size_t k = 0; k < half; ++k) {
      for (std::size_t i = 0; i < spec.M; ++i) a_at(i, k + half) = a_at(i, k);
      for (std::size_t j = 0; j < spec.N; ++j) {
        b_at(k + half, j) = from_float<TB>(-as_float(b_at(k, j)));
        if (rng() % 8 == 0) b_at(k + half, j) = from_float<TB>(as_float(b_at(k + half, j)) + std::ldexp(1.0f, -6));
      }
    }
  }
};

struct check_result {
  std::size_t elements = 0, not_same_order = 0, outside_bound = 0;
  double worst_ratio = 0.0;  // largest |error| / bound
  std::string first_failure;
};

// Runs gemm on a copy of C and checks every element.
template <class TA, class TB>
check_result run_and_check(const operands<TA, TB>& x) {
  const case_spec& s = x.spec;
  std::vector<float> C = x.C;
  mixprec::gemm_options options;
  options.scale_a = s.scale_a;
  options.scale_b = s.scale_b;
  options.threads = s.threads;
  options.path = s.path;
  mixprec::gemm(s.trans_a, s.trans_b, s.M, s.N, s.K, s.alpha, x.A.data(), x.lda, x.B.data(), x.ldb, s.beta, C.data(),
                x.ldc, options);

  constexpr bool bf16_operands = mixprec::detail::exact_in_bfloat16<TA>() && mixprec::detail::exact_in_bfloat16<TB>();
  const summation order = order_of(mixprec::resolve_gemm_path(options), bf16_operands);
  const float factor = s.alpha * s.scale_a * s.scale_b;
  const double_double f_exact = two_product(static_cast<double>(s.alpha) * s.scale_a, s.scale_b);
  check_result r;
  for (std::size_t i = 0; i < s.M; ++i) {
    for (std::size_t j = 0; j < s.N; ++j) {
      ++r.elements;
      const float got = C[i * x.ldc + j];
      const float old = x.C[i * x.ldc + j];
      auto factors = [&](std::size_t k) { return std::make_pair(x.a(i, k), x.b(k, j)); };
      const float expected = s.K == 0 || s.alpha == 0.0f
                                 ? (s.beta == 0.0f ? 0.0f : s.beta * old)
                                 : epilogue(factor, same_order_sum(s.K, order, factors), s.beta, old);
      const bool same = std::isnan(expected) ? std::isnan(got) : std::memcmp(&expected, &got, sizeof(float)) == 0;
      if (!same) {
        if (r.not_same_order++ == 0) {
          std::ostringstream m;
          m << s.describe() << ": C(" << i << "," << j << ") = " << std::hexfloat << got << ", the path's order gives "
            << expected;
          r.first_failure = m.str();
        }
      }
      if (s.K == 0 || s.alpha == 0.0f || !std::isfinite(got)) continue;
      const exact_dot dot = dot_in_double_double(s.K, factors);
      // f * s + beta * c in double-double; its own error is far below the bound (2^-100 relative).
      const double product = f_exact.hi * dot.sum.hi + (f_exact.hi * dot.sum.lo + f_exact.lo * dot.sum.hi);
      const double scaled_old = s.beta == 0.0f ? 0.0 : static_cast<double>(s.beta) * old;
      const double_double exact = two_sum(product, scaled_old);
      const double error = std::fabs((static_cast<double>(got) - exact.hi) - exact.lo);
      const double reference_error =
          std::fabs(f_exact.hi) * dot.error + 0x1p-95 * (std::fabs(product) + std::fabs(scaled_old)) + 0x1p-52 * error;
      const double bound =
          error_bound(static_cast<double>(s.K), factor, f_exact.hi, dot.sum.hi, dot.magnitudes, s.beta, old) *
              (1.0 + 0x1p-30) +
          reference_error;
      if (bound > 0.0) r.worst_ratio = std::max(r.worst_ratio, error / bound);
      if (!(error <= bound)) {
        if (r.outside_bound++ == 0 && r.first_failure.empty()) {
          std::ostringstream m;
          m << s.describe() << ": C(" << i << "," << j << ") = " << std::hexfloat << got << " is " << error
            << " from the exact " << exact.hi << ", bound " << bound;
          r.first_failure = m.str();
        }
      }
    }
  }
  return r;
}

}  // namespace gemm_test
