// The network train_digits trains: an MLP 64 → H (× L) → 10 with ReLU (by default H = 128,
// L = 2: 64-128-128-10), written with mixprec::ops so that one piece of code runs in every
// precision.
//
//   forward:  z1 = x·W1ᵀ + b1   h1 = relu(z1)   ...   zL = h(L-1)·WLᵀ + bL   hL = relu(zL)
//             logits = hL·W(L+1)ᵀ + b(L+1)          loss = cross_entropy(logits, labels)
//   backward: the same steps in reverse, through the ops' backward functions.
//
// The weights are float32 master copies (mixprec::parameter).  How the L + 1 linear layers
// compute depends on the precision:
//   fp32, fp16, bf16   ops::linear under the caller's autocast scope: in fp16/bf16 the layers
//                      take cast weights (cast once per step: the autocast cache) and return
//                      fp16/bf16 activations; softmax and the loss stay in float32
//   fp8                ops::fp8_linear with Transformer Engine's delayed scaling (HYBRID: e4m3
//                      activations and weights, e5m2 gradients)
//   mxfp8              ops::mx_linear: OCP MX blocks of 32 with e8m0 scales (e4m3 forward, e5m2
//                      gradients)
//   fp8_block          ops::fp8_block_linear: Transformer Engine's Float8BlockScaling (DeepSeek-V3's
//                      recipe): e4m3 everywhere, 1×128 blocks for activations and gradients,
//                      128×128 for weights, power-of-two scales
//   nvfp4              ops::nvfp4_linear: Transformer Engine's NVFP4BlockScaling: e2m1 elements with
//                      an e4m3 scale per 16 and a float per tensor, 16×16 weight tiles, the
//                      weight-gradient operands Hadamard-transformed, gradients rounded
//                      stochastically (a stream per layer and step under the run's seed)
//   fp8_rowwise        ops::torchao_fp8_linear: torchao's ROWWISE recipe (e4m3 operands scaled per
//                      row or column along each GEMM's K, power-of-two scales)
//   mxfp4              ops::mx_linear with e2m1 elements for every operand (OCP MX blocks of 32,
//                      rounding to nearest)
#pragma once

#include <mixprec/mixprec.hpp>
#include <mixprec/ops/fp8_block_linear.hpp>
#include <mixprec/ops/nvfp4_linear.hpp>
#include <mixprec/ops/torchao_fp8_linear.hpp>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "common/random.hpp"

namespace train_digits {

namespace ops = mixprec::ops;
using mixprec::dtype;
using mixprec::matrix;
using mixprec::parameter;

enum class precision { fp32, fp16, bf16, fp8, mxfp8, fp8_block, nvfp4, fp8_rowwise, mxfp4 };

struct layer_sizes {
  std::size_t input = 64, hidden = 128, hidden_layers = 2, classes = 10;
  std::size_t linear_layers() const { return hidden_layers + 1; }
};

// What the forward pass keeps for the backward pass: z[l] and h[l] = relu(z[l]) of every hidden
// layer, and the logits.
struct activations {
  std::vector<matrix> z, h;
  matrix logits;
  std::size_t bytes() const {
    std::size_t total = logits.bytes();
    for (std::size_t l = 0; l < z.size(); ++l) total += z[l].bytes() + h[l].bytes();
    return total;
  }
};

class mlp {
 public:
  // He-uniform weights (bound √(6 / fan_in)), zero biases, from a seeded generator.
  mlp(const layer_sizes& sizes, std::uint64_t seed) : seed_(seed) {
    mixprec_example::reproducible_random random(seed);
    for (std::size_t l = 0; l < sizes.linear_layers(); ++l) {
      const std::size_t fan_in = l == 0 ? sizes.input : sizes.hidden;
      const std::size_t fan_out = l == sizes.hidden_layers ? sizes.classes : sizes.hidden;
      matrix w(dtype::float32, fan_out, fan_in);
      const double bound = std::sqrt(6.0 / static_cast<double>(fan_in));
      for (std::size_t k = 0; k < w.size(); ++k) {
        w.data<float>()[k] = static_cast<float>((2 * random.uniform() - 1) * bound);
      }
      weights_.emplace_back(std::move(w), "fc" + std::to_string(l + 1) + ".weight");
      biases_.emplace_back(matrix(dtype::float32, 1, fan_out), "fc" + std::to_string(l + 1) + ".bias");
    }
  }

  std::size_t layers() const { return weights_.size(); }

  parameter& weight(std::size_t l) { return weights_[l]; }
  parameter& bias(std::size_t l) { return biases_[l]; }
  const parameter& weight(std::size_t l) const { return weights_[l]; }
  const parameter& bias(std::size_t l) const { return biases_[l]; }
  std::size_t master_bytes() const {
    std::size_t bytes = 0;
    for (std::size_t l = 0; l < layers(); ++l) bytes += weights_[l].value().bytes() + biases_[l].value().bytes();
    return bytes;
  }

  // One layer's forward, in the precision's own way.
  // A layer with a precision override (--override) runs ops::linear in the override's dtype in
  // every precision (as mixprec::session_linear does; ops::fp8_linear falls back by itself).
  matrix linear(std::size_t l, const matrix& x, precision p, ops::fp8_training* fp8) const {
    if (weights_[l].precision_override()) return ops::linear(x, weights_[l], biases_[l]);
    switch (p) {
      case precision::fp8:
        return ops::fp8_linear(x, weights_[l], biases_[l], *fp8, l);
      case precision::mxfp8:
        return ops::mx_linear<mixprec::float8_e4m3fn>(x, weights_[l], biases_[l]);
      case precision::mxfp4:
        return ops::mx_linear<mixprec::float4_e2m1fn>(x, weights_[l], biases_[l]);
      case precision::fp8_block:
        return ops::fp8_block_linear(x, weights_[l], biases_[l]);
      case precision::nvfp4:
        return ops::nvfp4_linear(x, weights_[l], biases_[l]);
      case precision::fp8_rowwise:
        return ops::torchao_fp8_linear(x, weights_[l], biases_[l], rowwise_recipe());
      default:
        return ops::linear(x, weights_[l], biases_[l]);
    }
  }
  // step: the optimizer step, which (with the layer and the seed) keys NVFP4's stochastic rounding.
  ops::linear_grads linear_backward(std::size_t l, const matrix& dy, const matrix& x, precision p,
                                    ops::fp8_training* fp8, std::uint32_t step) const {
    if (weights_[l].precision_override()) return ops::linear_backward(dy, x, weights_[l], biases_[l]);
    switch (p) {
      case precision::fp8:
        return ops::fp8_linear_backward(dy, x, weights_[l], biases_[l], *fp8, l);
      case precision::mxfp8:
        return ops::mx_linear_backward<mixprec::float8_e5m2, mixprec::float8_e4m3fn>(dy, x, weights_[l], biases_[l]);
      case precision::mxfp4:
        return ops::mx_linear_backward<mixprec::float4_e2m1fn, mixprec::float4_e2m1fn>(dy, x, weights_[l], biases_[l]);
      case precision::fp8_block:
        return ops::fp8_block_linear_backward(dy, x, weights_[l], biases_[l]);
      case precision::fp8_rowwise:
        return ops::torchao_fp8_linear_backward(dy, x, weights_[l], biases_[l], rowwise_recipe());
      case precision::nvfp4: {
        ops::nvfp4_linear_options o;
        o.gradient_rounding.seed = seed_;
        o.gradient_rounding.tensor_id = static_cast<std::uint32_t>(l);
        o.gradient_rounding.step = step;
        return ops::nvfp4_linear_backward(dy, x, weights_[l], biases_[l], o);
      }
      default:
        return ops::linear_backward(dy, x, weights_[l], biases_[l]);
    }
  }

  activations forward(const matrix& x, precision p, ops::fp8_training* fp8) const {
    activations a;
    const std::size_t hidden = layers() - 1;
    for (std::size_t l = 0; l < hidden; ++l) {
      a.z.push_back(linear(l, l == 0 ? x : a.h[l - 1], p, fp8));
      a.h.push_back(ops::relu(a.z[l]));
    }
    a.logits = linear(hidden, hidden == 0 ? x : a.h[hidden - 1], p, fp8);
    return a;
  }

  // The gradients of every weight and bias for d loss / d logits = cross_entropy_backward(...,
  // grad_loss): grads[l] for layer l.
  std::vector<ops::linear_grads> backward(const activations& a, const matrix& x, const std::vector<int>& labels,
                                          float grad_loss, precision p, ops::fp8_training* fp8,
                                          std::uint32_t step = 0) const {
    std::vector<ops::linear_grads> g(layers());
    const std::size_t last = layers() - 1;
    matrix dy = ops::cross_entropy_backward(a.logits, labels, grad_loss);
    for (std::size_t l = last + 1; l-- > 0;) {
      g[l] = linear_backward(l, dy, l == 0 ? x : a.h[l - 1], p, fp8, step);
      if (l > 0) dy = ops::relu_backward(g[l].input, a.z[l - 1]);
    }
    return g;
  }

 private:
  static const mixprec::blockscale::linear_cast_config& rowwise_recipe() {
    static const auto c = mixprec::blockscale::linear_cast_config_for(mixprec::blockscale::torchao_recipe::rowwise);
    return c;
  }

  std::uint64_t seed_;
  std::vector<parameter> weights_, biases_;
};

// Per layer, the weight-gradient elements that the low precision flushed to zero (zero in
// `grads` while a float32 backward from the same forward values is not), and those that the
// float32 backward made nonzero.
struct flush_count {
  std::size_t flushed = 0, nonzero = 0;
  double share() const { return nonzero == 0 ? 0.0 : static_cast<double>(flushed) / static_cast<double>(nonzero); }
};

inline std::vector<flush_count> flushed_by_layer(const mlp& model, const activations& a, const matrix& x,
                                                 const std::vector<int>& labels, float grad_loss,
                                                 const std::vector<ops::linear_grads>& grads) {
  activations as_float;
  for (std::size_t l = 0; l < a.z.size(); ++l) {
    as_float.z.push_back(a.z[l].to(dtype::float32));
    as_float.h.push_back(a.h[l].to(dtype::float32));
  }
  as_float.logits = a.logits.to(dtype::float32);
  mixprec::autocast_disabled off;
  const auto reference = model.backward(as_float, x, labels, grad_loss, precision::fp32, nullptr);
  std::vector<flush_count> counts(model.layers());
  for (std::size_t l = 0; l < model.layers(); ++l) {
    // The gradients are in the parameters' dtype (fp16/bf16 under --cast-model): read as floats.
    const matrix got_values = grads[l].weight.to(dtype::float32), want_values = reference[l].weight.to(dtype::float32);
    const float* got = got_values.data<float>();
    const float* want = want_values.data<float>();
    for (std::size_t k = 0; k < grads[l].weight.size(); ++k) {
      counts[l].flushed += got[k] == 0.0f && want[k] != 0.0f ? 1 : 0;
      counts[l].nonzero += want[k] != 0.0f ? 1 : 0;
    }
  }
  return counts;
}

// The share over all layers.
inline double flushed_share(const std::vector<flush_count>& counts) {
  flush_count all;
  for (const flush_count& c : counts) {
    all.flushed += c.flushed;
    all.nonzero += c.nonzero;
  }
  return all.share();
}

}  // namespace train_digits
