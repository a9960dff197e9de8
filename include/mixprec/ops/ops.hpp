// The operations that follow autocast (mixprec/autocast/scope.hpp), with their backward: each
// decides its result dtype by its category and rounds once into it (ops/operand.hpp).
//
//   linear.hpp          matmul, linear                       lower_precision
//   activation.hpp      relu, gelu                           fallthrough (the input's dtype)
//   softmax.hpp         softmax, log_softmax, cross_entropy  float32 (fp32_softmax: always)
//   normalization.hpp   layer_norm                           float32 (fp32_layer_norm: always)
//   reduction.hpp       sum, mean, mse_loss                  float32
//   elementwise.hpp     add, sub, mul, div                   promote (the widest input)
//   fp8_linear.hpp      fp8_linear with delayed scaling      fp8 operands, float32 results (no autocast)
//   mx_linear.hpp       mx_linear on OCP MX blocks           MX operands, float32 results (no autocast)
#pragma once

#include "activation.hpp"
#include "elementwise.hpp"
#include "fp8_linear.hpp"
#include "linear.hpp"
#include "mx_linear.hpp"
#include "normalization.hpp"
#include "reduction.hpp"
#include "softmax.hpp"

// The compiled mode (linking mixprec::compiled defines MIXPREC_COMPILED): what the library holds
// of the ops, session and dispatch code, declared extern so that this file does not compile it.
#if defined(MIXPREC_COMPILED)
#include "../compiled/where_called.hpp"
#endif
