// session/linear.hpp: session_linear runs the linear layer of the active recipe's precision (the
// ops function written out, bit for bit), ops::linear for an overridden layer, and keys nvfp4's
// stochastic rounding by (seed, micro-batch and layer, completed steps); the block-scaled
// precisions read, write back and validate as recipes.
#include <mixprec/session/linear.hpp>
#include <mixprec/session/session.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace mixprec;

namespace {

constexpr std::size_t batch = 24, inputs = 40, outputs = 20;

matrix pattern(std::size_t rows, std::size_t cols, float step, float scale) {
  matrix m(dtype::float32, rows, cols);
  for (std::size_t i = 0; i < m.size(); ++i) m.data<float>()[i] = scale * std::sin(step * static_cast<float>(i) + 0.3f);
  return m;
}

bool same(const matrix& a, const matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && a.type() == b.type() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

struct layer {
  parameter weight{pattern(outputs, inputs, 0.37f, 0.3f), "fc.weight"};
  parameter bias{pattern(1, outputs, 0.11f, 0.1f), "fc.bias"};
  void register_with(precision_session& amp) {
    amp.add_parameter(weight);
    amp.add_parameter(bias);
  }
};

// One SGD step of a linear layer with a squared loss through session_linear; returns the weight
// gradient of the step.
std::vector<float> train_once(precision_session& amp, layer& l, const matrix& x) {
  matrix y;
  amp.train_step(
      [&] {
        y = session_linear(amp, 0, x, l.weight, l.bias);
        return 0.0f;
      },
      [&](const backward_context& b) {
        const matrix dy = pattern(batch, outputs, 0.05f, 1e-2f * b.loss_gradient);
        const ops::linear_grads g = session_linear_backward(amp, 0, dy, x, l.weight, l.bias);
        amp.accumulate_gradient(l.weight, g.weight);
        amp.accumulate_gradient(l.bias, g.bias);
      });
  const float* g = amp.gradient(l.weight);
  return std::vector<float>(g, g + outputs * inputs);
}

}  // namespace

TEST_CASE("mx_weight_scales=tile gives the MX layers 32 x 32 weight tiles", "[session][linear]") {
  const matrix x = pattern(batch, inputs, 0.23f, 1.0f), dy = pattern(batch, outputs, 0.05f, 1e-2f);
  ops::mx_linear_options tiles;
  tiles.weight_scales = mx_scale_sharing::tile;
  for (const char* name : {"mxfp8", "mxfp4"}) {
    INFO(name);
    precision_session tiled{parse_recipe(std::string("recipe=") + name + ", mx_weight_scales=tile")};
    precision_session blocks{parse_recipe(std::string("recipe=") + name)};
    CHECK(tiled.get_recipe().mx_weight_scales == mx_scale_sharing::tile);
    CHECK(blocks.get_recipe().mx_weight_scales == mx_scale_sharing::block);
    // Rows of magnitudes 2^0, 2^6, 2^12, 2^18: a row's block and its tile have different amaxes.
    const auto vary_rows = [](layer& k) {
      k.weight.modify([](matrix& w) {
        for (std::size_t i = 0; i < w.size(); ++i)
          w.data<float>()[i] *= static_cast<float>(1u << (6 * (i / inputs % 4)));
      });
    };
    layer l;
    vary_rows(l);
    l.register_with(tiled);
    const matrix y = session_linear(tiled, 0, x, l.weight, l.bias);
    const ops::linear_grads g = session_linear_backward(tiled, 0, dy, x, l.weight, l.bias);
    const bool fp8 = tiled.get_recipe().precision == precision_mode::mxfp8;
    const matrix want_y = fp8 ? ops::mx_linear<float8_e4m3fn>(x, l.weight, l.bias, tiles)
                              : ops::mx_linear<float4_e2m1fn>(x, l.weight, l.bias, tiles);
    const ops::linear_grads want =
        fp8 ? ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(dy, x, l.weight, l.bias, tiles)
            : ops::mx_linear_backward<float4_e2m1fn, float4_e2m1fn>(dy, x, l.weight, l.bias, tiles);
    CHECK(same(y, want_y));
    CHECK(same(g.input, want.input));
    CHECK(same(g.weight, want.weight));
    // The per-block layer is another function of the same operands.
    layer m;
    vary_rows(m);
    m.register_with(blocks);
    CHECK_FALSE(same(session_linear(blocks, 0, x, m.weight, m.bias), y));
  }
  CHECK(settings_text(parse_recipe("recipe=mxfp8, mx_weight_scales=tile")).find("mx_weight_scales=tile") !=
        std::string::npos);
  CHECK(parse_recipe("--recipe mxfp8 --mx-weight-scales tile").mx_weight_scales == mx_scale_sharing::tile);
  CHECK(parse_recipe(R"({"recipe": "mxfp4", "mx_weight_scales": "tile"})").mx_weight_scales == mx_scale_sharing::tile);
  CHECK_THROWS_WITH(parse_recipe("recipe=mxfp8, mx_weight_scales=row"),
                    Catch::Contains("mx_weight_scales is 'row'; allowed: block, tile"));
}

TEST_CASE("session_linear runs the ops function of the recipe's precision", "[session][linear]") {
  const matrix x = pattern(batch, inputs, 0.23f, 1.0f), dy = pattern(batch, outputs, 0.05f, 1e-2f);
  for (const char* name : {"fp32", "bf16", "fp8", "mxfp8", "fp8_block", "nvfp4", "fp8_rowwise", "mxfp4"}) {
    INFO(name);
    precision_session amp{parse_recipe(std::string("recipe=") + name + ", seed=9")};
    layer l;
    l.register_with(amp);
    if (amp.get_recipe().precision == precision_mode::float8) amp.use_fp8_layers(1);
    const matrix y = session_linear(amp, 0, x, l.weight, l.bias);
    const ops::linear_grads g = session_linear_backward(amp, 0, dy, x, l.weight, l.bias);
    matrix want_y;
    ops::linear_grads want;
    switch (amp.get_recipe().precision) {
      case precision_mode::mxfp8:
        want_y = ops::mx_linear<float8_e4m3fn>(x, l.weight, l.bias);
        want = ops::mx_linear_backward<float8_e5m2, float8_e4m3fn>(dy, x, l.weight, l.bias);
        break;
      case precision_mode::mxfp4:
        want_y = ops::mx_linear<float4_e2m1fn>(x, l.weight, l.bias);
        want = ops::mx_linear_backward<float4_e2m1fn, float4_e2m1fn>(dy, x, l.weight, l.bias);
        break;
      case precision_mode::fp8_block:
        want_y = ops::fp8_block_linear(x, l.weight, l.bias);
        want = ops::fp8_block_linear_backward(dy, x, l.weight, l.bias);
        break;
      case precision_mode::fp8_rowwise: {
        const auto c = blockscale::linear_cast_config_for(blockscale::torchao_recipe::rowwise);
        want_y = ops::torchao_fp8_linear(x, l.weight, l.bias, c);
        want = ops::torchao_fp8_linear_backward(dy, x, l.weight, l.bias, c);
        break;
      }
      case precision_mode::nvfp4: {
        ops::nvfp4_linear_options o;
        o.gradient_rounding.seed = 9;
        want_y = ops::nvfp4_linear(x, l.weight, l.bias, o);
        want = ops::nvfp4_linear_backward(dy, x, l.weight, l.bias, o);
        break;
      }
      case precision_mode::float8: {
        // A fresh delayed-scaling state: the session's has run one forward and one backward.
        ops::fp8_training fp8(amp.get_recipe().fp8_policy(), 1);
        want_y = ops::fp8_linear(x, l.weight, l.bias, fp8, 0);
        want = ops::fp8_linear_backward(dy, x, l.weight, l.bias, fp8, 0);
        break;
      }
      default:  // outside train_step no autocast scope is active: float32
        want_y = ops::linear(x, l.weight, l.bias);
        want = ops::linear_backward(dy, x, l.weight, l.bias);
    }
    CHECK(same(y, want_y));
    CHECK(same(g.input, want.input));
    CHECK(same(g.weight, want.weight));
    CHECK(same(g.bias, want.bias));
  }
}

TEST_CASE("session_linear: an overridden layer runs ops::linear in the override's dtype", "[session][linear]") {
  const matrix x = pattern(batch, inputs, 0.23f, 1.0f), dy = pattern(batch, outputs, 0.05f, 1e-2f);
  precision_session amp{parse_recipe("recipe=nvfp4, override=fc:bf16")};
  layer l;
  l.register_with(amp);
  amp.apply_overrides();
  REQUIRE(l.weight.precision_override() == dtype::bfloat16);
  const matrix y = session_linear(amp, 0, x, l.weight, l.bias);
  CHECK(y.type() == dtype::bfloat16);
  CHECK(same(y, ops::linear(x, l.weight, l.bias)));
  CHECK(same(session_linear_backward(amp, 0, dy, x, l.weight, l.bias).weight,
             ops::linear_backward(dy, x, l.weight, l.bias).weight));
  CHECK_THROWS_WITH(parse_recipe("recipe=nvfp4, override=fc:fp8"),
                    Catch::Contains("fp8 layers need the fp8 recipe's delayed scaling"));
}

TEST_CASE("session_linear: nvfp4's rounding stream follows the step, and a resumed session draws the same bits",
          "[session][linear]") {
  const matrix x = pattern(batch, inputs, 0.23f, 1.0f);
  precision_session amp{parse_recipe("recipe=nvfp4, seed=5")};
  layer l;
  l.register_with(amp);
  amp.use_optimizer(optim::sgd(optim::sgd_options{0.01f}));
  const std::vector<float> first = train_once(amp, l, x);
  CHECK(amp.completed_steps() == 1);
  const std::vector<std::uint8_t> saved = amp.save_state();
  const std::vector<float> second = train_once(amp, l, x);
  CHECK(first != second);

  precision_session resumed{parse_recipe("recipe=nvfp4, seed=5")};
  layer r;
  r.register_with(resumed);
  resumed.use_optimizer(optim::sgd(optim::sgd_options{0.01f}));
  resumed.load_state(saved);
  CHECK(resumed.completed_steps() == 1);
  CHECK(train_once(resumed, r, x) == second);
}

TEST_CASE("the block-scaled precisions as recipes", "[session][linear][recipe]") {
  for (const char* name : {"mxfp8", "fp8_block", "nvfp4", "fp8_rowwise", "mxfp4"}) {
    INFO(name);
    const recipe r = parse_recipe(std::string("recipe=") + name);
    CHECK(to_string(r.precision) == std::string(name));
    CHECK(is_block_scaled(r.precision));
    CHECK(r.scaling == loss_scaling_mode::none);
    CHECK_FALSE(r.autocast);
    CHECK(parse_recipe(to_string(r)).precision == r.precision);
    CHECK(parse_recipe(std::string("precision=") + name + ", autocast=true").working_dtype() == dtype::bfloat16);
    CHECK_THROWS_WITH(parse_recipe(std::string("recipe=") + name + ", cast_model=true"),
                      Catch::Contains(std::string("cast_model=true with precision=") + name +
                                      ": its weights are quantised per step"));
    precision_session amp{r};
    CHECK(amp.describe().find("block-scaled linear layers") != std::string::npos);
    const recipe_resolution used = resolve(r, capabilities{});
    CHECK_FALSE(used.fell_back);
    CHECK(used.message.find("runs emulated") != std::string::npos);
  }
  CHECK_THROWS_WITH(parse_recipe("recipe=nvfp4, cast_model=true"),
                    Catch::Contains("cast_model=true with precision=nvfp4: its weights are quantised per step"));
  precision_session amp{parse_recipe("nvfp4")};
  layer l;
  CHECK_THROWS_WITH(session_linear(amp, 70000, matrix(dtype::float32, 1, inputs), l.weight),
                    Catch::Contains("session_linear: layer 70000 is above 65535"));
}

namespace {

// Two layers, x (batch × inputs) -> layer 0 -> h (batch × outputs) -> layer 1 -> y, trained
// `steps` steps with a fixed output gradient; `seen_h` gets h of every step.
struct two_layers {
  layer first;
  parameter weight{pattern(outputs, outputs, 0.29f, 0.2f), "out.weight"};
  void register_with(precision_session& amp) {
    first.register_with(amp);
    amp.add_parameter(weight);
    if (amp.get_recipe().precision == precision_mode::float8) amp.use_fp8_layers(2);
    amp.use_optimizer(optim::sgd(optim::sgd_options{0.05f}));
  }
  void train(precision_session& amp, int steps, std::vector<matrix>* seen_h = nullptr) {
    const matrix x = pattern(batch, inputs, 0.23f, 1.0f);
    for (int s = 0; s < steps; ++s) {
      matrix h;
      amp.train_step(
          [&] {
            h = session_linear(amp, 0, x, first.weight, first.bias);
            if (seen_h != nullptr) seen_h->push_back(h);
            session_linear(amp, 1, h, weight);
            return 0.0f;
          },
          [&](const backward_context& b) {
            const matrix dy = pattern(batch, outputs, 0.05f + 0.01f * static_cast<float>(s), 1e-2f * b.loss_gradient);
            const ops::linear_grads g1 = session_linear_backward(amp, 1, dy, h, weight);
            amp.accumulate_gradient(weight, g1.weight);
            const ops::linear_grads g0 = session_linear_backward(amp, 0, g1.input, x, first.weight, first.bias);
            amp.accumulate_gradient(first.weight, g0.weight);
            amp.accumulate_gradient(first.bias, g0.bias);
          });
    }
  }
};

}  // namespace

TEST_CASE("quantisation statistics of the session's layers: the steps, layers and operands asked for",
          "[session][linear][statistics]") {
  for (const char* name : {"fp8", "mxfp8", "fp8_block", "nvfp4", "fp8_rowwise", "mxfp4"}) {
    INFO(name);
    precision_session amp{parse_recipe(std::string("recipe=") + name + ", seed=3")};
    two_layers model;
    model.register_with(amp);
    quantization_statistics_options o;
    o.every = 2;
    o.start_step = 1;
    o.end_step = 3;
    o.layers = {1};
    amp.collect_quantization_statistics(o);
    std::vector<layer_quantization_record> calls;
    amp.on_quantization_statistics([&](const layer_quantization_record& r) { calls.push_back(r); });
    std::vector<matrix> h;
    model.train(amp, 6, &h);
    // Steps 1 and 3 (not 5: after end_step), layer 1 only, its three operands each time.
    REQUIRE(calls.size() == 6);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      CHECK(calls[i].step == (i < 3 ? 1 : 3));
      CHECK(calls[i].layer == 1);
      CHECK(calls[i].precision == amp.get_recipe().precision);
      CHECK(calls[i].report.tensor.numel ==
            (calls[i].operand == ops::layer_operand::weight ? outputs : batch) * outputs);
    }
    const std::vector<layer_quantization_record>& latest = amp.quantization_statistics();
    REQUIRE(latest.size() == 3);
    CHECK(latest[0].operand == ops::layer_operand::input);
    CHECK(latest[1].operand == ops::layer_operand::weight);
    CHECK(latest[2].operand == ops::layer_operand::grad_output);
    // The input record is the statistics of layer 1's input at step 3, quantised by its recipe.
    const matrix& input = h[3];
    const float* v = input.data<float>();
    float amax = 0;
    for (std::size_t i = 0; i < input.size(); ++i) amax = std::max(amax, std::fabs(v[i]));
    CHECK(latest[0].step == 3);
    CHECK(latest[0].report.tensor.amax == amax);
    if (amp.get_recipe().precision == precision_mode::mxfp8) {
      const auto q = mx_quantize<float8_e4m3fn>(v, batch, outputs, outputs, mx_axis::rows);
      CHECK(to_json(latest[0].report) == to_json(mx_statistics(v, outputs, q)));
    }
    if (amp.get_recipe().precision == precision_mode::fp8_block) {
      const auto q = blockscale::fp8_block_quantize<float8_e4m3fn>(v, batch, outputs, outputs);
      CHECK(to_json(latest[0].report) == to_json(blockscale::fp8_block_statistics(v, outputs, q)));
    }
    if (amp.get_recipe().precision == precision_mode::fp8_rowwise) {  // the input's cast: e4m3, by rows
      const auto c = blockscale::linear_cast_config_for(blockscale::torchao_recipe::rowwise);
      const blockscale::torchao_scaling scaling{c.input.granularity, c.input.axis, c.round_scales_to_power_of_2};
      std::vector<float8_e4m3fn> q(batch * outputs);
      const std::vector<float> scales =
          blockscale::torchao_quantize(v, batch, outputs, outputs, scaling, q.data(), outputs);
      CHECK(to_json(latest[0].report) ==
            to_json(blockscale::torchao_statistics(v, batch, outputs, outputs, scaling, q.data(), outputs, scales)));
    }
    const std::string json = to_json(latest);
    CHECK(json.rfind("[{\"step\": 3, \"layer\": 1, \"operand\": \"input\", \"precision\": \"" + std::string(name) +
                         "\", \"stats\": {\"numel\": 480, ",
                     0) == 0);

    // Collecting changes no result: the same run without it ends with the same weights.
    precision_session plain{parse_recipe(std::string("recipe=") + name + ", seed=3")};
    two_layers other;
    other.register_with(plain);
    other.train(plain, 6);
    CHECK(same(model.weight.value(), other.weight.value()));
    CHECK(same(model.first.weight.value(), other.first.weight.value()));
    CHECK(plain.quantization_statistics().empty());
  }
}

TEST_CASE("quantisation statistics: every layer by default, nothing from plain layers, bad options refused",
          "[session][linear][statistics]") {
  precision_session amp{parse_recipe("recipe=mxfp8")};
  two_layers model;
  model.register_with(amp);
  amp.collect_quantization_statistics({});
  model.train(amp, 1);
  CHECK(amp.quantization_statistics().size() == 6);
  amp.stop_quantization_statistics();
  model.train(amp, 1);
  CHECK(amp.quantization_statistics()[0].step == 0);
  // A layer outside train_step (an evaluation) is not measured.
  amp.collect_quantization_statistics({});
  session_linear(amp, 0, pattern(batch, inputs, 0.23f, 1.0f), model.first.weight);
  CHECK(amp.quantization_statistics()[0].step == 0);

  precision_session bf16{parse_recipe("recipe=bf16")};
  two_layers plain;
  plain.register_with(bf16);
  bf16.collect_quantization_statistics({});
  plain.train(bf16, 1);
  CHECK(bf16.quantization_statistics().empty());

  quantization_statistics_options bad;
  bad.every = 0;
  CHECK_THROWS_WITH(amp.collect_quantization_statistics(bad),
                    "precision_session::collect_quantization_statistics: every is 0, it must be >= 1");
  bad.every = 1;
  bad.start_step = -2;
  CHECK_THROWS_WITH(amp.collect_quantization_statistics(bad),
                    "precision_session::collect_quantization_statistics: start_step is -2, it must be >= 0");
  bad.start_step = 5;
  bad.end_step = 4;
  CHECK_THROWS_WITH(amp.collect_quantization_statistics(bad),
                    "precision_session::collect_quantization_statistics: end_step 4 is before start_step 5");
}
