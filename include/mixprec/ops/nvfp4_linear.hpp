// Linear layers on NVFP4 operands (issue 16, item 7): Transformer Engine's NVFP4BlockScaling
// recipe on the CPU reference of the block-scaled GEMM (blockscale/nvfp4_gemm.hpp).  Results and
// gradients are float32; the autocast scope and precision overrides play no part (as in
// mx_linear).  Not in the ops.hpp umbrella: include this header.
//
//   ops::nvfp4_linear_options o;                        // TE's defaults: 16×16 weight tiles, RHT
//   o.gradient_rounding.step = step;                    // a new stream every step
//   matrix y = ops::nvfp4_linear(x, w, b, o);
//   auto g = ops::nvfp4_linear_backward(dy, x, w, b, o);
//
// The roles are TE's (transformer_engine/common/recipe/__init__.py, NVFP4BlockScaling: QParams of
// fp4_quant_fwd_inp, fp4_quant_fwd_weight, fp4_quant_bwd_grad), every operand blocked along its
// GEMM's inner dimension:
//   y  = Q(x)·Q(w)ᵀ + b     x 1×16 along `in`;            w 16×16 tiles (weight_2d)
//   dx = Q(dy)·Q(w)         dy 1×16 along `out`, SR;      w's column-wise copy (the same tiles)
//   dw = Q(dyᵀ)·Q(x)        dy's and x's column-wise copies, 1×16 along the batch, both
//                           Hadamard-transformed along the batch (hadamard); dy's with SR
//   db = Σ_rows dy          (float, not quantised)
// Q(·) is nvfp4_quantize with the options' rule.  The two transforms cancel in dw
// ((S·H/4)(S·H/4)ᵀ = I), up to the quantisation.  SR: stochastic rounding of the gradient's
// codes (gradient_rounding; TE rounds gradients stochastically, nothing else), dy's row-wise
// copy and its column-wise copy drawing distinct words of one (seed, tensor id, step) stream.
// The caller numbers the layers (tensor_id) and the steps, so that a resumed run draws the same
// bits.
//
// TE refuses the transform when the batch is not a multiple of 16; here the column-wise copies
// of dy and x are then quantised from the batch padded with zero rows, which leaves dw's exact
// value (dyᵀ·x) unchanged.
#pragma once

#include <algorithm>
#include <cstddef>

#include "../blockscale/nvfp4_gemm.hpp"
#include "../blockscale/statistics.hpp"
#include "linear.hpp"
#include "operand.hpp"
#include "quantization_record.hpp"

namespace mixprec::ops {

struct nvfp4_linear_options {
  blockscale::nvfp4_rule rule = blockscale::nvfp4_rule::transformer_engine;
  bool weight_2d = true;  // 16×16 weight tiles (TE: unless disable_2d_quantization)
  bool hadamard = true;   // the wgrad operands' random Hadamard transform (TE: unless disable_rht)
  // TE rounds the gradient stochastically (unless disable_stochastic_rounding); enabled here
  // with seed 0, tensor 0, step 0 unless set: set the step (and the layer as tensor_id) each time.
  block_stochastic_rounding gradient_rounding = default_gradient_rounding();
  // TE's statistics of the row-wise copies of x, w (the forward's) and dy (the dx product's),
  // appended here when set (quantization_record.hpp).
  statistics_sink* statistics = nullptr;

  static block_stochastic_rounding default_gradient_rounding() noexcept {
    block_stochastic_rounding sr;
    sr.enabled = true;
    return sr;
  }
};

namespace detail {

// v (rows × cols, any dtype and strides) as row-major floats, with zero rows appended up to
// `padded_rows`.
template <int = 0>
std::vector<float> floats_padded(const matrix_view& v, std::size_t padded_rows) {
  std::vector<float> out(padded_rows * v.cols(), 0.0f);
  if (v.size() != 0) {
    const scratch<float> values = as_floats(v);
    std::copy(values.data(), values.data() + v.size(), out.begin());
  }
  return out;
}

template <int = 0>
blockscale::nvfp4_tensor quantize_nvfp4(const std::vector<float>& values, std::size_t rows, std::size_t cols,
                                        const blockscale::nvfp4_options& q) {
  return blockscale::nvfp4_quantize(values.data(), rows, cols, cols, q);
}

// The row-wise copy of `values` (rows × cols, row-major), with its statistics in the sink.
template <int = 0>
blockscale::nvfp4_tensor quantize_nvfp4_recorded(const std::vector<float>& values, std::size_t rows, std::size_t cols,
                                                 const blockscale::nvfp4_options& q, statistics_sink* sink,
                                                 layer_operand operand) {
  blockscale::nvfp4_tensor t = quantize_nvfp4(values, rows, cols, q);
  if (sink != nullptr) {
    sink->push_back(operand_statistics{operand, blockscale::nvfp4_statistics(values.data(), cols, *t.rowwise)});
  }
  return t;
}

}  // namespace detail

template <int = 0>
matrix nvfp4_linear(const operand& x, const operand& weight, const operand& bias = matrix_view(),
                    const nvfp4_linear_options& o = {}) {
  detail::check_product_shapes("nvfp4_linear", x.view(), weight.view().transposed());
  const std::size_t rows = x.rows(), cols = weight.rows(), in = x.cols();
  matrix y(dtype::float32, rows, cols, mixprec::detail::no_fill_t{});  // the bias rows, or unread (beta = 0)
  if (!bias.view().empty()) detail::fill_bias_rows("nvfp4_linear", bias.view(), rows, cols, y.data<float>());
  blockscale::nvfp4_options q;
  q.rule = o.rule;
  const auto xq = detail::quantize_nvfp4_recorded(detail::floats_padded(x.view(), rows), rows, in, q, o.statistics,
                                                  layer_operand::input);
  q.tile = o.weight_2d ? blockscale::nvfp4_tile::square_16 : blockscale::nvfp4_tile::row_16;
  const auto wq = detail::quantize_nvfp4_recorded(detail::floats_padded(weight.view(), cols), cols, in, q, o.statistics,
                                                  layer_operand::weight);
  // wᵀ (in × out) blocked along `in`: w's row-wise copy read as the column-wise copy of wᵀ.
  blockscale::nvfp4_gemm(1.0f, *xq.rowwise, wq.rowwise->transposed(), bias.view().empty() ? 0.0f : 1.0f,
                         y.data<float>(), cols);
  return y;
}

template <int = 0>
linear_grads nvfp4_linear_backward(const operand& grad_out, const operand& x, const operand& weight,
                                   const operand& bias = matrix_view(), const nvfp4_linear_options& o = {}) {
  if (grad_out.rows() != x.rows() || grad_out.cols() != weight.rows() || x.cols() != weight.cols()) {
    detail::throw_shape("nvfp4_linear_backward", "gradient " + detail::shape_of(grad_out.view()) + ", input " +
                                                     detail::shape_of(x.view()) + ", weight " +
                                                     detail::shape_of(weight.view()));
  }
  o.gradient_rounding.check("nvfp4_linear_backward");
  const std::size_t batch = x.rows(), in = x.cols(), out = weight.rows();
  linear_grads g;
  g.input = matrix(dtype::float32, batch, in, mixprec::detail::no_fill_t{});  // beta = 0: written, not read
  g.weight = matrix(dtype::float32, out, in, mixprec::detail::no_fill_t{});
  blockscale::nvfp4_options q;
  q.rule = o.rule;
  // dx = dy · w: dy's row-wise copy (SR), w's column-wise copy (blocked along `out`).
  q.stochastic = o.gradient_rounding;
  const auto dy = detail::quantize_nvfp4_recorded(detail::floats_padded(grad_out.view(), batch), batch, out, q,
                                                  o.statistics, layer_operand::grad_output);
  q.stochastic = {};
  q.tile = o.weight_2d ? blockscale::nvfp4_tile::square_16 : blockscale::nvfp4_tile::row_16;
  q.rowwise = false;
  q.columnwise = true;
  const auto wq = detail::quantize_nvfp4(detail::floats_padded(weight.view(), out), out, in, q);
  blockscale::nvfp4_gemm(1.0f, *dy.rowwise, *wq.columnwise, 0.0f, g.input.data<float>(), in);
  // dw = dyᵀ · x on the column-wise copies, blocked along the batch (padded to 16 for the
  // transform); dy's read as the row-wise copy of dyᵀ.
  const std::size_t padded =
      o.hadamard ? (batch + blockscale::hadamard_size - 1) / blockscale::hadamard_size * blockscale::hadamard_size
                 : batch;
  q.tile = blockscale::nvfp4_tile::row_16;
  q.columnwise_rht.enabled = o.hadamard;
  q.stochastic = o.gradient_rounding;
  const auto dyc = detail::quantize_nvfp4(detail::floats_padded(grad_out.view(), padded), padded, out, q);
  q.stochastic = {};
  const auto xc = detail::quantize_nvfp4(detail::floats_padded(x.view(), padded), padded, in, q);
  blockscale::nvfp4_gemm(1.0f, dyc.columnwise->transposed(), *xc.columnwise, 0.0f, g.weight.data<float>(), in);
  if (!bias.view().empty()) g.bias = detail::sum_along(grad_out.view(), 0, dtype::float32);
  return g;
}

}  // namespace mixprec::ops
