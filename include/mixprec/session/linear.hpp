// A linear layer as the session's recipe computes it: one call for every precision, so that a
// model written once trains in any recipe, a schedule that switches precision included.
//
//   matrix y = mixprec::session_linear(amp, l, x, w, b);                 // layer l's forward
//   ops::linear_grads g = mixprec::session_linear_backward(amp, l, dy, x, w, b);
//
// What runs, by the active recipe's precision (get_recipe().precision):
//   fp32, fp16, bf16   ops::linear under the active autocast scope (train_step's)
//   fp8                ops::fp8_linear with the session's delayed scaling (use_fp8_layers first)
//   mxfp8              ops::mx_linear: e4m3 operands, e5m2 gradients, OCP MX blocks of 32 (the
//                      weight's scales per 32 × 32 tile with the recipe's mx_weight_scales=tile)
//   fp8_block          ops::fp8_block_linear: TE's Float8BlockScaling (1×128 / 128×128, e4m3)
//   nvfp4              ops::nvfp4_linear: TE's NVFP4BlockScaling (16×16 weight tiles, the wgrad
//                      operands Hadamard-transformed, the gradient rounded stochastically)
//   fp8_rowwise        ops::torchao_fp8_linear with torchao's ROWWISE recipe (e4m3 operands
//                      scaled per row or column along each GEMM's K, power-of-two scales)
//   mxfp4              ops::mx_linear with e2m1 elements for every operand, gradients included
//                      (OCP MX blocks of 32, the OCP scale rule, rounding to nearest: no
//                      stochastic rounding or Hadamard transform, which published MXFP4
//                      training recipes add to the backward pass)
// A weight with a precision override (a recipe's `override` rule, overrides.hpp) runs
// ops::linear, which computes in the override's dtype: `override=last:bf16` keeps the last layer
// out of NVFP4, as NVIDIA's NVFP4 recipe keeps the final layers in bf16.
//
// nvfp4's stochastic rounding is keyed by the recipe's seed, the layer l and micro-batch
// (tensor id = micro-batch · 2^16 + l) and the completed steps (step): the bits depend only on
// where the step is in the run, so a run resumed from a checkpoint draws the same ones.  The
// blockscale/ headers this brings are not in the mixprec.hpp umbrella (compile time): include
// this header where the layers are written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../ops/fp8_block_linear.hpp"
#include "../ops/fp8_linear.hpp"
#include "../ops/linear.hpp"
#include "../ops/mx_linear.hpp"
#include "../ops/nvfp4_linear.hpp"
#include "../ops/torchao_fp8_linear.hpp"
#include "precision_session.hpp"

namespace mixprec {
namespace detail {

// Layers numbered up to 2^16 - 1, so that (micro-batch, layer) fits nvfp4's 32-bit tensor id.
constexpr std::size_t session_linear_layer_limit = 65535;

inline void check_session_layer(const char* function, std::size_t layer) {
  if (layer > session_linear_layer_limit) {
    throw invalid_argument(std::string(function) + ": layer " + std::to_string(layer) + " is above " +
                           std::to_string(session_linear_layer_limit));
  }
}

inline bool runs_plain_linear(const precision_session& amp, const ops::operand& weight) {
  const parameter* p = weight.source_parameter();
  const precision_mode m = amp.get_recipe().precision;
  return !amp.enabled() || m == precision_mode::float32 || m == precision_mode::float16 ||
         m == precision_mode::bfloat16 || (p != nullptr && p->precision_override());
}

inline ops::nvfp4_linear_options nvfp4_options_of(const precision_session& amp, std::size_t layer) {
  ops::nvfp4_linear_options o;
  o.gradient_rounding.seed = static_cast<std::uint64_t>(amp.get_recipe().seed);
  o.gradient_rounding.tensor_id = static_cast<std::uint32_t>((amp.current_micro_batch() << 16) | layer);
  o.gradient_rounding.step = static_cast<std::uint32_t>(amp.completed_steps());
  return o;
}

inline ops::mx_linear_options mx_options_of(const precision_session& amp) {
  ops::mx_linear_options o;
  o.weight_scales = amp.get_recipe().mx_weight_scales;
  return o;
}

inline const blockscale::linear_cast_config& rowwise_recipe() {
  static const blockscale::linear_cast_config c =
      blockscale::linear_cast_config_for(blockscale::torchao_recipe::rowwise);
  return c;
}

}  // namespace detail

inline matrix session_linear(precision_session& amp, std::size_t layer, const ops::operand& x,
                             const ops::operand& weight, const ops::operand& bias = matrix_view()) {
  detail::check_session_layer("session_linear", layer);
  if (detail::runs_plain_linear(amp, weight)) return ops::linear(x, weight, bias);
  switch (amp.get_recipe().precision) {
    case precision_mode::float8:
      return ops::fp8_linear(x, weight, bias, amp.fp8(), layer);
    case precision_mode::mxfp8:
      return ops::mx_linear<float8_e4m3fn>(x, weight, bias, detail::mx_options_of(amp));
    case precision_mode::fp8_block:
      return ops::fp8_block_linear(x, weight, bias);
    case precision_mode::nvfp4:
      return ops::nvfp4_linear(x, weight, bias, detail::nvfp4_options_of(amp, layer));
    case precision_mode::fp8_rowwise:
      return ops::torchao_fp8_linear(x, weight, bias, detail::rowwise_recipe());
    case precision_mode::mxfp4:
      return ops::mx_linear<float4_e2m1fn>(x, weight, bias, detail::mx_options_of(amp));
    default:
      return ops::linear(x, weight, bias);
  }
}

inline ops::linear_grads session_linear_backward(precision_session& amp, std::size_t layer,
                                                 const ops::operand& grad_out, const ops::operand& x,
                                                 const ops::operand& weight, const ops::operand& bias = matrix_view()) {
  detail::check_session_layer("session_linear_backward", layer);
  if (detail::runs_plain_linear(amp, weight)) return ops::linear_backward(grad_out, x, weight, bias);
  switch (amp.get_recipe().precision) {
    case precision_mode::float8:
      return ops::fp8_linear_backward(grad_out, x, weight, bias, amp.fp8(), layer);
    case precision_mode::mxfp8:
      return ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(grad_out, x, weight, bias, detail::mx_options_of(amp));
    case precision_mode::fp8_block:
      return ops::fp8_block_linear_backward(grad_out, x, weight, bias);
    case precision_mode::nvfp4:
      return ops::nvfp4_linear_backward(grad_out, x, weight, bias, detail::nvfp4_options_of(amp, layer));
    case precision_mode::fp8_rowwise:
      return ops::torchao_fp8_linear_backward(grad_out, x, weight, bias, detail::rowwise_recipe());
    case precision_mode::mxfp4:
      return ops::mx_linear_backward<float4_e2m1fn, float4_e2m1fn>(grad_out, x, weight, bias,
                                                                   detail::mx_options_of(amp));
    default:
      return ops::linear_backward(grad_out, x, weight, bias);
  }
}

}  // namespace mixprec
