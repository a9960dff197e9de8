// Current (per-tensor) scaling, Transformer Engine's Float8CurrentScaling recipe
// (transformer_engine/common/recipe/__init__.py): each tensor is scaled from its own amax,
// measured just before it is quantised, so there is no history and no state to keep.
//
//   mixprec::current_scaling recipe;                       // hybrid, no power-of-two, epsilon 0
//   auto q = recipe.quantize(mixprec::fp8_pass::forward, x, n, x_fp8);
//   mixprec::dequantize_n(x_fp8, n, y, q.scale_inv);
//   auto m = recipe.quantize_measured(mixprec::fp8_pass::forward, x, n, x_fp8);   // the same, and
//   use(m.quantized, m.tensor, m.quantization);                  // TE's statistics of x and of q
//
// quantize() reads x twice: amax_n (bulk/amax.hpp), then the fused scale-and-convert of
// quantize_n (bulk/quantize.hpp).  The scale is compute_scale_from_amax (scale_rules.hpp, TE's
// recipe_common.cuh) with value_for_inf = FLT_MAX, as TE's nvte_compute_scale_from_amax passes
// for float inputs; scale_inv = 1 / scale.  The options are TE's QParams fields power_2_scale
// and amax_epsilon, one setting for every tensor of a pass.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>

#include "../../bulk/amax.hpp"
#include "../../bulk/quantize.hpp"
#include "../../errors.hpp"
#include "../../detail/text.hpp"
#include "format.hpp"
#include "quantization_statistics.hpp"
#include "scale_rules.hpp"

namespace mixprec {

struct current_scaling {
  static constexpr const char* name = "current_scaling";
  fp8_format format = fp8_format::hybrid;
  bool power_2_scale = false;  // round every scale down to a power of two
  float amax_epsilon = 0;      // amaxes below it count as it

  void validate() const {
    if (format != fp8_format::e4m3 && format != fp8_format::e5m2 && format != fp8_format::hybrid) {
      throw invalid_argument(std::string(name) + ": format is " + std::to_string(static_cast<int>(format)) +
                             ", not an fp8_format");
    }
    if (!(amax_epsilon >= 0.0f) || !std::isfinite(amax_epsilon)) {
      throw invalid_argument(std::string(name) + ": amax_epsilon is " + detail::number_text(amax_epsilon) +
                             ", it must be finite and >= 0");
    }
  }

  // validate(), and that T is the element type of `pass` (else invalid_argument naming both).
  template <class T>
  void check_quantize(const char* function, fp8_pass pass) const {
    validate();
    if (fp8_element_of<T>() != element_of(format, pass)) {
      throw invalid_argument(std::string("current_scaling::") + function + "<" + to_string(fp8_element_of<T>()) +
                             ">: the " + to_string(pass) + " pass of format " + to_string(format) + " stores " +
                             to_string(element_of(format, pass)));
    }
  }

  // The scale for a tensor of `pass` whose amax is `amax`.
  float scale_for(fp8_pass pass, float amax) const noexcept {
    return compute_scale_from_amax(amax, fp8_max(element_of(format, pass)), power_2_scale, amax_epsilon,
                                   detail::float_max);
  }

  // Scales x by scale_for(pass, amax_n(x)) and converts it (saturating) into out, whose type
  // must be the element type of the pass.
  template <class T>
  fp8_quantized quantize(fp8_pass pass, const float* x, std::size_t n, T* out,
                         rounding r = rounding::nearest_even) const {
    check_quantize<T>("quantize", pass);
    fp8_quantized result;
    result.amax = amax_n(x, n);
    result.scale = scale_for(pass, result.amax);
    result.scale_inv = 1.0f / result.scale;
    quantize_n(x, n, out, result.scale, r, overflow::saturate);
    return result;
  }

  // quantize() with Transformer Engine's statistics of x and of the quantisation
  // (quantization_statistics.hpp), measured in the conversion's pass (quantize_with_statistics);
  // x is read twice, as by quantize(), whose codes, amax and scales these are bit for bit.
  template <class T>
  quantized_with_statistics quantize_measured(fp8_pass pass, const float* x, std::size_t n, T* out,
                                              rounding r = rounding::nearest_even) const {
    check_quantize<T>("quantize_measured", pass);
    const float amax = amax_n(x, n);
    // scale_for is finite and > 0 for every amax (1 for 0, inf and NaN), as quantize_with_statistics asks.
    quantized_with_statistics result =
        quantize_with_statistics(x, n, out, scale_for(pass, amax), r, overflow::saturate);
    result.quantized.amax = amax;
    return result;
  }
};

}  // namespace mixprec
