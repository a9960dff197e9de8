// torchao's float8 training recipes as per-GEMM-operand cast configurations
// (torchao/float8/config.py: Float8LinearConfig.from_recipe_name, __post_init__; which tensor
// each cast applies to and along which dim: float8_linear.py, matmul_with_hp_or_float8_args).
//
// A linear layer y = x · Wᵀ (x: M × K input, W: N × K weight, dy: M × N grad_output) runs three
// GEMMs, each with two operands, each operand cast from the tensor named below (rowwise.hpp,
// torchao_quantize; the axis is over that tensor):
//
//   output       = input · weightᵀ           input (M × K), weightᵀ (K × N)
//   grad_input   = grad_output · weight      grad_output (M × N), weightᵀ (K × N), used transposed
//   grad_weight  = grad_outputᵀ · input      grad_output (M × N), input (M × K), used transposed
//
// Every axis-wise scale is taken along the GEMM's contraction dimension.
//
//   recipe              operand casts                                       pow2  elements
//   tensorwise          all tensorwise                                      no    input, weight e4m3; grad_output e5m2
//   rowwise             all axiswise                                        yes   all e4m3
//   rowwise_with_gw_hp  output axiswise; grad_input: grad_output axiswise,  yes   all e4m3
//                       weight tensorwise; grad_weight in high precision
//
// Fast accumulation (Float8GemmConfig.use_fast_accum) is on for the output GEMM and off for the
// other two in every recipe (the dataclass defaults; from_recipe_name sets no GEMM config).
#pragma once

#include <string>

#include "../errors.hpp"
#include "../scaling/fp8/format.hpp"
#include "rowwise.hpp"

namespace mixprec::blockscale {

enum class torchao_recipe { tensorwise, rowwise, rowwise_with_gw_hp };

constexpr const char* to_string(torchao_recipe r) noexcept {
  switch (r) {
    case torchao_recipe::tensorwise:
      return "tensorwise";
    case torchao_recipe::rowwise:
      return "rowwise";
    case torchao_recipe::rowwise_with_gw_hp:
      return "rowwise_with_gw_hp";
  }
  return "invalid torchao_recipe";
}

// The cast of one GEMM operand (torchao's CastConfig plus the dim it scales along).
struct operand_cast {
  bool high_precision = false;  // ScalingType.DISABLED: the operand is not cast
  scaling_granularity granularity = scaling_granularity::tensorwise;
  scale_axis axis = scale_axis::rows;  // over the tensor named in the table above
  fp8_element element = fp8_element::e4m3;
};

struct linear_cast_config {
  operand_cast input, weight;                                       // output GEMM
  operand_cast grad_output, weight_for_grad_input;                  // grad_input GEMM
  operand_cast grad_output_for_grad_weight, input_for_grad_weight;  // grad_weight GEMM
  bool round_scales_to_power_of_2 = false;
  bool fast_accum_output = true, fast_accum_grad_input = false, fast_accum_grad_weight = false;

  // The scaling an operand's cast uses (rowwise.hpp).
  torchao_scaling scaling_of(const operand_cast& c) const noexcept {
    return {c.granularity, c.axis, round_scales_to_power_of_2};
  }

  // torchao's __post_init__ checks: both operands of a GEMM cast or both in high precision, and an
  // operand cast to the same element type in both GEMMs that use it.
  void validate() const {
    const auto same_precision = [](const operand_cast& a, const operand_cast& b, const char* gemm) {
      if (a.high_precision != b.high_precision) {
        throw invalid_argument(std::string("linear_cast_config: incompatible operand precision for ") + gemm +
                               ": one operand in high precision, the other cast to fp8");
      }
    };
    same_precision(input, weight, "output");
    same_precision(grad_output, weight_for_grad_input, "grad_input");
    same_precision(grad_output_for_grad_weight, input_for_grad_weight, "grad_weight");
    const auto same_element = [](const operand_cast& a, const operand_cast& b, const char* operand) {
      if (a.element != b.element) {
        throw invalid_argument(std::string("linear_cast_config: ") + operand + " is cast to " + to_string(a.element) +
                               " and to " + to_string(b.element) + "; it must be one type in both GEMMs");
      }
    };
    same_element(input, input_for_grad_weight, "input");
    same_element(weight, weight_for_grad_input, "weight");
    same_element(grad_output, grad_output_for_grad_weight, "grad_output");
  }
};

// Float8LinearConfig.from_recipe_name.
inline linear_cast_config linear_cast_config_for(torchao_recipe recipe) {
  constexpr auto e4m3 = fp8_element::e4m3, e5m2 = fp8_element::e5m2;
  constexpr auto tensorwise = scaling_granularity::tensorwise, axiswise = scaling_granularity::axiswise;
  constexpr auto rows = scale_axis::rows, columns = scale_axis::columns;
  linear_cast_config c;
  switch (recipe) {
    case torchao_recipe::tensorwise:
      c.input = c.input_for_grad_weight = {false, tensorwise, rows, e4m3};
      c.weight = c.weight_for_grad_input = {false, tensorwise, rows, e4m3};
      c.grad_output = c.grad_output_for_grad_weight = {false, tensorwise, rows, e5m2};
      return c;
    case torchao_recipe::rowwise:
      c.input = {false, axiswise, rows, e4m3};                           // input, dim -1
      c.weight = {false, axiswise, columns, e4m3};                       // weightᵀ, dim 0
      c.grad_output = {false, axiswise, rows, e4m3};                     // grad_output, dim -1
      c.weight_for_grad_input = {false, axiswise, rows, e4m3};           // weightᵀ, dim -1
      c.grad_output_for_grad_weight = {false, axiswise, columns, e4m3};  // grad_output, dim 0
      c.input_for_grad_weight = {false, axiswise, columns, e4m3};        // input, dim 0
      c.round_scales_to_power_of_2 = true;
      return c;
    case torchao_recipe::rowwise_with_gw_hp:
      c.input = {false, axiswise, rows, e4m3};
      c.weight = {false, axiswise, columns, e4m3};
      c.grad_output = {false, axiswise, rows, e4m3};
      c.weight_for_grad_input = {false, tensorwise, rows, e4m3};
      c.grad_output_for_grad_weight = {true, tensorwise, columns, e4m3};
      c.input_for_grad_weight = {true, tensorwise, columns, e4m3};
      c.round_scales_to_power_of_2 = true;
      return c;
  }
  throw invalid_argument("linear_cast_config_for: recipe is " + std::to_string(static_cast<int>(recipe)) +
                         ", not a torchao_recipe (0 tensorwise, 1 rowwise, 2 rowwise_with_gw_hp)");
}

}  // namespace mixprec::blockscale
