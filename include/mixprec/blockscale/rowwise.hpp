// Row-wise (axis-wise) and tensor-wise fp8 scaling by torchao's rule (issue 16, item 3), the
// casts of torchao's float8 training (torchao/float8/float8_utils.py: tensor_to_amax,
// amax_to_scale, _round_scale_down_to_power_of_2, to_fp8_saturated; float8_training_tensor.py:
// the cast and its inverse).  The recipes that say which cast each GEMM operand gets are in
// torchao_recipes.hpp.
//
//   std::vector<float> s = mixprec::blockscale::torchao_quantize(x, rows, cols, ldx,
//       {scaling_granularity::axiswise, scale_axis::rows, true}, q, ldq);   // one scale per row
//   mixprec::blockscale::torchao_dequantize(q, rows, cols, ldq, granularity, s.data(), out, ldo);
//
// The rule, for each line (a row, a column, or the whole matrix):
//   amax  = max |x| over the line; a NaN makes it NaN (torch.amax / torch.max)
//   scale = float( double(fp8_max) / max(double(amax), 1e-12) )      (NaN stays NaN)
//   pow2:   scale = exp2(floor(log2(scale))) in float32
//   q     = fp8(clamp(float(x) · scale, ±fp8_max))   = convert<T>(x · scale, nearest_even, saturate)
//   value = float(q) / scale                          (a float division, as torchao dequantises)
// Edge cases by the formula: amax 0 → scale float(448e12) = 447999985582080 (pow2: 2^48);
// amax inf → scale 0, so finite x give 0 and ±inf gives NaN; NaN → NaN scale, NaN codes.
// float32 log2 is taken correctly rounded (the double log2 rounded to float): a scale within about
// 2^-24 · |k| · ln 2 below 2^k then rounds up to 2^k, as torchao's float32 arithmetic does
// (docs/decisions.md, section 13).
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "../convert.hpp"
#include "../errors.hpp"
#include "../scaling/fp8/format.hpp"
#include "../scaling/fp8/scale_rules.hpp"
#include "fp8_block.hpp"

namespace mixprec::blockscale {

enum class scaling_granularity { tensorwise, axiswise };

// Along which axis an axis-wise scaled matrix has its scales: rows, one scale per row (the amax
// over the row; torchao's axiswise_dim = -1 of a 2-D tensor), or columns, one per column
// (axiswise_dim = 0).
enum class scale_axis { rows, columns };

constexpr const char* to_string(scaling_granularity g) noexcept {
  return g == scaling_granularity::tensorwise ? "tensorwise" : "axiswise";
}
constexpr const char* to_string(scale_axis a) noexcept { return a == scale_axis::rows ? "rows" : "columns"; }

// torchao's EPS, the floor of the amax (in double).
constexpr double torchao_amax_floor = 1e-12;

// _round_scale_down_to_power_of_2: exp2(floor(log2(scale))) with float32 log2 and exp2.
inline float torchao_power_of_two(float scale) noexcept {
  if (mixprec::detail::is_nan_float(scale)) return scale;
  if (scale == 0.0f) return 0.0f;  // log2(0) = -inf, exp2(-inf) = 0
  const float l = static_cast<float>(std::log2(static_cast<double>(scale)));
  return std::ldexp(1.0f, static_cast<int>(std::floor(l)));  // |l| < 128 for every scale of the rule
}

// amax_to_scale.
inline float torchao_scale_from_amax(float amax, float fp8_max, bool round_scales_to_power_of_2) noexcept {
  const double a = static_cast<double>(amax);
  const double floored = a < torchao_amax_floor ? torchao_amax_floor : a;  // torch.clamp keeps NaN
  const float scale = static_cast<float>(static_cast<double>(fp8_max) / floored);
  return round_scales_to_power_of_2 ? torchao_power_of_two(scale) : scale;
}

struct torchao_scaling {
  scaling_granularity granularity = scaling_granularity::tensorwise;
  scale_axis axis = scale_axis::rows;  // axiswise only
  bool round_scales_to_power_of_2 = false;
};

namespace detail {

inline void check_torchao_scaling(const char* function, const torchao_scaling& s) {
  if (s.granularity != scaling_granularity::tensorwise && s.granularity != scaling_granularity::axiswise) {
    throw invalid_argument(std::string(function) + ": granularity is " +
                           std::to_string(static_cast<int>(s.granularity)) +
                           ", not a scaling_granularity (0 tensorwise, 1 axiswise)");
  }
  if (s.axis != scale_axis::rows && s.axis != scale_axis::columns) {
    throw invalid_argument(std::string(function) + ": axis is " + std::to_string(static_cast<int>(s.axis)) +
                           ", not a scale_axis (0 rows, 1 columns)");
  }
}

// The number of scales: 1, rows or cols.
inline std::size_t scale_count(const torchao_scaling& s, std::size_t rows, std::size_t cols) noexcept {
  if (s.granularity == scaling_granularity::tensorwise) return 1;
  return s.axis == scale_axis::rows ? rows : cols;
}

// The scale line of element (r, c).
inline std::size_t scale_line(const torchao_scaling& s, std::size_t r, std::size_t c) noexcept {
  if (s.granularity == scaling_granularity::tensorwise) return 0;
  return s.axis == scale_axis::rows ? r : c;
}

}  // namespace detail

// Quantises the rows × cols matrix x (row-major, ldx; float or bfloat16) into q (row-major, ldq)
// and returns the scales (one, or one per row or column), which dequantise by division.
template <class T, class In>
std::vector<float> torchao_quantize(const In* x, std::size_t rows, std::size_t cols, std::size_t ldx,
                                    const torchao_scaling& scaling, T* q, std::size_t ldq) {
  static_assert(std::is_same<In, float>::value || std::is_same<In, bfloat16>::value,
                "torchao_quantize reads float or bfloat16");
  const float largest = mixprec::fp8_max(fp8_element_of<T>());
  detail::check_torchao_scaling("torchao_quantize", scaling);
  detail::check_float_matrix("torchao_quantize", "input", x, rows, cols, ldx, sizeof(In));
  detail::check_float_matrix("torchao_quantize", "output", q, rows, cols, ldq, sizeof(T));
  std::vector<float> amax(detail::scale_count(scaling, rows, cols), 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      float& a = amax[detail::scale_line(scaling, r, c)];
      a = detail::amax_keeping_nan(a, static_cast<float>(x[r * ldx + c]));
    }
  }
  std::vector<float> scales(amax.size());
  for (std::size_t k = 0; k < amax.size(); ++k) {
    scales[k] = torchao_scale_from_amax(amax[k], largest, scaling.round_scales_to_power_of_2);
  }
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const float scaled = static_cast<float>(x[r * ldx + c]) * scales[detail::scale_line(scaling, r, c)];
      q[r * ldq + c] = convert<T>(scaled, rounding::nearest_even, overflow::saturate);
    }
  }
  return scales;
}

// out[r · ldo + c] = float(q[r · ldq + c]) / scale of its line.  scales holds 1, rows or cols
// values as torchao_quantize returned them.
template <class T>
void torchao_dequantize(const T* q, std::size_t rows, std::size_t cols, std::size_t ldq, const torchao_scaling& scaling,
                        const float* scales, float* out, std::size_t ldo) {
  detail::check_torchao_scaling("torchao_dequantize", scaling);
  detail::check_float_matrix("torchao_dequantize", "input", q, rows, cols, ldq, sizeof(T));
  detail::check_float_matrix("torchao_dequantize", "output", out, rows, cols, ldo, sizeof(float));
  if (rows > 0 && cols > 0 && scales == nullptr) {
    throw invalid_argument("torchao_dequantize: null scales pointer for " +
                           std::to_string(detail::scale_count(scaling, rows, cols)) + " scales");
  }
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      out[r * ldo + c] = static_cast<float>(q[r * ldq + c]) / scales[detail::scale_line(scaling, r, c)];
    }
  }
}

}  // namespace mixprec::blockscale
