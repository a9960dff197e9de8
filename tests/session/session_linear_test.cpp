// session/linear.hpp: session_linear runs the linear layer of the active recipe's precision (the
// ops function written out, bit for bit), ops::linear for an overridden layer, and keys nvfp4's
// stochastic rounding by (seed, micro-batch and layer, completed steps); the block-scaled
// precisions read, write back and validate as recipes.
#include <mixprec/session/linear.hpp>
#include <mixprec/session/session.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
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
