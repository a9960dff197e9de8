// A consumer of the installed (or add_subdirectory'd) library: the umbrella header must compile
// and work with nothing but the mixprec::mixprec target (and, built a second time, through
// mixprec::compiled, whose convert_n kernels, operations and session come from the static
// library; the header-only build leaves the training step out, which costs 30 s to compile).
#include <mixprec/mixprec.hpp>

#include <cstdio>

int main() {
  const mixprec::bfloat16 x(3.0f);
  const mixprec::float8_e4m3fn y =
      mixprec::convert<mixprec::float8_e4m3fn>(1e9f, mixprec::rounding::nearest_even, mixprec::overflow::saturate);
  const float in[3] = {1.0f, 3.0f, 1e9f};
  mixprec::float8_e4m3fn out[3];
  mixprec::convert_n(in, 3, out, mixprec::rounding::nearest_even, mixprec::overflow::saturate);
  const bool ok = static_cast<float>(x * x) == 9.0f && y.bits() == 0x7E && out[0].bits() == 0x38 &&
                  out[1].bits() == 0x44 && out[2].bits() == 0x7E;
  std::printf("consumer: bf16 3*3 = %g, e4m3 saturated = 0x%02X, convert_n = 0x%02X 0x%02X 0x%02X: %s\n",
              static_cast<double>(x * x), y.bits(), out[0].bits(), out[1].bits(), out[2].bits(), ok ? "OK" : "WRONG");
#if defined(MIXPREC_COMPILED)
  // One SGD step of w (1×1, 0) on mse_loss(x·w, 1) with x = 2 in a bf16 session: the gradient is
  // x·2·(0 − 1) = −4, so lr 0.125 moves w to 0.5 exactly.
  mixprec::parameter w(mixprec::matrix(mixprec::dtype::float32, 1, 1), "w");
  mixprec::matrix input(mixprec::dtype::float32, 1, 1), target(mixprec::dtype::float32, 1, 1), prediction;
  static_cast<float*>(input.raw_data())[0] = 2.0f;
  static_cast<float*>(target.raw_data())[0] = 1.0f;
  mixprec::precision_session amp{mixprec::parse_recipe("bf16")};
  amp.add_parameter(w);
  amp.use_optimizer(mixprec::optim::sgd(mixprec::optim::sgd_options{0.125f}));
  amp.train_step(
      [&] {
        prediction = mixprec::ops::matmul(input, w);
        return mixprec::ops::mse_loss(prediction, target);
      },
      [&](const mixprec::backward_context& b) {
        const auto dy = mixprec::ops::mse_loss_backward(prediction, target, b.loss_gradient);
        amp.accumulate_gradient(w, mixprec::ops::matmul_backward(dy, input, w).b);
      });
  const float trained = w.value().to(mixprec::dtype::float32).value(0, 0);
  std::printf("consumer: one bf16 SGD step moves w from 0 to %g: %s\n", static_cast<double>(trained),
              trained == 0.5f ? "OK" : "WRONG");
  if (trained != 0.5f) return 1;
#endif
  return ok ? 0 : 1;
}
