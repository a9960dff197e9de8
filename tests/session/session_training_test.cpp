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
// - every misuse gets an error that names it.
#include <mixprec/ops/ops.hpp>
#include <mixprec/optim/optim.hpp>
#include <mixprec/session/session.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
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
                                    "recipe=fp16, accumulation_steps=2, max_grad_norm=1"};

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
