// precision_session's one training loop (add_parameter, accumulate_gradient, use_optimizer,
// train_step(forward, backward)) on a small linear classifier written with mixprec::ops:
// - each recipe stores the parameters in the dtype it names (O2/O3 really cast the model, O2
//   keeps fp32 masters and fp32 normalization parameters), and the update follows
//   model_parameters.hpp's rule, checked bit for bit against the same arithmetic written out;
// - a backward inside train_step runs in the forward's precision: an fp16 recipe's weight
//   gradients are the fp16-rounded products;
// - a skipped step leaves parameters and optimizer state alone;
// - save at a step, load into a fresh session with fresh parameters, continue: bit for bit the
//   uninterrupted run, for every recipe and both optimizers, pure bf16 with stochastic rounding
//   and with Kahan summation included;
// - Kahan summation follows optimi's rule, bit for bit, and keeps the updates that nearest
//   rounding drops;
// - per-layer overrides: the rule table decides each parameter's precision and storage, a layer
//   overridden to fp32 trains bit for bit as in the fp32 recipe, and overrides survive a
//   checkpoint and a recipe switch;
// - every misuse gets an error that names it.
#include <mixprec/ops/ops.hpp>
#include <mixprec/optim/optim.hpp>
#include <mixprec/session/session.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <limits>
#include <string>
#include <vector>

using namespace mixprec;

namespace {

constexpr std::size_t inputs = 6, classes = 4, batch = 5;

// x (batch × inputs) → linear → layer_norm with a gain (a normalization parameter) → cross-entropy.
struct classifier {
  parameter weight, bias, gain;
  explicit classifier(std::uint32_t seed)
      : weight(matrix(dtype::float32, classes, inputs), "fc.weight"),
        bias(matrix(dtype::float32, 1, classes), "fc.bias"),
        gain(matrix(dtype::float32, 1, classes), "norm.gain") {
    std::uint32_t s = seed * 2654435761u + 1;
    const auto next = [&] {
      s = s * 1664525u + 1013904223u;
      return static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
    };
    weight.modify([&](matrix& m) {
      for (std::size_t k = 0; k < m.size(); ++k) m.data<float>()[k] = next();
    });
    bias.modify([&](matrix& m) {
      for (std::size_t k = 0; k < m.size(); ++k) m.data<float>()[k] = 0.1f * next();
    });
    gain.modify([&](matrix& m) {
      for (std::size_t k = 0; k < m.size(); ++k) m.data<float>()[k] = 1.0f + 0.1f * next();
    });
  }
  void register_with(precision_session& amp) {
    amp.add_parameter(weight);
    amp.add_parameter(bias);
    amp.add_parameter(gain, parameter_role::normalization);
  }
};

// The batch of step `step`: inputs and labels from a fixed formula.
matrix batch_inputs(int step) {
  matrix x(dtype::float32, batch, inputs);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x.data<float>()[i] = std::sin(0.37f * static_cast<float>(i) + 0.11f * static_cast<float>(step));
  }
  return x;
}
std::vector<int> batch_labels(int step) {
  std::vector<int> y(batch);
  for (std::size_t i = 0; i < batch; ++i) y[i] = static_cast<int>((i * 3 + static_cast<std::size_t>(step)) % classes);
  return y;
}

// One train_step of the classifier: forward and backward through ops, gradients into the session.
step_result step_once(precision_session& amp, classifier& m, int step, float loss_shift = 1.0f) {
  const matrix x = batch_inputs(step).to(amp.input_dtype());
  const std::vector<int> y = batch_labels(step);
  matrix z, logits;
  return amp.train_step(
      [&] {
        z = ops::linear(x, m.weight, m.bias);
        logits = ops::layer_norm(z, m.gain);
        return loss_shift * ops::cross_entropy(logits, y);
      },
      [&](const backward_context& b) {
        const matrix dlogits = ops::cross_entropy_backward(logits, y, b.loss_gradient * loss_shift);
        const ops::layer_norm_grads gn = ops::layer_norm_backward(dlogits, z, m.gain);
        amp.accumulate_gradient(m.gain, gn.gamma);
        const ops::linear_grads g = ops::linear_backward(gn.input, x, m.weight, m.bias);
        amp.accumulate_gradient(m.weight, g.weight);
        amp.accumulate_gradient(m.bias, g.bias);
      });
}

std::vector<std::uint8_t> bytes_of(const matrix& m) {
  const auto* b = static_cast<const std::uint8_t*>(m.raw_data());
  return std::vector<std::uint8_t>(b, b + m.bytes());
}

enum class optimizer_kind { sgd, adamw };

void use(precision_session& amp, optimizer_kind k) {
  if (k == optimizer_kind::sgd) {
    optim::sgd_options o;
    o.lr = 0.25f;
    o.momentum = 0.9f;
    o.nesterov = true;
    o.weight_decay = 1e-3f;
    amp.use_optimizer(optim::sgd(o));
  } else {
    optim::adamw_options o;
    o.lr = 0.02f;
    amp.use_optimizer(optim::adamw(o));
  }
}

const char* const recipe_texts[] = {"recipe=fp32",
                                    "recipe=fp16",
                                    "recipe=bf16",
                                    "recipe=O1",
                                    "recipe=O2",
                                    "recipe=O3, static_scale=1024",
                                    "recipe=bf16, master_weights=true, cast_model=true",
                                    "recipe=bf16, cast_model=true, stochastic_rounding=true, seed=9",
                                    "recipe=bf16, cast_model=true, kahan_summation=true",
                                    "recipe=O3, static_scale=1024, kahan_summation=true",
                                    "recipe=bf16, master_weights=true, cast_model=true, stochastic_rounding=true, "
                                    "max_grad_norm=0.5",
                                    "recipe=fp16, accumulation_steps=2, max_grad_norm=1",
                                    "recipe=bf16, override=first:fp32",
                                    "recipe=O2, override=fc:fp32",
                                    "recipe=O3, static_scale=1024, override=fc.bias:bf16,last:fp32"};

}  // namespace

TEST_CASE("add_parameter stores each parameter in the dtype the recipe names", "[session][model]") {
  struct expectation {
    const char* recipe;
    dtype weights, normalization;
    bool masters;
  };
  for (const expectation& e : {expectation{"fp32", dtype::float32, dtype::float32, false},
                               expectation{"fp16", dtype::float32, dtype::float32, false},
                               expectation{"bf16", dtype::float32, dtype::float32, false},
                               expectation{"fp8", dtype::float32, dtype::float32, false},
                               expectation{"O2", dtype::float16, dtype::float32, true},
                               expectation{"O3", dtype::float16, dtype::float16, false},
                               expectation{"recipe=bf16, cast_model=true", dtype::bfloat16, dtype::bfloat16, false}}) {
    INFO(e.recipe);
    precision_session amp{parse_recipe(e.recipe)};
    classifier m(1);
    const matrix initial = m.weight.value();
    m.register_with(amp);
    CHECK(m.weight.value().type() == e.weights);
    CHECK(m.bias.value().type() == e.weights);
    CHECK(m.gain.value().type() == e.normalization);
    // The cast is the nearest-even conversion of the initial values, and the master is them.
    CHECK(bytes_of(m.weight.value()) == bytes_of(initial.to(e.weights)));
    const float* master = amp.parameters().master(0);
    CHECK((master != nullptr) == e.masters);
    if (master != nullptr) CHECK(std::memcmp(master, initial.raw_data(), initial.bytes()) == 0);
    CHECK(amp.parameters().master(2) == nullptr);  // float32 parameters are their own masters
    CHECK(amp.input_dtype() == e.weights);         // O2/O3 cast the model's inputs too
  }
}

TEST_CASE("the update follows the stored dtype's rule, bit for bit", "[session][model]") {
  // SGD without momentum: w' = w - lr·g on float32; the rule per dtype is written out here.
  for (const char* text : {"fp32", "bf16", "O2", "O3", "recipe=bf16, cast_model=true"}) {
    INFO(text);
    precision_session amp{parse_recipe(text)};
    classifier m(3);
    m.register_with(amp);
    optim::sgd_options o;
    o.lr = 0.5f;
    amp.use_optimizer(optim::sgd(o));
    const std::vector<float> master_before =
        amp.parameters().master(0) != nullptr
            ? std::vector<float>(amp.parameters().master(0), amp.parameters().master(0) + m.weight.value().size())
            : std::vector<float>();
    const matrix before = m.weight.value();
    const step_result r = step_once(amp, m, 0);
    REQUIRE_FALSE(r.skipped);
    const float* g = amp.gradient(m.weight);  // unscaled by the step
    const std::size_t n = before.size();
    std::vector<float> expected(n);
    for (std::size_t k = 0; k < n; ++k) {
      const float w = master_before.empty() ? before.to(dtype::float32).data<float>()[k] : master_before[k];
      expected[k] = w - 0.5f * g[k];
    }
    const matrix expected_stored =
        matrix::copy_of(matrix_view(expected.data(), before.rows(), before.cols())).to(before.type());
    CHECK(bytes_of(m.weight.value()) == bytes_of(expected_stored));
    if (!master_before.empty()) CHECK(std::memcmp(amp.parameters().master(0), expected.data(), n * 4) == 0);
  }
}

TEST_CASE("record_gradient_amax: each parameter's gradient amax after the unscale, from its pass",
          "[session][model][amax]") {
  for (const char* text : {"fp16", "recipe=O2", "recipe=bf16, cast_model=true, kahan_summation=true"}) {
    INFO(text);
    precision_session amp{parse_recipe(text)};
    classifier m(11);
    m.register_with(amp);
    use(amp, optimizer_kind::sgd);
    CHECK(step_once(amp, m, 0).gradient_amax.empty());  // off by default
    amp.record_gradient_amax(true);
    CHECK(amp.records_gradient_amax());
    const step_result r = step_once(amp, m, 1);
    REQUIRE_FALSE(r.skipped);
    REQUIRE(r.gradient_amax.size() == 3);
    const parameter* in_order[] = {&m.weight, &m.bias, &m.gain};  // the order of registration
    for (std::size_t i = 0; i < 3; ++i) {
      const float* g = amp.gradient(*in_order[i]);  // unscaled by the step
      float largest = 0;
      for (std::size_t k = 0; k < in_order[i]->value().size(); ++k) largest = std::max(largest, std::abs(g[k]));
      CHECK(r.gradient_amax[i] == largest);
      CHECK(largest > 0);
    }
    // A planted inf: its parameter's amax says so.
    const step_result skipped = step_once(amp, m, 2, std::numeric_limits<float>::infinity());
    CHECK(skipped.skipped);
    REQUIRE(skipped.gradient_amax.size() == 3);
    CHECK_FALSE(std::isfinite(skipped.gradient_amax[0]));
    amp.record_gradient_amax(false);
    CHECK(step_once(amp, m, 3).gradient_amax.empty());
  }
}

TEST_CASE("a backward inside train_step computes in the forward's precision", "[session][model]") {
  // fp16 recipe: the weight gradient the session unscales is the fp16 product of the scaled
  // backward, as written out here under an explicit fp16 autocast scope.
  precision_session amp{parse_recipe("fp16")};
  classifier m(5);
  m.register_with(amp);
  amp.use_optimizer(optim::sgd());
  const float scale = amp.get_scale();
  const matrix x = batch_inputs(0);
  const std::vector<int> y = batch_labels(0);
  matrix by_hand, in_fp32;
  {
    dynamic_autocast_scope fp16(dtype::float16);
    const matrix z = ops::linear(x, m.weight, m.bias);
    const matrix logits = ops::layer_norm(z, m.gain);
    const ops::layer_norm_grads gn = ops::layer_norm_backward(ops::cross_entropy_backward(logits, y, scale), z, m.gain);
    by_hand = ops::linear_backward(gn.input, x, m.weight, m.bias).weight;
  }
  {
    const matrix z = ops::linear(x, m.weight, m.bias);
    const matrix logits = ops::layer_norm(z, m.gain);
    const ops::layer_norm_grads gn = ops::layer_norm_backward(ops::cross_entropy_backward(logits, y, scale), z, m.gain);
    in_fp32 = ops::linear_backward(gn.input, x, m.weight, m.bias).weight;
  }
  REQUIRE_FALSE(step_once(amp, m, 0).skipped);
  const float* g = amp.gradient(m.weight);
  std::size_t differs_from_fp32 = 0;
  for (std::size_t k = 0; k < by_hand.size(); ++k) {
    const float scaled = by_hand.data<float>()[k];
    CHECK(static_cast<float>(float16(scaled)) == scaled);  // an fp16 value
    CHECK(g[k] == scaled * (1.0f / scale));                // unscaled exactly (a power of two)
    differs_from_fp32 += scaled != in_fp32.data<float>()[k] ? std::size_t{1} : std::size_t{0};
  }
  CHECK(differs_from_fp32 > 0);
}

TEST_CASE("a skipped step changes neither parameters nor optimizer state", "[session][model]") {
  for (const char* text : {"fp32", "fp16", "O2", "O3"}) {
    for (const optimizer_kind k : {optimizer_kind::sgd, optimizer_kind::adamw}) {
      INFO(text << (k == optimizer_kind::sgd ? " sgd" : " adamw"));
      std::vector<std::string> lines;
      precision_session amp{parse_recipe(text), [&](const std::string& line) { lines.push_back(line); }};
      classifier m(7);
      m.register_with(amp);
      use(amp, k);
      REQUIRE_FALSE(step_once(amp, m, 0).skipped);
      const std::vector<std::uint8_t> weight = bytes_of(m.weight.value()), gain = bytes_of(m.gain.value());
      const std::vector<std::uint8_t> optimizer = k == optimizer_kind::sgd ? amp.optimizer<optim::sgd>().save_state()
                                                                           : amp.optimizer<optim::adamw>().save_state();
      const step_result skipped = step_once(amp, m, 1, std::numeric_limits<float>::infinity());
      CHECK(skipped.skipped);
      // The step names the first non-finite gradient: fc.weight's (registered first), in its
      // result and in a log line.
      REQUIRE(skipped.culprit.has_value());
      CHECK(skipped.culprit->view == 0);
      CHECK(skipped.parameter == "fc.weight");
      CHECK(lines.back().rfind("[AMP Skip] Step 2 skipped, loss scale ", 0) == 0);
      CHECK_THAT(lines.back(), Catch::Contains("first non-finite gradient in 'fc.weight', element " +
                                               std::to_string(skipped.culprit->element) + " (" +
                                               to_string(skipped.culprit->kind) + ")"));
      CHECK(bytes_of(m.weight.value()) == weight);
      CHECK(bytes_of(m.gain.value()) == gain);
      CHECK(optimizer == (k == optimizer_kind::sgd ? amp.optimizer<optim::sgd>().save_state()
                                                   : amp.optimizer<optim::adamw>().save_state()));
      CHECK(amp.statistics().skipped_steps == 1);
    }
  }
}

namespace {

struct run_end {
  std::vector<std::uint8_t> weight, bias, gain, optimizer;
  std::vector<float> master;
  float scale = 0;
  std::int64_t skipped = 0;
};

// Steps [from, to) with an overflow (inf loss) at step 3; the session state at `save_at`, when given.
run_end run_steps(precision_session& amp, classifier& m, optimizer_kind k, int from, int to) {
  for (int step = from; step < to; ++step) {
    step_once(amp, m, step, step == 3 ? std::numeric_limits<float>::infinity() : 1.0f);
  }
  run_end e;
  e.weight = bytes_of(m.weight.value());
  e.bias = bytes_of(m.bias.value());
  e.gain = bytes_of(m.gain.value());
  e.optimizer =
      k == optimizer_kind::sgd ? amp.optimizer<optim::sgd>().save_state() : amp.optimizer<optim::adamw>().save_state();
  if (const float* master = amp.parameters().master(0)) e.master.assign(master, master + m.weight.value().size());
  e.scale = amp.get_scale();
  e.skipped = amp.statistics().skipped_steps;
  return e;
}

}  // namespace

TEST_CASE("save, load into a fresh session and model, continue: the uninterrupted run bit for bit",
          "[session][model][state]") {
  constexpr int steps = 9;
  for (const char* text : recipe_texts) {
    for (const optimizer_kind k : {optimizer_kind::sgd, optimizer_kind::adamw}) {
      for (const int save_at : {1, 4, 7}) {
        INFO(text << (k == optimizer_kind::sgd ? " sgd" : " adamw") << ", saved after step " << save_at);
        const recipe r = parse_recipe(text);
        precision_session whole{r};
        classifier a(11);
        a.register_with(whole);
        use(whole, k);
        const run_end uninterrupted = run_steps(whole, a, k, 0, steps);
        CHECK(uninterrupted.skipped == 1);

        precision_session first{r};
        classifier b(11);
        b.register_with(first);
        use(first, k);
        run_steps(first, b, k, 0, save_at);
        const std::vector<std::uint8_t> saved = first.save_state();

        precision_session second{r};
        classifier c(11);  // a fresh process: the model built from its seed, then the checkpoint loaded
        c.register_with(second);
        use(second, k);
        second.load_state(saved);
        const run_end resumed = run_steps(second, c, k, save_at, steps);
        CHECK(resumed.weight == uninterrupted.weight);
        CHECK(resumed.bias == uninterrupted.bias);
        CHECK(resumed.gain == uninterrupted.gain);
        CHECK(resumed.optimizer == uninterrupted.optimizer);
        CHECK(resumed.master == uninterrupted.master);
        CHECK(resumed.scale == uninterrupted.scale);
        CHECK(resumed.skipped == uninterrupted.skipped);
      }
    }
  }
}

namespace {

// Two pure bf16 sessions side by side, the recipe under test and nearest rounding
// ("recipe=bf16, cast_model=true"), each training a parameter of n ones with SGD at lr 1 on the
// gradient -2^-10: each step adds 2^-10, a quarter of bf16's spacing at 1 (2^-7).
struct against_nearest {
  precision_session tested, nearest;
  parameter w_tested, w_nearest;
  matrix g;

  against_nearest(const char* recipe_text, std::size_t n)
      : tested(parse_recipe(recipe_text)),
        nearest(parse_recipe("recipe=bf16, cast_model=true")),
        w_tested(filled(n, 1.0f), "w"),
        w_nearest(filled(n, 1.0f), "w"),
        g(filled(n, -std::ldexp(1.0f, -10))) {
    tested.add_parameter(w_tested);
    nearest.add_parameter(w_nearest);
    optim::sgd_options o;
    o.lr = 1.0f;
    tested.use_optimizer(optim::sgd(o));
    nearest.use_optimizer(optim::sgd(o));
  }
  static matrix filled(std::size_t n, float value) {
    matrix m(dtype::float32, 1, n);
    for (std::size_t i = 0; i < n; ++i) m.data<float>()[i] = value;
    return m;
  }
  void step() {
    tested.train_step([] { return 0.0f; }, [&](const backward_context&) { tested.accumulate_gradient(w_tested, g); });
    nearest.train_step([] { return 0.0f; },
                       [&](const backward_context&) { nearest.accumulate_gradient(w_nearest, g); });
  }
  float tested_value(std::size_t i) const { return static_cast<float>(w_tested.value().data<bfloat16>()[i]); }
  float nearest_value(std::size_t i) const { return static_cast<float>(w_nearest.value().data<bfloat16>()[i]); }
};

}  // namespace

TEST_CASE("stochastic rounding of a pure bf16 model: unbiased in the mean, not nearest", "[session][model]") {
  // The exact sum leaves bf16's spacing at 1 unreached for 8 steps, so nearest-even never moves
  // w while stochastic rounding moves it by 2^-7 with probability 1/8 per step and reaches the
  // expected value on average over many elements.
  constexpr std::size_t n = 4096;
  against_nearest run("recipe=bf16, cast_model=true, stochastic_rounding=true, seed=3", n);
  constexpr int steps = 16;
  for (int s = 0; s < steps; ++s) run.step();
  double mean = 0;
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(run.nearest_value(i) == 1.0f);
    mean += static_cast<double>(run.tested_value(i));
  }
  mean /= n;
  // Expected 1 + 16·2^-10 = 1.015625; each step's rounding error has spacing ≤ 2^-7 and the
  // errors are independent, so the mean over 4096 elements is within 4 standard deviations.
  const double expected = 1.0 + steps * std::ldexp(1.0, -10);
  const double bound = 4 * std::ldexp(1.0, -7) * std::sqrt(static_cast<double>(steps) / 4.0 / n);
  CHECK(std::abs(mean - expected) < bound);
}

namespace {

// The session's Kahan-summed update of one parameter against optimi's rule written out here
// (model_parameters.hpp; optimi/sgd.py, kahan_sum): the same SGD with momentum on a float copy
// gives the step, then comp += step, w += comp, comp += old w - new w, each rounded to T.
template <class T>
void check_kahan_rule(const char* text) {
  INFO(text);
  precision_session amp{parse_recipe(text)};
  constexpr std::size_t n = 257;
  matrix initial(dtype::float32, 1, n);
  std::uint32_t state = 12345;
  const auto uniform = [&] {  // in [-0.5, 0.5)
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
  };
  for (std::size_t k = 0; k < n; ++k) initial.data<float>()[k] = 4 * uniform();
  parameter w(initial, "w");
  amp.add_parameter(w);
  REQUIRE(w.value().type() == dtype_of<T>);
  optim::sgd_options o;
  o.lr = 0.01f;
  o.momentum = 0.9f;
  amp.use_optimizer(optim::sgd(o));
  optim::sgd reference(o);
  reference.add(n);
  std::vector<T> expected(n);
  std::vector<T> compensation(n, T(0.0f));
  for (std::size_t k = 0; k < n; ++k) expected[k] = T(initial.data<float>()[k]);
  matrix g(dtype::float32, 1, n);
  std::size_t moved_by_compensation = 0;
  for (int step = 0; step < 24; ++step) {
    // Gradients from 2^-14 to 2^-2 in magnitude: most steps are below half of w's spacing.
    for (std::size_t k = 0; k < n; ++k) g.data<float>()[k] = std::ldexp(uniform(), -static_cast<int>(k % 13));
    amp.train_step([] { return 0.0f; }, [&](const backward_context&) { amp.accumulate_gradient(w, g); });
    std::vector<float> updated(n);
    for (std::size_t k = 0; k < n; ++k) updated[k] = static_cast<float>(expected[k]);
    reference.step(0, updated.data(), g.data<float>(), n);
    for (std::size_t k = 0; k < n; ++k) {
      const float old = static_cast<float>(expected[k]);
      const T c1(static_cast<float>(compensation[k]) + (updated[k] - old));
      const T next(old + static_cast<float>(c1));
      const T old_minus_next(old - static_cast<float>(next));
      compensation[k] = T(static_cast<float>(c1) + static_cast<float>(old_minus_next));
      moved_by_compensation += next.bits() != T(updated[k]).bits() ? std::size_t{1} : std::size_t{0};
      expected[k] = next;
    }
    const std::vector<float> held = amp.parameters().compensation(0);
    REQUIRE(held.size() == n);
    for (std::size_t k = 0; k < n; ++k) {
      INFO("step " << step << ", element " << k);
      REQUIRE(w.value().data<T>()[k].bits() == expected[k].bits());
      const float expected_compensation = static_cast<float>(compensation[k]);
      REQUIRE(std::memcmp(&held[k], &expected_compensation, 4) == 0);  // -0 and +0 apart
    }
  }
  CHECK(moved_by_compensation > 0);  // the rule differs from rounding the float32 update
}

}  // namespace

TEST_CASE("Kahan summation of a pure fp16/bf16 model follows optimi's rule, bit for bit", "[session][model]") {
  check_kahan_rule<bfloat16>("recipe=bf16, cast_model=true, kahan_summation=true");
  check_kahan_rule<float16>("recipe=O3, static_scale=1, kahan_summation=true");
}

TEST_CASE("Kahan summation keeps the updates that nearest rounding drops", "[session][model]") {
  // Nearest-even never moves w; with Kahan summation w + c is the exact sum after every step
  // (every value here is a bfloat16 value) and w stays within half a spacing of it.
  constexpr std::size_t n = 3;
  against_nearest run("recipe=bf16, cast_model=true, kahan_summation=true", n);
  for (int s = 1; s <= 64; ++s) {
    run.step();
    const float exact = 1.0f + static_cast<float>(s) * std::ldexp(1.0f, -10);
    const std::vector<float> c = run.tested.parameters().compensation(0);
    for (std::size_t i = 0; i < n; ++i) {
      INFO("step " << s);
      CHECK(run.tested_value(i) + c[i] == exact);
      CHECK(std::abs(run.tested_value(i) - exact) <= std::ldexp(1.0f, -8));
      CHECK(run.nearest_value(i) == 1.0f);
    }
  }
  CHECK(run.tested_value(0) == 1.0625f);
  // The compensation is optimizer state: 2 bytes a value, reported in optimizer_bytes.
  CHECK(run.tested.statistics().optimizer_bytes == run.nearest.statistics().optimizer_bytes + n * 2);
  CHECK(run.nearest.parameters().compensation(0).empty());
}

TEST_CASE("misuse of the training loop gets an error that names it", "[session][model][errors]") {
  const auto throws_with = [](auto&& f, const std::string& text) {
    try {
      f();
    } catch (const invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(text) != std::string::npos);
      return;
    }
    FAIL("no invalid_argument for " + text);
  };
  precision_session amp{parse_recipe("O2")};
  classifier m(13);
  throws_with([&] { step_once(amp, m, 0); }, "no parameters registered");
  m.register_with(amp);
  throws_with([&] { amp.add_parameter(m.weight); }, "registered already");
  parameter half(matrix(dtype::float16, 2, 2), "half");
  throws_with([&] { amp.add_parameter(half); }, "register the float32 initial values");
  throws_with([&] { step_once(amp, m, 0); }, "no optimizer");
  optim::sgd used;
  used.add(4);
  throws_with([&] { amp.use_optimizer(used); }, "pass a fresh one");
  amp.use_optimizer(optim::sgd());
  throws_with([&] { amp.optimizer<optim::adamw>(); }, "is sgd");
  parameter stranger(matrix(dtype::float32, 1, 1), "stranger");
  throws_with([&] { amp.accumulate_gradient(stranger, matrix(dtype::float32, 1, 1)); }, "'stranger' is not registered");
  throws_with([&] { amp.accumulate_gradient(m.bias, matrix(dtype::float32, 2, classes)); }, "the parameter is 1×4");
  // From inside a step: a nested train_step, a checkpoint, a new parameter.
  const auto inside = [&](auto&& f) {
    amp.train_step(
        [&] {
          f();
          return 0.0f;
        },
        [](const backward_context&) {});
  };
  throws_with([&] { inside([&] { step_once(amp, m, 0); }); }, "train_step: called from inside train_step");
  throws_with([&] { inside([&] { (void)amp.save_state(); }); }, "save_state: called from inside train_step");
  parameter late(matrix(dtype::float32, 1, 1), "late");
  throws_with([&] { inside([&] { amp.add_parameter(late); }); }, "add_parameter: called from inside train_step");
  // After training started.
  step_once(amp, m, 0);
  throws_with([&] { amp.add_parameter(late); }, "'late' added after");
  throws_with([&] { amp.use_optimizer(optim::adamw()); }, "after");
  // A checkpoint of another optimizer or model is refused, naming the difference.
  precision_session other{parse_recipe("O2")};
  classifier m2(13);
  m2.register_with(other);
  other.use_optimizer(optim::adamw());
  CHECK_THROWS_WITH(other.load_state(amp.save_state()), Catch::Contains("optimizer sgd"));
}

TEST_CASE("statistics count masters, working copies, gradients and optimizer state", "[session][model]") {
  precision_session amp{parse_recipe("O2")};
  classifier m(17);
  m.register_with(amp);
  amp.use_optimizer(optim::adamw());
  const std::size_t cast = (classes * inputs + classes);  // weight and bias in fp16; the gain stays fp32
  const session_statistics s = amp.statistics();
  CHECK(s.master_bytes == cast * sizeof(float));
  CHECK(s.working_bytes == cast * sizeof(float16));
  CHECK(s.gradient_bytes == (cast + classes) * sizeof(float));
  CHECK(s.optimizer_bytes == amp.optimizer<optim::adamw>().state_bytes());
  CHECK(s.optimizer_bytes >= 2 * (cast + classes) * sizeof(float));
}

// ---- Recipe switches and schedules (schedule.hpp, precision_session::switch_recipe) ----

namespace {

// The float32 value of every parameter element as the session holds it: the master where there
// is one, else the stored value widened plus its Kahan compensation.
std::vector<float> float32_state(const precision_session& amp, const classifier& m) {
  std::vector<float> out;
  const parameter* ps[] = {&m.weight, &m.bias, &m.gain};
  for (std::size_t i = 0; i < 3; ++i) {
    const matrix& v = ps[i]->value();
    const float* master = amp.parameters().master(i);
    const std::vector<float> c = amp.parameters().compensation(i);
    const matrix wide = v.to(dtype::float32);
    for (std::size_t k = 0; k < v.size(); ++k) {
      out.push_back(master ? master[k] : wide.data<float>()[k] + (c.empty() ? 0.0f : c[k]));
    }
  }
  return out;
}

// A classifier whose parameters hold `values` (float32_state's order).
void set_float32_state(classifier& m, const std::vector<float>& values) {
  std::size_t at = 0;
  for (parameter* p : {&m.weight, &m.bias, &m.gain}) {
    p->modify([&](matrix& v) {
      for (std::size_t k = 0; k < v.size(); ++k) v.data<float>()[k] = values[at++];
    });
  }
}

std::vector<std::vector<std::uint8_t>> stored_bytes(const classifier& m) {
  return {bytes_of(m.weight.value()), bytes_of(m.bias.value()), bytes_of(m.gain.value())};
}

void use_plain_sgd(precision_session& amp) {  // no optimizer state: a fresh one is the same
  optim::sgd_options o;
  o.lr = 0.25f;
  amp.use_optimizer(optim::sgd(o));
}

}  // namespace

TEST_CASE("switch_recipe: the run continues as one started in the new recipe from the carried state",
          "[session][schedule]") {
  // Every ordered pair of these: fp32, fp16, bf16 and fp8 mixed precision, Apex O2 (fp16 model,
  // fp32 masters) and O3, pure bf16 rounded to nearest and Kahan-summed, and fp16 with two
  // micro-batches per step.
  const char* const recipes[] = {"recipe=fp32",
                                 "recipe=fp16",
                                 "recipe=bf16",
                                 "recipe=fp8",
                                 "recipe=O2",
                                 "recipe=O3, static_scale=1024",
                                 "recipe=bf16, cast_model=true",
                                 "recipe=bf16, cast_model=true, kahan_summation=true",
                                 "recipe=fp16, accumulation_steps=2"};
  std::vector<std::pair<const char*, const char*>> transitions;
  for (const char* a : recipes) {
    for (const char* b : recipes) {
      if (a != b) transitions.emplace_back(a, b);
    }
  }
  for (const auto& [from, to] : transitions) {
    INFO(from << " -> " << to);
    classifier m(7);
    precision_session amp{parse_recipe(from)};
    m.register_with(amp);
    use_plain_sgd(amp);
    for (int s = 0; s < 4; ++s) step_once(amp, m, s);
    const std::vector<float> carried = float32_state(amp, m);
    amp.switch_recipe(parse_recipe(to));
    CHECK(same_settings(amp.get_recipe(), parse_recipe(to)));
    // The parameters hold the carried float32 values, stored as the new recipe stores them.
    classifier fresh(1);
    set_float32_state(fresh, carried);
    precision_session started{parse_recipe(to)};
    fresh.register_with(started);
    use_plain_sgd(started);
    CHECK(stored_bytes(m) == stored_bytes(fresh));
    for (int s = 4; s < 8; ++s) {
      const step_result a = step_once(amp, m, s), b = step_once(started, fresh, s);
      CHECK(a.loss == b.loss);
      CHECK(a.skipped == b.skipped);
    }
    CHECK(stored_bytes(m) == stored_bytes(fresh));
    CHECK(float32_state(amp, m) == float32_state(started, fresh));
    REQUIRE(amp.switches().size() == 1);
    CHECK(amp.switches()[0].steps == 4);
    CHECK(amp.switches()[0].reason == "switch_recipe");
    CHECK(amp.statistics().recipe_switches == 1);
  }
}

TEST_CASE("switch_recipe carries the optimizer state and a scaler of the same configuration", "[session][schedule]") {
  for (const optimizer_kind k : {optimizer_kind::sgd, optimizer_kind::adamw}) {
    // A switch to a recipe that trains the same way but for a setting that changes no number
    // here (the seed of a stochastic rounding it does not use): bit for bit the run without it.
    classifier a(3), b(3);
    precision_session switched{parse_recipe("recipe=fp16")}, straight{parse_recipe("recipe=fp16")};
    a.register_with(switched);
    b.register_with(straight);
    use(switched, k);
    use(straight, k);
    for (int s = 0; s < 3; ++s) {
      step_once(switched, a, s, s == 1 ? 1e6f : 1.0f);  // one overflow: the scale backs off
      step_once(straight, b, s, s == 1 ? 1e6f : 1.0f);
    }
    switched.switch_recipe(parse_recipe("recipe=fp16, seed=5"));
    REQUIRE(switched.switches().size() == 1);
    CHECK(switched.get_scale() == straight.get_scale());  // dynamic scaling, same options: carried
    for (int s = 3; s < 7; ++s) {
      step_once(switched, a, s);
      step_once(straight, b, s);
    }
    CHECK(stored_bytes(a) == stored_bytes(b));
    CHECK(switched.get_scale() == straight.get_scale());
    CHECK(switched.statistics().overflow_count == straight.statistics().overflow_count);
  }
  // Another policy or other options: the new recipe's scaler from its initial scale, and the
  // old scaler's overflows still counted.
  classifier m(3);
  precision_session amp{parse_recipe("recipe=fp16")};
  m.register_with(amp);
  use_plain_sgd(amp);
  step_once(amp, m, 0, 1e6f);
  CHECK(amp.get_scale() == 32768.0f);
  amp.switch_recipe(parse_recipe("recipe=fp16, init_scale=1024"));
  CHECK(amp.get_scale() == 1024.0f);
  CHECK(amp.statistics().overflow_count == 1);
}

TEST_CASE("a schedule switches at its steps and epochs, the fallback after skipped steps; logged and counted",
          "[session][schedule]") {
  std::vector<std::string> lines;
  classifier m(5);
  precision_session amp{parse_recipe("recipe=fp32"), [&](const std::string& l) { lines.push_back(l); }};
  m.register_with(amp);
  use_plain_sgd(amp);
  precision_schedule schedule;
  schedule.changes.push_back({schedule_unit::step, 2, parse_recipe("recipe=bf16, cast_model=true")});
  schedule.changes.push_back({schedule_unit::epoch, 1, parse_recipe("recipe=fp16")});
  schedule.fallback_after_skips = 2;
  schedule.fallback = parse_recipe("recipe=bf16");
  amp.set_schedule(schedule);
  step_once(amp, m, 0);
  step_once(amp, m, 1);
  CHECK(amp.get_recipe().name == "fp32");
  step_once(amp, m, 2);  // after 2 steps: pure bf16
  CHECK(amp.get_recipe().name == "bf16");
  CHECK(m.weight.value().type() == dtype::bfloat16);
  amp.end_epoch();
  CHECK(amp.get_recipe().name == "bf16");  // a change applies at the next step, not at end_epoch
  step_once(amp, m, 3);                    // epoch 1: fp16 mixed precision, float32 parameters
  CHECK(amp.get_recipe().name == "fp16");
  CHECK(m.weight.value().type() == dtype::float32);
  step_once(amp, m, 4, 1e6f);  // two overflows in a row under fp16 ...
  step_once(amp, m, 5, 1e6f);
  CHECK(amp.get_recipe().name == "fp16");
  const step_result r = step_once(amp, m, 6, 1e6f);  // ... and the next step runs the fallback
  CHECK(amp.get_recipe().name == "bf16");
  CHECK_FALSE(r.skipped);
  const std::vector<recipe_switch>& s = amp.switches();
  REQUIRE(s.size() == 3);
  CHECK((s[0].steps == 2 && s[0].epochs == 0 && s[0].from == "fp32" && s[0].to == "bf16"));
  CHECK(s[0].reason == "schedule: step 2");
  CHECK((s[1].steps == 3 && s[1].epochs == 1 && s[1].reason == "schedule: epoch 1"));
  CHECK((s[2].steps == 6 && s[2].from == "fp16" && s[2].to == "bf16"));
  CHECK(s[2].reason == "fallback: 2 skipped steps in a row under fp16");
  CHECK(amp.statistics().recipe_switches == 3);
  CHECK(amp.statistics().overflow_count == 2);
  const auto logged = [&](const std::string& text) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != l.npos; });
  };
  CHECK(logged("[AMP Switch] Before step 3 (schedule: step 2): fp32 -> bf16"));
  CHECK(logged("[AMP Switch] Before step 7 (fallback: 2 skipped steps in a row under fp16): fp16 -> bf16"));
  step_once(amp, m, 7, 1e6f);  // the fallback is used once
  CHECK(amp.switches().size() == 3);
}

TEST_CASE("save before, at and after a scheduled switch, resume: the uninterrupted run bit for bit",
          "[session][schedule]") {
  precision_schedule schedule;
  schedule.changes.push_back({schedule_unit::step, 3, parse_recipe("recipe=O2")});
  schedule.changes.push_back(
      {schedule_unit::step, 5, parse_recipe("recipe=bf16, cast_model=true, kahan_summation=true")});
  schedule.changes.push_back({schedule_unit::epoch, 1, parse_recipe("recipe=fp8")});
  const auto start = [&](classifier& m, precision_session& amp) {
    amp.set_schedule(schedule);
    m.register_with(amp);
    use(amp, optimizer_kind::adamw);
  };
  const auto run = [](precision_session& amp, classifier& m, int from, int to) {  // epoch 1 ends after step 6
    for (int s = from; s < to; ++s) {
      step_once(amp, m, s);
      if (s == 6) amp.end_epoch();
    }
  };
  const int steps = 9;
  classifier reference(11);
  precision_session straight{parse_recipe("recipe=fp32")};
  start(reference, straight);
  run(straight, reference, 0, steps);
  REQUIRE(straight.switches().size() == 3);
  for (const int save_at : {2, 3, 4, 5, 6, 7}) {
    INFO("saved after step " << save_at);
    classifier first(11);
    precision_session before{parse_recipe("recipe=fp32")};
    start(first, before);
    run(before, first, 0, save_at);
    const std::vector<std::uint8_t> state = before.save_state();
    classifier second(99);  // other initial values: the state replaces them
    precision_session after{parse_recipe("recipe=fp32")};
    start(second, after);
    after.load_state(state);
    CHECK(same_settings(after.get_recipe(), before.get_recipe()));
    run(after, second, save_at, steps);
    CHECK(stored_bytes(second) == stored_bytes(reference));
    CHECK(float32_state(after, second) == float32_state(straight, reference));
    REQUIRE(after.switches().size() == straight.switches().size());
    for (std::size_t i = 0; i < after.switches().size(); ++i) {
      CHECK(after.switches()[i].steps == straight.switches()[i].steps);
      CHECK(after.switches()[i].reason == straight.switches()[i].reason);
    }
    CHECK(after.get_scale() == straight.get_scale());
  }
  // A run that starts in fp8 with its fp8 layers declared and leaves fp8: the resumed session
  // declares them again at its start and takes a state saved in the bf16 phase, which holds none.
  precision_schedule leaves_fp8;
  leaves_fp8.changes.push_back({schedule_unit::step, 2, parse_recipe("recipe=bf16")});
  const auto fp8_start = [&](classifier& m, precision_session& amp) {
    amp.use_fp8_layers(1);
    amp.set_schedule(leaves_fp8);
    m.register_with(amp);
    use(amp, optimizer_kind::sgd);
  };
  classifier fp8_model(4), fp8_resumed(4);
  precision_session fp8_run{parse_recipe("recipe=fp8")}, fp8_again{parse_recipe("recipe=fp8")};
  fp8_start(fp8_model, fp8_run);
  fp8_start(fp8_resumed, fp8_again);
  run(fp8_run, fp8_model, 0, 3);
  CHECK_FALSE(fp8_run.has_fp8_layers());
  fp8_again.load_state(fp8_run.save_state());
  CHECK(fp8_again.get_recipe().name == "bf16");
  CHECK_FALSE(fp8_again.has_fp8_layers());
  run(fp8_run, fp8_model, 3, 5);
  run(fp8_again, fp8_resumed, 3, 5);
  CHECK(stored_bytes(fp8_model) == stored_bytes(fp8_resumed));
  // A session without the schedule refuses the state, and says why.
  classifier other(11);
  precision_session plain{parse_recipe("recipe=fp32")};
  other.register_with(plain);
  use(plain, optimizer_kind::adamw);
  classifier saved_model(11);
  precision_session saved_session{parse_recipe("recipe=fp32")};
  start(saved_model, saved_session);
  for (int s = 0; s < 4; ++s) step_once(saved_session, saved_model, s);
  CHECK_THROWS_WITH(plain.load_state(saved_session.save_state()),
                    Catch::Contains("another recipe: saved with precision=fp16, this session has precision=fp32"));
}

TEST_CASE("schedule and switch misuse gets an error that names it", "[session][schedule][errors]") {
  precision_schedule bad;
  bad.changes.push_back({schedule_unit::step, 10, parse_recipe("recipe=bf16")});
  bad.changes.push_back({schedule_unit::step, 5, parse_recipe("recipe=fp16")});
  CHECK_THROWS_WITH(validate(bad),
                    "precision_schedule: changes[1] at step 5 follows a change at step 10; list each "
                    "unit's changes in increasing order");
  precision_schedule negative;
  negative.changes.push_back({schedule_unit::epoch, -1, parse_recipe("recipe=bf16")});
  CHECK_THROWS_WITH(validate(negative), "precision_schedule: changes[0]: at is -1, allowed: 0 or more");
  precision_schedule fallback;
  fallback.fallback_after_skips = -2;
  CHECK_THROWS_AS(validate(fallback), recipe_error);
  fallback.fallback_after_skips = 1;
  fallback.fallback = parse_recipe("recipe=bf16");
  fallback.fallback.growth_interval = 0;
  CHECK_THROWS_WITH(validate(fallback), Catch::StartsWith("precision_schedule: fallback: recipe:"));

  classifier m(2);
  precision_session amp{parse_recipe("recipe=O2")};
  m.register_with(amp);
  use_plain_sgd(amp);
  step_once(amp, m, 0);
  CHECK_THROWS_WITH(amp.set_schedule(precision_schedule{}),
                    "precision_session::set_schedule: called after 1 training steps; set the schedule before the "
                    "first train_step");
  std::vector<float> user(4, 1.0f);
  amp.masters().add(user.data(), user.size());
  const std::vector<std::uint8_t> before = stored_bytes(m)[0];
  CHECK_THROWS_WITH(amp.switch_recipe(parse_recipe("recipe=bf16")),
                    Catch::Contains("masters() holds 1 arrays added by the caller"));
  CHECK(amp.get_recipe().name == "O2");
  CHECK(stored_bytes(m)[0] == before);
  CHECK_THROWS_AS(amp.switch_recipe(parse_recipe("recipe=fp16, safe=true, scaling=none")), recipe_error);
}

TEST_CASE("override rules: each parameter's layer and precision follow the rule table", "[session][overrides]") {
  struct expectation {
    const char* recipe;
    precision_mode weight, bias, gain;  // as layer_precisions() says
    std::optional<dtype> weight_override, bias_override, gain_override;
  };
  const std::optional<dtype> none, f32 = dtype::float32, f16 = dtype::float16, b16 = dtype::bfloat16;
  const auto bf = precision_mode::bfloat16, fp32 = precision_mode::float32, fp16 = precision_mode::float16;
  for (const expectation& e :
       {expectation{"recipe=bf16", bf, bf, bf, none, none, none},
        expectation{"recipe=bf16, override=fc:fp32", fp32, fp32, bf, f32, f32, none},
        expectation{"recipe=bf16, override=last:fp32", bf, bf, fp32, none, none, f32},
        expectation{"recipe=bf16, override=first:fp32", fp32, fp32, bf, f32, f32, none},
        expectation{"recipe=bf16, override=0-1:fp32", fp32, fp32, fp32, f32, f32, f32},
        expectation{"recipe=bf16, override=1:bf16", bf, bf, bf, none, none, b16},
        expectation{"recipe=bf16, scaling=dynamic, override=fc.bias:fp16,f*:fp32", fp32, fp16, bf, f32, f16, none},
        expectation{"recipe=bf16, override=n?rm:fp32, *:bf16", bf, bf, fp32, b16, b16, f32},
        expectation{"recipe=fp8, override=first:fp8,*:bf16", precision_mode::float8, precision_mode::float8, bf, none,
                    none, b16}}) {
    INFO(e.recipe);
    precision_session amp{parse_recipe(e.recipe)};
    classifier m(1);
    m.register_with(amp);
    amp.apply_overrides();
    const std::vector<layer_precision>& table = amp.layer_precisions();
    REQUIRE(table.size() == 3);
    CHECK(table[0].layer_name == "fc");
    CHECK(table[1].layer == 0);
    CHECK(table[2].layer == 1);
    CHECK(table[2].layer_name == "norm");
    CHECK(table[0].precision == e.weight);
    CHECK(table[1].precision == e.bias);
    CHECK(table[2].precision == e.gain);
    CHECK(m.weight.precision_override() == e.weight_override);
    CHECK(m.bias.precision_override() == e.bias_override);
    CHECK(m.gain.precision_override() == e.gain_override);
  }
}

TEST_CASE("a layer overridden to fp32 trains as in the fp32 recipe, bit for bit", "[session][overrides]") {
  // Every layer of the classifier overridden to fp32 in a bf16 recipe: each operation computes in
  // float32, so the run is the fp32 recipe's bit for bit; without the rules it differs.
  for (const optimizer_kind k : {optimizer_kind::sgd, optimizer_kind::adamw}) {
    precision_session fp32{parse_recipe("fp32")}, all{parse_recipe("recipe=bf16, override=0-1:fp32")},
        bf16{parse_recipe("bf16")};
    classifier a(21), b(21), c(21);
    a.register_with(fp32);
    b.register_with(all);
    c.register_with(bf16);
    use(fp32, k);
    use(all, k);
    use(bf16, k);
    const run_end want = run_steps(fp32, a, k, 0, 6);
    const run_end got = run_steps(all, b, k, 0, 6);
    const run_end plain = run_steps(bf16, c, k, 0, 6);
    CHECK(got.weight == want.weight);
    CHECK(got.bias == want.bias);
    CHECK(got.gain == want.gain);
    CHECK(got.optimizer == want.optimizer);
    CHECK(plain.weight != want.weight);
  }
  // One layer: the fp32-overridden linear's gradients are the fp32 ones, computed by hand with the
  // linear outside autocast and the rest in bf16; the bf16 recipe's differ.
  precision_session amp{parse_recipe("recipe=bf16, override=fc:fp32")};
  classifier m(5);
  m.register_with(amp);
  amp.use_optimizer(optim::sgd());
  const matrix x = batch_inputs(0);
  const std::vector<int> y = batch_labels(0);
  matrix by_hand, in_bf16;
  for (const bool fc_in_fp32 : {true, false}) {
    classifier plain(5);  // no overrides: the scopes below decide
    dynamic_autocast_scope bf16(dtype::bfloat16);
    matrix z;
    if (fc_in_fp32) {
      autocast_disabled off;
      z = ops::linear(x, plain.weight, plain.bias);
    } else {
      z = ops::linear(x, plain.weight, plain.bias);
    }
    const matrix logits = ops::layer_norm(z, plain.gain);
    const ops::layer_norm_grads gn =
        ops::layer_norm_backward(ops::cross_entropy_backward(logits, y, 1.0f), z, plain.gain);
    if (fc_in_fp32) {
      autocast_disabled off;
      by_hand = ops::linear_backward(gn.input, x, plain.weight, plain.bias).weight;
    } else {
      in_bf16 = ops::linear_backward(gn.input, x, plain.weight, plain.bias).weight;
    }
  }
  REQUIRE_FALSE(step_once(amp, m, 0).skipped);
  const float* g = amp.gradient(m.weight);
  std::size_t differs_from_bf16 = 0;
  for (std::size_t k = 0; k < by_hand.size(); ++k) {
    CHECK(g[k] == by_hand.data<float>()[k]);
    differs_from_bf16 += g[k] != in_bf16.data<float>()[k] ? std::size_t{1} : std::size_t{0};
  }
  CHECK(differs_from_bf16 > 0);
}

TEST_CASE("overrides of a cast model: an fp32 layer stays float32, without a master", "[session][overrides]") {
  precision_session amp{parse_recipe("recipe=O2, init_scale=256, override=fc.weight:fp32,norm:bf16")};
  classifier m(2);
  const matrix initial = m.weight.value();
  m.register_with(amp);
  CHECK(m.weight.value().type() == dtype::float16);  // the rules apply when training starts
  amp.apply_overrides();
  CHECK(m.weight.value().type() == dtype::float32);
  CHECK(bytes_of(m.weight.value()) == bytes_of(initial));  // from the float32 master: the initial values
  CHECK(amp.parameters().master(0) == nullptr);
  CHECK(m.bias.value().type() == dtype::float16);
  CHECK(amp.parameters().master(1) != nullptr);
  CHECK(m.gain.value().type() == dtype::bfloat16);
  CHECK(amp.parameters().master(2) != nullptr);
  amp.use_optimizer(optim::sgd());
  CHECK_FALSE(step_once(amp, m, 0).skipped);
  CHECK(m.weight.value().type() == dtype::float32);
  // A switch to a recipe without the rules re-stores and clears them.
  amp.switch_recipe(parse_recipe("recipe=O2, init_scale=256"));
  CHECK(m.weight.value().type() == dtype::float16);
  CHECK(m.gain.value().type() == dtype::float32);  // O2 keeps normalization in fp32
  CHECK_FALSE(m.weight.precision_override().has_value());
  CHECK_FALSE(m.gain.precision_override().has_value());
  CHECK(amp.parameters().master(0) != nullptr);
}

TEST_CASE("overrides: the session sets and clears only what its rules set", "[session][overrides]") {
  precision_session amp{parse_recipe("recipe=bf16, override=fc:fp32")};
  classifier m(2);
  m.gain.set_precision_override(dtype::float32);  // the caller's own
  m.register_with(amp);
  amp.apply_overrides();
  CHECK(m.gain.precision_override() == std::optional<dtype>(dtype::float32));
  amp.switch_recipe(parse_recipe("bf16"));
  CHECK_FALSE(m.weight.precision_override().has_value());
  CHECK(m.gain.precision_override() == std::optional<dtype>(dtype::float32));
  CHECK_THROWS_WITH(m.gain.set_precision_override(dtype::float8_e4m3fn),
                    Catch::Contains("precision override float8_e4m3fn is not float32, float16 or bfloat16"));
}

TEST_CASE("override misuse gets an error that names it", "[session][overrides][errors]") {
  precision_session amp{parse_recipe("recipe=bf16, override=fc:fp32,fc9:fp32")};
  classifier m(2);
  m.register_with(amp);
  amp.use_optimizer(optim::sgd());
  const std::string message =
      "recipe: override rule 2 'fc9:fp32' matches no parameter; the layers are 0 'fc', 1 'norm'";
  CHECK_THROWS_AS(amp.apply_overrides(), recipe_error);
  CHECK_THROWS_WITH(amp.apply_overrides(), message);
  CHECK_THROWS_WITH(step_once(amp, m, 0), message);
  CHECK(amp.statistics().total_steps == 0);
  // A switch to a recipe whose rule matches nothing changes nothing.
  precision_session ok{parse_recipe("bf16")};
  classifier n(2);
  n.register_with(ok);
  CHECK_THROWS_WITH(ok.switch_recipe(parse_recipe("recipe=bf16, override=5:fp32")),
                    Catch::Contains("rule 1 '5:fp32' matches no parameter"));
  CHECK(ok.get_recipe().overrides.empty());
}

TEST_CASE("load(path) takes a state saved in any recipe of the schedule, however large", "[session][schedule][state]") {
  // 2^22 values: float32 in the start recipe (16 MiB), fp16 + fp32 master after the switch to O2
  // (24 MiB): the file limit must allow the larger one, 8 MiB above the start recipe's form.
  const std::size_t n = std::size_t{1} << 22;
  const auto build = [&](precision_session& amp, parameter& w) {
    precision_schedule s;
    s.changes.push_back({schedule_unit::step, 1, parse_recipe("recipe=O2, init_scale=1")});
    amp.set_schedule(s);
    amp.add_parameter(w);
    amp.use_optimizer(optim::sgd());
  };
  precision_session first{parse_recipe("fp32")};
  parameter w(matrix(dtype::float32, 1, n), "w");
  build(first, w);
  for (int step = 0; step < 2; ++step) first.train_step([] { return 0.0f; }, [](const backward_context&) {});
  REQUIRE(w.value().type() == dtype::float16);
  const std::string path = "session_training_test_large.state";
  first.save(path);
  precision_session second{parse_recipe("fp32")};
  parameter v(matrix(dtype::float32, 1, n), "w");
  build(second, v);
  CHECK_NOTHROW(second.load(path));
  CHECK(v.value().type() == dtype::float16);
  CHECK(second.get_recipe().precision == precision_mode::float16);
  std::remove(path.c_str());
}

TEST_CASE("operation rules pin each operation of mixprec::ops to their dtype", "[session][overrides]") {
  // Each operation under a state that pins it to bf16 (autocast off otherwise): its result is
  // bf16, or a scalar holding a bf16 value, where the unpinned call gives float32.  The table
  // covers ops::operation_names() exactly, so a new operation cannot miss it.
  matrix a(dtype::float32, 3, 4), b(dtype::float32, 3, 4), w(dtype::float32, 5, 4);
  for (std::size_t k = 0; k < a.size(); ++k) {
    a.data<float>()[k] = 0.3f + 0.1f * static_cast<float>(k);
    b.data<float>()[k] = 1.0f / (3.0f + static_cast<float>(k));
  }
  for (std::size_t k = 0; k < w.size(); ++k) w.data<float>()[k] = 0.1f / (1.0f + static_cast<float>(k));
  const std::vector<int> labels = {0, 1, 2};
  const auto bf16_value = [](float v) { return static_cast<float>(bfloat16(v)) == v; };
  using check = std::function<bool()>;  // true: the result is bf16
  const std::map<std::string, check> calls = {
      {"add", [&] { return ops::add(a, b).type() == dtype::bfloat16; }},
      {"sub", [&] { return ops::sub(a, b).type() == dtype::bfloat16; }},
      {"mul", [&] { return ops::mul(a, b).type() == dtype::bfloat16; }},
      {"div", [&] { return ops::div(a, b).type() == dtype::bfloat16; }},
      {"relu", [&] { return ops::relu(a).type() == dtype::bfloat16; }},
      {"gelu", [&] { return ops::gelu(a).type() == dtype::bfloat16; }},
      {"softmax", [&] { return ops::softmax(a).type() == dtype::bfloat16; }},
      {"log_softmax", [&] { return ops::log_softmax(a).type() == dtype::bfloat16; }},
      {"layer_norm", [&] { return ops::layer_norm(a).type() == dtype::bfloat16; }},
      {"matmul", [&] { return ops::matmul(a, w.view().transposed()).type() == dtype::bfloat16; }},
      {"linear", [&] { return ops::linear(a, w).type() == dtype::bfloat16; }},
      {"sum", [&] { return ops::sum(b, 0).type() == dtype::bfloat16 && bf16_value(ops::sum(b)); }},
      {"mean", [&] { return bf16_value(ops::mean(b)); }},
      {"mse_loss", [&] { return bf16_value(ops::mse_loss(a, b)); }},
      {"cross_entropy_loss", [&] { return bf16_value(ops::cross_entropy(b, labels)); }},
  };
  std::vector<std::string> names;
  for (const auto& c : calls) names.push_back(c.first);
  std::vector<std::string> listed = ops::operation_names();
  std::sort(listed.begin(), listed.end());
  CHECK(names == listed);
  for (const auto& c : calls) {
    INFO(c.first);
    CHECK_FALSE(c.second());  // float32 inputs, autocast off: float32
    autocast_state pinned;
    pinned.op_precisions = std::make_shared<const op_precision_list>(op_precision_list{{c.first, dtype::bfloat16}});
    dynamic_autocast_scope scope(pinned);
    CHECK(c.second());
    {
      autocast_disabled nested;  // a nested scope keeps the pins
      CHECK(c.second());
    }
  }
}

TEST_CASE("an operation rule trains as the recipe that computes that operation so", "[session][overrides]") {
  // The classifier's only matrix product is its linear: bf16 with every linear pinned to fp32 is
  // the fp32 run, and fp32 with every linear pinned to bf16 is the bf16 run, bit for bit (the
  // other operations compute in float32 in both).
  const std::pair<const char*, const char*> pairs[] = {{"recipe=bf16, override=@linear:fp32", "fp32"},
                                                       {"recipe=fp32, override=@linear:bf16", "bf16"}};
  for (const auto& p : pairs) {
    INFO(p.first);
    precision_session ruled{parse_recipe(p.first)}, plain{parse_recipe(p.second)};
    std::vector<std::string> logged;
    ruled.set_log_sink([&](const std::string& line) { logged.push_back(line); });
    classifier a(31), b(31);
    a.register_with(ruled);
    b.register_with(plain);
    use(ruled, optimizer_kind::adamw);
    use(plain, optimizer_kind::adamw);
    const run_end got = run_steps(ruled, a, optimizer_kind::adamw, 0, 6);
    const run_end want = run_steps(plain, b, optimizer_kind::adamw, 0, 6);
    CHECK(got.weight == want.weight);
    CHECK(got.bias == want.bias);
    CHECK(got.gain == want.gain);
    CHECK(got.optimizer == want.optimizer);
    CHECK(std::count_if(logged.begin(), logged.end(), [](const std::string& line) {
            return line.rfind("[AMP Override] operation linear: ", 0) == 0;
          }) == 1);
    CHECK(ruled.forward_autocast().op_precisions != nullptr);
  }
  precision_session amp{parse_recipe("recipe=bf16, override=@softmx:fp32")};
  classifier m(2);
  m.register_with(amp);
  CHECK_THROWS_WITH(amp.apply_overrides(),
                    Catch::StartsWith("recipe: override rule 1 '@softmx:fp32' names no operation; the operations "
                                      "are add, cross_entropy_loss,"));
}
