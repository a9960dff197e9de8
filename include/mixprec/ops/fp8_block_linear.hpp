// Linear layers on fp8 block-scaled operands (issue 16, item 7): Transformer Engine's
// Float8BlockScaling recipe and DeepSeek-V3's fp8 training, on the CPU reference of their GEMMs
// (blockscale/fp8_block_gemm.hpp: exact fp8 products summed per 128 of K in float, in gemm's
// order for bf16 operands, each chunk scaled by its two blocks' decode scales).  Results and
// gradients are float32; the autocast scope and precision overrides play no part (as in
// mx_linear).  Not in the ops.hpp umbrella: include this header (it brings blockscale/, which the
// umbrella leaves out for compile time).
//
//   matrix y = ops::fp8_block_linear(x, w, b);                  // e4m3, TE's scale rule
//   auto g = ops::fp8_block_linear_backward(dy, x, w, b);
//
// The operands each GEMM quantises, and their blocks (TE's Float8BlockScaling defaults
// x_block_scaling_dim = 1, w_block_scaling_dim = 2, grad_block_scaling_dim = 1;
// transformer_engine/common/recipe/__init__.py; DeepSeek-V3 §3.3: 1×128 tiles for activations
// and gradients, 128×128 blocks for weights), every operand blocked along the GEMM's inner
// dimension K:
//   y  = Q(x)·Q(w)ᵀ + b     x 1×128 along `in`;         w 128×128
//   dx = Q(dy)·Q(wᵀ)ᵀ       dy 1×128 along `out`;       wᵀ 128×128 (the same tiles as w's, transposed)
//   dw = Q(dyᵀ)·Q(xᵀ)ᵀ      dyᵀ 1×128 along the batch;  xᵀ 1×128 along the batch
//   db = Σ_rows dy          (float, not quantised)
// where Q(·) is fp8_block_quantize with the options' rule.  The transposed operands are
// quantised from float copies of the transposes, as TE's column-wise 1D data is the 1×128
// quantisation of the transpose.  No state is carried between steps: every block's scale comes
// from the block itself, so there is no amax history to save.
#pragma once

#include <cstddef>

#include "../blockscale/fp8_block_gemm.hpp"
#include "../blockscale/statistics.hpp"
#include "linear.hpp"
#include "operand.hpp"
#include "quantization_record.hpp"

namespace mixprec::ops {

struct fp8_block_linear_options {
  blockscale::fp8_block_rule rule = blockscale::fp8_block_rule::transformer_engine;
  bool power_2_scales = true;  // the TE rules only (TE's default)
  // Stochastic rounding of the gradient's elements (dy in both backward GEMMs); TE's and
  // DeepSeek-V3's recipes round to nearest, so it is off unless asked for.  The weight-gradient
  // copy of dy (its transpose) takes tensor_id + 1.
  block_stochastic_rounding gradient_rounding{};
  // TE's statistics of Q(x), Q(w) (the forward's) and Q(dy) (the dx product's), appended here
  // when set (quantization_record.hpp).
  statistics_sink* statistics = nullptr;
};

namespace detail {

// The fp8 block quantisation of v (or of its transpose) with blocks of `kind`.
template <class T>
blockscale::fp8_block_matrix<T> quantize_blocks(const matrix_view& v, bool transposed, blockscale::fp8_block_kind kind,
                                                const fp8_block_linear_options& o,
                                                const block_stochastic_rounding& rounding = {}) {
  const matrix_view source = transposed ? v.transposed() : v;
  blockscale::fp8_block_options q;
  q.rule = o.rule;
  q.kind = kind;
  q.power_2_scales = o.power_2_scales;
  q.stochastic = rounding;
  if (source.type() == dtype::float32 && source.col_stride() == 1 && source.row_stride() >= source.cols() &&
      source.rows() > 0) {
    return blockscale::fp8_block_quantize<T>(static_cast<const float*>(source.data()), source.rows(), source.cols(),
                                             source.row_stride(), q);
  }
  const scratch<float> values = as_floats(source);
  return blockscale::fp8_block_quantize<T>(values.data(), source.rows(), source.cols(), source.cols(), q);
}

// With a sink: the statistics of q, the block quantisation of v (not transposed).
template <class T>
void record_blocks(statistics_sink* sink, layer_operand operand, const matrix_view& v,
                   const blockscale::fp8_block_matrix<T>& q) {
  if (sink == nullptr) return;
  const scratch<float> values = as_floats(v);
  sink->push_back(operand_statistics{operand, blockscale::fp8_block_statistics(values.data(), v.cols(), q)});
}

}  // namespace detail

template <class T = float8_e4m3fn>
matrix fp8_block_linear(const operand& x, const operand& weight, const operand& bias = matrix_view(),
                        const fp8_block_linear_options& o = {}) {
  detail::check_product_shapes("fp8_block_linear", x.view(), weight.view().transposed());
  const std::size_t rows = x.rows(), cols = weight.rows();
  matrix y(dtype::float32, rows, cols, mixprec::detail::no_fill_t{});  // fp8_block_gemm writes every element
  const auto xq = detail::quantize_blocks<T>(x.view(), false, blockscale::fp8_block_kind::row_1x128, o);
  const auto wq = detail::quantize_blocks<T>(weight.view(), false, blockscale::fp8_block_kind::tile_128x128, o);
  detail::record_blocks(o.statistics, layer_operand::input, x.view(), xq);
  detail::record_blocks(o.statistics, layer_operand::weight, weight.view(), wq);
  blockscale::fp8_block_gemm(xq, wq, y.data<float>(), cols);
  if (!bias.view().empty()) {
    detail::check_bias("fp8_block_linear", bias.view(), cols);
    const detail::scratch<float> b = detail::as_floats(bias.view());
    float* out = y.data<float>();
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) out[i * cols + j] += b[j];
    }
  }
  return y;
}

// TGrad: the gradient's element type (e4m3 in TE's and DeepSeek-V3's recipes; e5m2 for HYBRID).
template <class TGrad = float8_e4m3fn, class T = float8_e4m3fn>
linear_grads fp8_block_linear_backward(const operand& grad_out, const operand& x, const operand& weight,
                                       const operand& bias = matrix_view(), const fp8_block_linear_options& o = {}) {
  if (grad_out.rows() != x.rows() || grad_out.cols() != weight.rows() || x.cols() != weight.cols()) {
    detail::throw_shape("fp8_block_linear_backward", "gradient " + detail::shape_of(grad_out.view()) + ", input " +
                                                         detail::shape_of(x.view()) + ", weight " +
                                                         detail::shape_of(weight.view()));
  }
  using blockscale::fp8_block_kind;
  linear_grads g;
  g.input = matrix(dtype::float32, x.rows(), x.cols(), mixprec::detail::no_fill_t{});
  g.weight = matrix(dtype::float32, weight.rows(), weight.cols(), mixprec::detail::no_fill_t{});
  block_stochastic_rounding transposed_rounding = o.gradient_rounding;
  ++transposed_rounding.tensor_id;
  const auto dy =
      detail::quantize_blocks<TGrad>(grad_out.view(), false, fp8_block_kind::row_1x128, o, o.gradient_rounding);
  detail::record_blocks(o.statistics, layer_operand::grad_output, grad_out.view(), dy);
  const auto wt = detail::quantize_blocks<T>(weight.view(), true, fp8_block_kind::tile_128x128, o);
  blockscale::fp8_block_gemm(dy, wt, g.input.data<float>(), x.cols());
  const auto dyt =
      detail::quantize_blocks<TGrad>(grad_out.view(), true, fp8_block_kind::row_1x128, o, transposed_rounding);
  const auto xt = detail::quantize_blocks<T>(x.view(), true, fp8_block_kind::row_1x128, o);
  blockscale::fp8_block_gemm(dyt, xt, g.weight.data<float>(), weight.cols());
  if (!bias.view().empty()) g.bias = detail::sum_along(grad_out.view(), 0, dtype::float32);
  return g;
}

}  // namespace mixprec::ops
