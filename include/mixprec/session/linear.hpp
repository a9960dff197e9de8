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
// With precision_session::collect_quantization_statistics, the quantising layers measure their
// operands on the selected steps and layers (session/quantization_statistics.hpp).
//
// nvfp4's stochastic rounding is keyed by the recipe's seed, the layer l and micro-batch
// (tensor id = micro-batch · 2^16 + l) and the completed steps (step): the bits depend only on
// where the step is in the run, so a run resumed from a checkpoint draws the same ones.  The
// blockscale/ headers this brings are not in the mixprec.hpp umbrella (compile time): include
// this header where the layers are written.  Its functions are templates, those with no parameter
// of their own written `template <int = 0>`, so that only a file that calls one compiles it
// (docs/design.md, "Compiled where called").
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

template <int = 0>
bool runs_plain_linear(const precision_session& amp, const ops::operand& weight) {
  const parameter* p = weight.source_parameter();
  const precision_mode m = amp.get_recipe().precision;
  return !amp.enabled() || m == precision_mode::float32 || m == precision_mode::float16 ||
         m == precision_mode::bfloat16 || (p != nullptr && p->precision_override());
}

template <int = 0>
ops::nvfp4_linear_options nvfp4_options_of(const precision_session& amp, std::size_t layer,
                                           ops::statistics_sink* sink) {
  ops::nvfp4_linear_options o;
  o.statistics = sink;
  o.gradient_rounding.seed = static_cast<std::uint64_t>(amp.get_recipe().seed);
  o.gradient_rounding.tensor_id = static_cast<std::uint32_t>((amp.current_micro_batch() << 16) | layer);
  o.gradient_rounding.step = static_cast<std::uint32_t>(amp.completed_steps());
  return o;
}

template <int = 0>
ops::mx_linear_options mx_options_of(const precision_session& amp, ops::statistics_sink* sink) {
  ops::mx_linear_options o;
  o.weight_scales = amp.get_recipe().mx_weight_scales;
  o.statistics = sink;
  return o;
}

// call() with the delayed scaler's statistics collection on for `tensors` (restored after, the
// user's own settings included), their records appended to the sink as `operands`; call() alone
// without a sink.
template <class Call>
auto measured_fp8(delayed_scaler& scaler, std::initializer_list<std::size_t> tensors,
                  std::initializer_list<ops::layer_operand> operands, ops::statistics_sink* sink, Call&& call) {
  if (sink == nullptr) return call();
  struct restore {
    delayed_scaler& scaler;
    std::vector<std::pair<std::size_t, std::int64_t>> every;
    ~restore() {
      // The settings were read from this scaler, so they are in range and its vectors are
      // sized: collect_statistics cannot throw here, and a destructor must not let it.
      try {
        for (const auto& [tensor, n] : every) scaler.collect_statistics(tensor, n);
      } catch (...) {
      }
    }
  } saved{scaler, {}};
  for (const std::size_t t : tensors) {
    saved.every.emplace_back(t, scaler.statistics_every(t));
    scaler.collect_statistics(t, 1);
  }
  auto result = call();
  auto operand = operands.begin();
  for (const std::size_t t : tensors) {
    const std::optional<fp8_statistics_record>& r = scaler.statistics(t);
    if (r && r->iteration == scaler.iteration()) sink->push_back(ops::operand_statistics{*operand, r->report});
    ++operand;
  }
  return result;
}

template <int = 0>
const blockscale::linear_cast_config& rowwise_recipe() {
  static const blockscale::linear_cast_config c =
      blockscale::linear_cast_config_for(blockscale::torchao_recipe::rowwise);
  return c;
}

// The records of a measured call go to the session (precision_session::quantization_due).
class layer_statistics {
 public:
  template <int = 0>
  layer_statistics(precision_session& amp, std::size_t layer) : amp_(amp), layer_(layer) {
    if (amp.quantization_due(layer)) sink_ = &seen_;
  }
  ops::statistics_sink* sink() noexcept { return sink_; }
  template <int = 0>
  void commit() {
    if (sink_ != nullptr) amp_.record_quantization(layer_, seen_);
  }

 private:
  precision_session& amp_;
  std::size_t layer_;
  ops::statistics_sink seen_;
  ops::statistics_sink* sink_ = nullptr;
};

template <int = 0>
matrix quantized_linear(precision_session& amp, std::size_t layer, const ops::operand& x, const ops::operand& weight,
                        const ops::operand& bias, ops::statistics_sink* sink) {
  switch (amp.get_recipe().precision) {
    case precision_mode::float8: {
      ops::fp8_training& fp8 = amp.fp8();
      const std::size_t l = fp8.checked_layer(layer);
      return measured_fp8(fp8.forward(), {2 * l, 2 * l + 1}, {ops::layer_operand::input, ops::layer_operand::weight},
                          sink, [&] { return ops::fp8_linear(x, weight, bias, fp8, layer); });
    }
    case precision_mode::mxfp8:
      return ops::mx_linear<float8_e4m3fn>(x, weight, bias, mx_options_of(amp, sink));
    case precision_mode::fp8_block: {
      ops::fp8_block_linear_options o;
      o.statistics = sink;
      return ops::fp8_block_linear(x, weight, bias, o);
    }
    case precision_mode::nvfp4:
      return ops::nvfp4_linear(x, weight, bias, nvfp4_options_of(amp, layer, sink));
    case precision_mode::fp8_rowwise:
      return ops::torchao_fp8_linear(x, weight, bias, rowwise_recipe(), sink);
    case precision_mode::mxfp4:
      return ops::mx_linear<float4_e2m1fn>(x, weight, bias, mx_options_of(amp, sink));
    default:
      return ops::linear(x, weight, bias);
  }
}

template <int = 0>
ops::linear_grads quantized_linear_backward(precision_session& amp, std::size_t layer, const ops::operand& grad_out,
                                            const ops::operand& x, const ops::operand& weight, const ops::operand& bias,
                                            ops::statistics_sink* sink) {
  switch (amp.get_recipe().precision) {
    case precision_mode::float8: {
      ops::fp8_training& fp8 = amp.fp8();
      const std::size_t l = fp8.checked_layer(layer);
      return measured_fp8(fp8.backward(), {l}, {ops::layer_operand::grad_output}, sink,
                          [&] { return ops::fp8_linear_backward(grad_out, x, weight, bias, fp8, layer); });
    }
    case precision_mode::mxfp8:
      return ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(grad_out, x, weight, bias, mx_options_of(amp, sink));
    case precision_mode::fp8_block: {
      ops::fp8_block_linear_options o;
      o.statistics = sink;
      return ops::fp8_block_linear_backward(grad_out, x, weight, bias, o);
    }
    case precision_mode::nvfp4:
      return ops::nvfp4_linear_backward(grad_out, x, weight, bias, nvfp4_options_of(amp, layer, sink));
    case precision_mode::fp8_rowwise:
      return ops::torchao_fp8_linear_backward(grad_out, x, weight, bias, rowwise_recipe(), sink);
    case precision_mode::mxfp4:
      return ops::mx_linear_backward<float4_e2m1fn, float4_e2m1fn>(grad_out, x, weight, bias, mx_options_of(amp, sink));
    default:
      return ops::linear_backward(grad_out, x, weight, bias);
  }
}

}  // namespace detail

template <int = 0>
matrix session_linear(precision_session& amp, std::size_t layer, const ops::operand& x, const ops::operand& weight,
                      const ops::operand& bias = matrix_view()) {
  detail::check_session_layer("session_linear", layer);
  if (detail::runs_plain_linear(amp, weight)) return ops::linear(x, weight, bias);
  detail::layer_statistics statistics(amp, layer);
  matrix y = detail::quantized_linear(amp, layer, x, weight, bias, statistics.sink());
  statistics.commit();
  return y;
}

template <int = 0>
ops::linear_grads session_linear_backward(precision_session& amp, std::size_t layer, const ops::operand& grad_out,
                                          const ops::operand& x, const ops::operand& weight,
                                          const ops::operand& bias = matrix_view()) {
  detail::check_session_layer("session_linear_backward", layer);
  if (detail::runs_plain_linear(amp, weight)) return ops::linear_backward(grad_out, x, weight, bias);
  detail::layer_statistics statistics(amp, layer);
  ops::linear_grads g = detail::quantized_linear_backward(amp, layer, grad_out, x, weight, bias, statistics.sink());
  statistics.commit();
  return g;
}

}  // namespace mixprec
