// Compile-time probe: what a small training program compiles. An MLP 64 -> 32 (ReLU) -> 10 of
// mixprec::parameter, forward and backward through mixprec::ops, one precision_session with
// SGD, and train_step under the bf16 recipe.
#include <mixprec/mixprec.hpp>

#include <cstddef>
#include <vector>

int main() {
  using namespace mixprec;
  parameter w1(matrix(dtype::float32, 32, 64), "fc1.weight"), b1(matrix(dtype::float32, 1, 32), "fc1.bias");
  parameter w2(matrix(dtype::float32, 10, 32), "fc2.weight"), b2(matrix(dtype::float32, 1, 10), "fc2.bias");
  precision_session amp{parse_recipe("bf16")};
  for (parameter* p : {&w1, &b1, &w2, &b2}) amp.add_parameter(*p);
  amp.use_optimizer(optim::sgd(optim::sgd_options{0.1f}));
  const matrix x(dtype::float32, 8, 64);
  const std::vector<int> y(8, 3);
  matrix h1, a1, logits;
  const step_result r = amp.train_step(
      [&] {
        h1 = ops::linear(x, w1, b1);
        a1 = ops::relu(h1);
        logits = ops::linear(a1, w2, b2);
        return ops::cross_entropy(logits, y);
      },
      [&](const backward_context& b) {
        const matrix dlogits = ops::cross_entropy_backward(logits, y, b.loss_gradient);
        const ops::linear_grads g2 = ops::linear_backward(dlogits, a1, w2, b2);
        amp.accumulate_gradient(w2, g2.weight);
        amp.accumulate_gradient(b2, g2.bias);
        const ops::linear_grads g1 = ops::linear_backward(ops::relu_backward(g2.input, h1), x, w1, b1);
        amp.accumulate_gradient(w1, g1.weight);
        amp.accumulate_gradient(b1, g1.bias);
      });
  return r.skipped ? 1 : 0;
}
