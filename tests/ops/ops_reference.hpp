// Support for the ops tests: inputs of any dtype, and a reference that evaluates the textbook
// formula in long double on the exact input values, rounds it into the result dtype, and
// measures how many codes of that dtype a result is away from it.
#pragma once

#include <mixprec/matrix.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace ops_test {

using mixprec::dtype;

// rows × cols values of dtype d drawn from N(mean, sd) and rounded into d.
inline mixprec::matrix random_matrix(dtype d, std::size_t rows, std::size_t cols, std::uint32_t seed, float sd = 1.0f,
                                     float mean = 0.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(mean, sd);
  std::vector<float> values(rows * cols);
  for (float& v : values) v = normal(gen);
  return mixprec::convert(mixprec::matrix_view(values.data(), rows, cols), d);
}

// The same dtype, shape and codes (NaN payloads included).
inline bool same_codes(const mixprec::matrix& a, const mixprec::matrix& b) {
  return a.type() == b.type() && a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

// The position of v among the values of d, as an integer that grows with the value (codes of
// sign-magnitude formats reordered), so that a difference counts the codes in between.
inline std::int64_t order_in(dtype d, float v) {
  return mixprec::visit_dtype(d, [&](auto tag) -> std::int64_t {
    using T = typename decltype(tag)::type;
    std::uint64_t code = 0, sign_bit = 0;
    if constexpr (std::is_same<T, float>::value) {
      code = mixprec::detail::bit_cast<std::uint32_t>(v);
      sign_bit = std::uint64_t{1} << 31;
    } else {
      code = static_cast<T>(v).bits();
      sign_bit = mixprec::format_traits<typename T::format>::sign_mask;
    }
    const auto magnitude = static_cast<std::int64_t>(code & (sign_bit - 1));
    return (code & sign_bit) != 0 ? -magnitude : magnitude;
  });
}

// How many codes of d lie between `got` (a value of d) and the exact value rounded into d.
// NaN against NaN is 0; NaN against a number is a large distance.
inline std::int64_t codes_apart(dtype d, float got, long double exact) {
  if (std::isnan(got) || std::isnan(static_cast<double>(exact))) {
    return std::isnan(got) && std::isnan(static_cast<double>(exact)) ? 0 : 1 << 30;
  }
  const float rounded = mixprec::visit_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<float>(static_cast<T>(static_cast<double>(exact)));
  });
  return std::llabs(order_in(d, got) - order_in(d, rounded));
}

// A float32 matrix's elements (or its transpose's) row-major.
inline std::vector<float> floats_of(const mixprec::matrix& m, bool transposed = false) {
  const mixprec::matrix copy = mixprec::matrix::copy_of(transposed ? m.view().transposed() : m.view());
  return std::vector<float>(copy.data<float>(), copy.data<float>() + copy.size());
}

inline bool same_floats(const mixprec::matrix& m, const std::vector<float>& v) {
  return m.size() == v.size() && std::memcmp(m.data<float>(), v.data(), v.size() * sizeof(float)) == 0;
}

// ||got − reference||₂ / ||reference||₂ over float32 matrices of one shape.
inline double relative_error(const mixprec::matrix& got, const mixprec::matrix& reference) {
  double difference = 0, norm = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const double d = static_cast<double>(got.data<float>()[k]) - reference.data<float>()[k];
    difference += d * d;
    norm += static_cast<double>(reference.data<float>()[k]) * reference.data<float>()[k];
  }
  return std::sqrt(difference / norm);
}

}  // namespace ops_test

namespace ops_test {

// The autocast states every op test runs under: none, bfloat16, float16.
struct scope_case {
  const char* name;
  bool enabled;
  dtype lower_precision;
};
inline constexpr scope_case scope_cases[] = {{"no autocast", false, dtype::float32},
                                             {"bf16 autocast", true, dtype::bfloat16},
                                             {"fp16 autocast", true, dtype::float16}};
inline constexpr dtype input_dtypes[] = {dtype::float32, dtype::bfloat16, dtype::float16};

}  // namespace ops_test
