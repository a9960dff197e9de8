// The network train_digits trains: an MLP 64-128-128-10 with ReLU, written with mixprec::ops
// so that one piece of code runs in every precision.
//
//   forward:  z1 = x·W1ᵀ + b1   h1 = relu(z1)   z2 = h1·W2ᵀ + b2   h2 = relu(z2)
//             logits = h2·W3ᵀ + b3                loss = cross_entropy(logits, labels)
//   backward: the same steps in reverse, through the ops' backward functions.
//
// The weights are float32 master copies (mixprec::parameter).  How the three linear layers
// compute depends on the precision:
//   fp32, fp16, bf16   ops::linear under the caller's autocast scope: in fp16/bf16 the layers
//                      take cast weights (cast once per step: the autocast cache) and return
//                      fp16/bf16 activations; softmax and the loss stay in float32
//   fp8                ops::fp8_linear with Transformer Engine's delayed scaling (HYBRID: e4m3
//                      activations and weights, e5m2 gradients)
//   mxfp8              ops::mx_linear: OCP MX blocks of 32 with e8m0 scales (e4m3 forward, e5m2
//                      gradients)
#pragma once

#include <mixprec/mixprec.hpp>

#include <array>
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

enum class precision { fp32, fp16, bf16, fp8, mxfp8 };

// The autocast dtype of a precision (float32: autocast off; fp8 and MX layers do not use it).
inline dtype autocast_dtype(precision p) {
  return p == precision::fp16 ? dtype::float16 : p == precision::bf16 ? dtype::bfloat16 : dtype::float32;
}

struct layer_sizes {
  std::size_t input = 64, hidden1 = 128, hidden2 = 128, classes = 10;
};

// What the forward pass keeps for the backward pass.
struct activations {
  matrix z1, h1, z2, h2, logits;
  std::size_t bytes() const { return z1.bytes() + h1.bytes() + z2.bytes() + h2.bytes() + logits.bytes(); }
};

class mlp {
 public:
  static constexpr std::size_t layers = 3;

  // He-uniform weights (bound √(6 / fan_in)), zero biases, from a seeded generator.
  mlp(const layer_sizes& sizes, std::uint64_t seed) {
    const std::size_t fan_in[layers] = {sizes.input, sizes.hidden1, sizes.hidden2};
    const std::size_t fan_out[layers] = {sizes.hidden1, sizes.hidden2, sizes.classes};
    mixprec_example::reproducible_random random(seed);
    for (std::size_t l = 0; l < layers; ++l) {
      matrix w(dtype::float32, fan_out[l], fan_in[l]);
      const double bound = std::sqrt(6.0 / static_cast<double>(fan_in[l]));
      for (std::size_t k = 0; k < w.size(); ++k) {
        w.data<float>()[k] = static_cast<float>((2 * random.uniform() - 1) * bound);
      }
      weights_.emplace_back(std::move(w), "fc" + std::to_string(l + 1) + ".weight");
      biases_.emplace_back(matrix(dtype::float32, 1, fan_out[l]), "fc" + std::to_string(l + 1) + ".bias");
    }
  }

  parameter& weight(std::size_t l) { return weights_[l]; }
  parameter& bias(std::size_t l) { return biases_[l]; }
  const parameter& weight(std::size_t l) const { return weights_[l]; }
  const parameter& bias(std::size_t l) const { return biases_[l]; }
  std::size_t master_bytes() const {
    std::size_t bytes = 0;
    for (std::size_t l = 0; l < layers; ++l) bytes += weights_[l].value().bytes() + biases_[l].value().bytes();
    return bytes;
  }

  // One layer's forward, in the precision's own way.
  matrix linear(std::size_t l, const matrix& x, precision p, ops::fp8_training* fp8) const {
    switch (p) {
      case precision::fp8:
        return ops::fp8_linear(x, weights_[l], biases_[l], *fp8, l);
      case precision::mxfp8:
        return ops::mx_linear<mixprec::float8_e4m3fn>(x, weights_[l], biases_[l]);
      default:
        return ops::linear(x, weights_[l], biases_[l]);
    }
  }
  ops::linear_grads linear_backward(std::size_t l, const matrix& dy, const matrix& x, precision p,
                                    ops::fp8_training* fp8) const {
    switch (p) {
      case precision::fp8:
        return ops::fp8_linear_backward(dy, x, weights_[l], biases_[l], *fp8, l);
      case precision::mxfp8:
        return ops::mx_linear_backward<mixprec::float8_e5m2, mixprec::float8_e4m3fn>(dy, x, weights_[l], biases_[l]);
      default:
        return ops::linear_backward(dy, x, weights_[l], biases_[l]);
    }
  }

  activations forward(const matrix& x, precision p, ops::fp8_training* fp8) const {
    activations a;
    a.z1 = linear(0, x, p, fp8);
    a.h1 = ops::relu(a.z1);
    a.z2 = linear(1, a.h1, p, fp8);
    a.h2 = ops::relu(a.z2);
    a.logits = linear(2, a.h2, p, fp8);
    return a;
  }

  // The gradients of every weight and bias for d loss / d logits = cross_entropy_backward(...,
  // grad_loss): grads[l] for layer l.
  std::array<ops::linear_grads, layers> backward(const activations& a, const matrix& x, const std::vector<int>& labels,
                                                 float grad_loss, precision p, ops::fp8_training* fp8) const {
    std::array<ops::linear_grads, layers> g;
    const matrix dlogits = ops::cross_entropy_backward(a.logits, labels, grad_loss);
    g[2] = linear_backward(2, dlogits, a.h2, p, fp8);
    g[1] = linear_backward(1, ops::relu_backward(g[2].input, a.z2), a.h1, p, fp8);
    g[0] = linear_backward(0, ops::relu_backward(g[1].input, a.z1), x, p, fp8);
    return g;
  }

 private:
  std::vector<parameter> weights_, biases_;
};

// The share of weight-gradient elements that the low precision flushed to zero: zero in `grads`
// while a float32 backward from the same forward values is not.
inline double flushed_share(const mlp& model, const activations& a, const matrix& x, const std::vector<int>& labels,
                            float grad_loss, const std::array<ops::linear_grads, mlp::layers>& grads) {
  activations as_float;
  for (auto [from, to] :
       {std::pair{&a.z1, &as_float.z1}, std::pair{&a.h1, &as_float.h1}, std::pair{&a.z2, &as_float.z2},
        std::pair{&a.h2, &as_float.h2}, std::pair{&a.logits, &as_float.logits}}) {
    *to = from->to(dtype::float32);
  }
  mixprec::autocast_disabled off;
  const auto reference = model.backward(as_float, x, labels, grad_loss, precision::fp32, nullptr);
  std::size_t flushed = 0, total = 0;
  for (std::size_t l = 0; l < mlp::layers; ++l) {
    const float* got = grads[l].weight.data<float>();
    const float* want = reference[l].weight.data<float>();
    for (std::size_t k = 0; k < grads[l].weight.size(); ++k) {
      flushed += got[k] == 0.0f && want[k] != 0.0f ? 1 : 0;
      total += want[k] != 0.0f ? 1 : 0;
    }
  }
  return total == 0 ? 0.0 : static_cast<double>(flushed) / static_cast<double>(total);
}

}  // namespace train_digits
