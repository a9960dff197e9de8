// Linear layers with torchao's float8 training recipes (issue 16, items 3 and 7): each GEMM
// operand cast as blockscale::linear_cast_config says (torchao_recipes.hpp: tensorwise, rowwise,
// rowwise_with_gw_hp), the product of the fp8 codes summed in float (mixprec::gemm: exact
// products), then divided by the operands' scales, as torch._scaled_mm applies them.  Results and
// gradients are float32; autocast and precision overrides play no part.  Not in the ops.hpp
// umbrella: include this header.
//
//   auto c = mixprec::blockscale::linear_cast_config_for(mixprec::blockscale::torchao_recipe::rowwise);
//   matrix y = ops::torchao_fp8_linear(x, w, b, c);
//   auto g = ops::torchao_fp8_linear_backward(dy, x, w, b, c);
//
// The three GEMMs and the tensor each operand is cast from (its axis over that tensor):
//   y  = x · (wᵀ)            input: x;  weight: wᵀ
//   dx = dy · (wᵀ)ᵀ          grad_output: dy;  weight_for_grad_input: wᵀ, used transposed
//   dw = dyᵀ · x             grad_output_for_grad_weight: dy, used transposed;  input_for_grad_weight: x
// An axis-wise scale must run along the GEMM's contraction dimension (torchao's configurations
// do; another is refused).  Element (i, j) of a product of two cast operands is
//   fl(fl(Σ_k qa_ik · qb_kj) / sa_i) / sb_j        (sa_i, sb_j: the operands' scales of row i / column j)
// the sum in mixprec::gemm's order and bound (docs/gemm.md); two operands in high precision
// multiply as float32 (mixprec::gemm).  use_fast_accum has no counterpart: the sums are float.
// db is the float sum of dy's rows.
//
// With a statistics sink (quantization_record.hpp), TE's statistics of the casts the layer's
// tensors name are appended (blockscale::torchao_statistics): the output GEMM's input and weight
// (the forward) and the grad_input GEMM's grad_output (the backward), each over the tensor it was
// cast from; an operand a recipe keeps in high precision is not quantised and not recorded.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../blockscale/statistics.hpp"
#include "../blockscale/torchao_recipes.hpp"
#include "../gemm/gemm.hpp"
#include "linear.hpp"
#include "operand.hpp"
#include "quantization_record.hpp"

namespace mixprec::ops {
namespace detail {

// f(T{}) with T the fp8 type of the element.
template <class F>
decltype(auto) with_fp8_type(fp8_element e, F f) {
  if (e == fp8_element::e5m2) return f(float8_e5m2{});
  return f(float8_e4m3fn{});
}

// Where scaled_product records the statistics of an operand's cast: nowhere (no sink), or as
// `operand` in `sink`.
struct cast_record {
  statistics_sink* sink = nullptr;
  layer_operand operand = layer_operand::input;
};

// The product op(A) · op(B) (A: ra × ca floats, B: rb × cb floats, row-major; op transposes when
// asked) with each operand cast as its configuration says; M × N floats into c.
template <int = 0>
void scaled_product(const char* gemm_name, const std::vector<float>& a, std::size_t ra, std::size_t ca, transpose ta,
                    const blockscale::operand_cast& cast_a, const std::vector<float>& b, std::size_t rb, std::size_t cb,
                    transpose tb, const blockscale::operand_cast& cast_b, bool pow2, float* c,
                    const cast_record& record_a = {}, const cast_record& record_b = {}) {
  const std::size_t M = ta == transpose::no ? ra : ca, K = ta == transpose::no ? ca : ra;
  const std::size_t N = tb == transpose::no ? cb : rb;
  if (cast_a.high_precision && cast_b.high_precision) {
    gemm(ta, tb, M, N, K, 1.0f, a.data(), ca, b.data(), cb, 0.0f, c, N);
    return;
  }
  // An axis-wise scale along the contraction: rows of an operand used as is for A (columns
  // transposed), columns for B (rows transposed).
  const auto check_axis = [&](const blockscale::operand_cast& cast, bool left, transpose t) {
    if (cast.granularity != blockscale::scaling_granularity::axiswise) return;
    const bool rows_needed = left == (t == transpose::no);
    if ((cast.axis == blockscale::scale_axis::rows) != rows_needed) {
      throw invalid_argument(std::string("torchao_fp8_linear: the ") + gemm_name + " GEMM's " +
                             (left ? "left" : "right") + " operand is scaled by " + to_string(cast.axis) +
                             ", not along the contraction dimension");
    }
  };
  check_axis(cast_a, true, ta);
  check_axis(cast_b, false, tb);
  const blockscale::torchao_scaling scaling_a{cast_a.granularity, cast_a.axis, pow2};
  const blockscale::torchao_scaling scaling_b{cast_b.granularity, cast_b.axis, pow2};
  // The statistics of a cast (rows × cols floats into q with `scales`), where asked for.
  const auto record = [](const cast_record& to, const std::vector<float>& values, std::size_t rows, std::size_t cols,
                         const blockscale::torchao_scaling& scaling, const auto& q, const std::vector<float>& scales) {
    if (to.sink == nullptr) return;
    to.sink->push_back(operand_statistics{
        to.operand, blockscale::torchao_statistics(values.data(), rows, cols, cols, scaling, q.data(), cols, scales)});
  };
  with_fp8_type(cast_a.element, [&](auto ta_tag) {
    using TA = decltype(ta_tag);
    std::vector<TA> qa(ra * ca);
    const std::vector<float> sa = blockscale::torchao_quantize(a.data(), ra, ca, ca, scaling_a, qa.data(), ca);
    record(record_a, a, ra, ca, scaling_a, qa, sa);
    with_fp8_type(cast_b.element, [&](auto tb_tag) {
      using TB = decltype(tb_tag);
      std::vector<TB> qb(rb * cb);
      const std::vector<float> sb = blockscale::torchao_quantize(b.data(), rb, cb, cb, scaling_b, qb.data(), cb);
      record(record_b, b, rb, cb, scaling_b, qb, sb);
      gemm(ta, tb, M, N, K, 1.0f, qa.data(), ca, qb.data(), cb, 0.0f, c, N);
      for (std::size_t i = 0; i < M; ++i) {
        const float si = sa.size() == 1 ? sa[0] : sa[i];
        for (std::size_t j = 0; j < N; ++j) c[i * N + j] = c[i * N + j] / si / (sb.size() == 1 ? sb[0] : sb[j]);
      }
    });
  });
}

template <int = 0>
std::vector<float> row_major_floats(const matrix_view& v) {
  const scratch<float> values = as_floats(v);
  return std::vector<float>(values.data(), values.data() + v.size());
}

}  // namespace detail

template <int = 0>
matrix torchao_fp8_linear(const operand& x, const operand& weight, const operand& bias,
                          const blockscale::linear_cast_config& c, statistics_sink* statistics = nullptr) {
  c.validate();
  detail::check_product_shapes("torchao_fp8_linear", x.view(), weight.view().transposed());
  const std::size_t M = x.rows(), K = x.cols(), N = weight.rows();
  matrix y(dtype::float32, M, N, mixprec::detail::no_fill_t{});  // every element written below
  detail::scaled_product("output", detail::row_major_floats(x.view()), M, K, transpose::no, c.input,
                         detail::row_major_floats(weight.view().transposed()), K, N, transpose::no, c.weight,
                         c.round_scales_to_power_of_2, y.data<float>(), {statistics, layer_operand::input},
                         {statistics, layer_operand::weight});
  if (!bias.view().empty()) {
    detail::check_bias("torchao_fp8_linear", bias.view(), N);
    const std::vector<float> b = detail::row_major_floats(bias.view());
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) y.data<float>()[i * N + j] += b[j];
    }
  }
  return y;
}

template <int = 0>
linear_grads torchao_fp8_linear_backward(const operand& grad_out, const operand& x, const operand& weight,
                                         const operand& bias, const blockscale::linear_cast_config& c,
                                         statistics_sink* statistics = nullptr) {
  c.validate();
  if (grad_out.rows() != x.rows() || grad_out.cols() != weight.rows() || x.cols() != weight.cols()) {
    detail::throw_shape("torchao_fp8_linear_backward", "gradient " + detail::shape_of(grad_out.view()) + ", input " +
                                                           detail::shape_of(x.view()) + ", weight " +
                                                           detail::shape_of(weight.view()));
  }
  const std::size_t M = x.rows(), K = x.cols(), N = weight.rows();
  const std::vector<float> dy = detail::row_major_floats(grad_out.view()), xs = detail::row_major_floats(x.view());
  const std::vector<float> wt = detail::row_major_floats(weight.view().transposed());
  linear_grads g;
  g.input = matrix(dtype::float32, M, K, mixprec::detail::no_fill_t{});
  g.weight = matrix(dtype::float32, N, K, mixprec::detail::no_fill_t{});
  detail::scaled_product("grad_input", dy, M, N, transpose::no, c.grad_output, wt, K, N, transpose::yes,
                         c.weight_for_grad_input, c.round_scales_to_power_of_2, g.input.data<float>(),
                         {statistics, layer_operand::grad_output});
  detail::scaled_product("grad_weight", dy, M, N, transpose::yes, c.grad_output_for_grad_weight, xs, M, K,
                         transpose::no, c.input_for_grad_weight, c.round_scales_to_power_of_2, g.weight.data<float>());
  if (!bias.view().empty()) g.bias = detail::sum_along(grad_out.view(), 0, dtype::float32);
  return g;
}

}  // namespace mixprec::ops
