// Which fp8 element type a tensor of the fp8 recipes is stored in.
//
//   fp8_format::e4m3     every tensor in float8_e4m3fn
//   fp8_format::e5m2     every tensor in float8_e5m2
//   fp8_format::hybrid   forward-pass tensors (activations, weights) in float8_e4m3fn, backward-
//                        pass tensors (gradients) in float8_e5m2: Transformer Engine's default
//                        (transformer_engine/common/recipe/__init__.py, class Format, HYBRID)
//
// A recipe's state belongs to one pass (fp8_pass), as Transformer Engine keeps one
// RecipeState for mode "forward" and one for "backward"; the pair (format, pass) decides the
// element type.  Transformer Engine refuses pure E5M2 training (DelayedScaling.__post_init__
// asserts fp8_format != E5M2); mixprec accepts it, as issue 7 asks (docs/fp8.md).
#pragma once

#include <type_traits>

#include "../../config.hpp"
#include "../../types.hpp"

namespace mixprec {

enum class fp8_format { e4m3, e5m2, hybrid };
enum class fp8_pass { forward, backward };
// The element type of one pass.
enum class fp8_element { e4m3, e5m2 };

constexpr const char* to_string(fp8_format f) noexcept {
  switch (f) {
    case fp8_format::e4m3:
      return "e4m3";
    case fp8_format::e5m2:
      return "e5m2";
    case fp8_format::hybrid:
      return "hybrid";
  }
  return "invalid fp8_format";
}

constexpr const char* to_string(fp8_pass p) noexcept { return p == fp8_pass::forward ? "forward" : "backward"; }

constexpr const char* to_string(fp8_element e) noexcept {
  return e == fp8_element::e4m3 ? "float8_e4m3fn" : "float8_e5m2";
}

constexpr fp8_element element_of(fp8_format f, fp8_pass p) noexcept {
  return f == fp8_format::e4m3 || (f == fp8_format::hybrid && p == fp8_pass::forward) ? fp8_element::e4m3
                                                                                      : fp8_element::e5m2;
}

// The largest finite value of the element type, as Transformer Engine's fp8_dtype_max
// (delayed_scaling.cu) and Quantized_Limits<T>::max_norm (utils.cuh) give it:
// e4m3fn 0'1111'110 = 1.75 × 2^8 = 448, e5m2 0'11110'11 = 1.75 × 2^15 = 57344.
MIXPREC_HOST_DEVICE constexpr float fp8_max(fp8_element e) noexcept {
  return e == fp8_element::e4m3 ? 448.0f : 57344.0f;
}

// The element of a value type: float8_e4m3fn or float8_e5m2 only.
template <class T>
constexpr fp8_element fp8_element_of() noexcept {
  static_assert(std::is_same<T, float8_e4m3fn>::value || std::is_same<T, float8_e5m2>::value,
                "the fp8 recipes store float8_e4m3fn or float8_e5m2");
  return std::is_same<T, float8_e4m3fn>::value ? fp8_element::e4m3 : fp8_element::e5m2;
}

// What one quantisation used and saw: the tensor's amax, the scale it was multiplied by and the
// inverse that dequantises it (x ≈ float(q) · scale_inv).
struct fp8_quantized {
  float amax = 0;
  float scale = 1;
  float scale_inv = 1;
};

}  // namespace mixprec
