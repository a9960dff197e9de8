// What a block-scaled linear layer measured of the operands it quantised, when asked: the
// layers' options take a `statistics` pointer (mx_linear_options, fp8_block_linear_options,
// nvfp4_linear_options; torchao_fp8_linear's last argument), and each layer call appends one
// record per operand to it.
//
//   ops::statistics_sink seen;
//   ops::mx_linear_options o;
//   o.statistics = &seen;
//   matrix y = ops::mx_linear<float8_e4m3fn>(x, w, b, o);   // seen: input, weight
//   auto g = ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(dy, x, w, b, o);   // + grad_output
//
// The records are Transformer Engine's statistics of a quantisation (quantization_report,
// scaling/fp8/quantization_statistics.hpp) of the copies its activation, weight and gradient
// tensors name: the forward GEMM's input and weight, blocked along `in`, and the gradient as the
// data-gradient GEMM takes it, blocked along `out`.  The other copies a backward makes (for the
// weight gradient, blocked along the batch) are not measured.  The session records them per layer
// (precision_session::collect_quantization_statistics).  Measuring dequantises each copy once:
// it costs about as much as the quantise, so it is off unless asked for.
#pragma once

#include <cstdint>
#include <vector>

#include "../scaling/fp8/quantization_statistics.hpp"

namespace mixprec::ops {

enum class layer_operand : std::uint8_t { input, weight, grad_output };

constexpr const char* to_string(layer_operand o) noexcept {
  switch (o) {
    case layer_operand::input:
      return "input";
    case layer_operand::weight:
      return "weight";
    case layer_operand::grad_output:
      return "grad_output";
  }
  return "?";
}

struct operand_statistics {
  layer_operand operand = layer_operand::input;
  quantization_report report;
};

using statistics_sink = std::vector<operand_statistics>;

}  // namespace mixprec::ops
