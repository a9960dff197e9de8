// Prints, one per line, the JSON of the session's quantisation statistics records
// (to_json(layer_quantization_record)) from every quantising recipe, with a NaN in the input of
// one step so that non-finite values appear.  tests/docs/quantization_statistics_schema_check.py
// validates every line against docs/schemas/quantization_statistics.schema.json.
#include <mixprec/session/linear.hpp>
#include <mixprec/session/session.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

using namespace mixprec;

namespace {

matrix pattern(std::size_t rows, std::size_t cols, float step) {
  matrix m(dtype::float32, rows, cols);
  for (std::size_t i = 0; i < m.size(); ++i) m.data<float>()[i] = std::sin(step * static_cast<float>(i) + 0.3f);
  return m;
}

}  // namespace

int main() {
  for (const char* name : {"fp8", "mxfp8", "fp8_block", "nvfp4", "mxfp4"}) {
    precision_session amp{parse_recipe(std::string("recipe=") + name)};
    parameter w{pattern(16, 48, 0.37f), "fc.weight"};
    amp.add_parameter(w);
    amp.use_optimizer(optim::sgd(optim::sgd_options{0.01f}));
    if (amp.get_recipe().precision == precision_mode::float8) amp.use_fp8_layers(1);
    amp.collect_quantization_statistics({});
    amp.on_quantization_statistics([](const layer_quantization_record& r) { std::puts(to_json(r).c_str()); });
    for (int step = 0; step < 2; ++step) {
      matrix x = pattern(32, 48, 0.23f);
      if (step == 1) x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
      amp.train_step(
          [&] {
            session_linear(amp, 0, x, w);
            return 0.0f;
          },
          [&](const backward_context&) {
            const ops::linear_grads g = session_linear_backward(amp, 0, pattern(32, 16, 0.05f), x, w);
            amp.accumulate_gradient(w, g.weight);
          });
    }
  }
}
