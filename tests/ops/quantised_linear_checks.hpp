// A quantised linear layer (mx_linear, fp8_block_linear, nvfp4_linear) against the float32 layer
// of the same operands: the relative (Frobenius) errors of the output and of the input and weight
// gradients under their bounds, and the bias gradient, a float sum of dy's rows in both, equal.
#pragma once

#include <mixprec/ops/linear.hpp>

#include <catch2/catch.hpp>

#include "ops_reference.hpp"

namespace ops_test {

inline void check_near_float_linear(const mixprec::matrix& y, const mixprec::ops::linear_grads& g,
                                    const mixprec::matrix& x, const mixprec::matrix& w, const mixprec::matrix& bias,
                                    const mixprec::matrix& dy, double output_bound, double gradient_bound) {
  CHECK(relative_error(y, mixprec::ops::linear(x, w, bias)) < output_bound);
  const mixprec::ops::linear_grads exact = mixprec::ops::linear_backward(dy, x, w, bias);
  CHECK(relative_error(g.input, exact.input) < gradient_bound);
  CHECK(relative_error(g.weight, exact.weight) < gradient_bound);
  REQUIRE(g.bias.cols() == exact.bias.cols());
  CHECK(relative_error(g.bias, exact.bias) == 0);
}

}  // namespace ops_test
