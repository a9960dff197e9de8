// session/precision_session.hpp and master_weights.hpp: train_step follows exactly the
// hand-written sequence of loss_scaler calls (scale, skip flags and parameter bits, with injected
// overflows, accumulation and clipping); master weights change only on steps taken and their
// working copies are the bulk conversion of the masters bit for bit; save/load in the middle of
// training continues bit for bit; mismatched states are refused and change nothing; enable and
// disable switch autocast and scaling; the log lines and statistics say what happened, and
// statistics() with its JSON reports the scalers' real counters and the master weights' memory.
#include <mixprec/session/detail/json.hpp>
#include <mixprec/session/session.hpp>

#include <catch2/catch.hpp>

#include "state_fuzz.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using namespace mixprec;

namespace {

// A toy model: loss and gradients are fixed functions of (step, micro-batch), and a chosen set
// of steps writes an inf into one gradient, as an overflow in the backward pass would.
struct toy_model {
  std::size_t n;
  std::set<int> overflow_steps;
  int step = 0;
  std::vector<float> grads = std::vector<float>(n, 0.0f);

  float forward(std::size_t micro) const {
    return 0.5f + 0.01f * static_cast<float>(step % 17) + 0.001f * static_cast<float>(micro);
  }
  void backward(float scaled_loss, std::size_t micro) {
    for (std::size_t i = 0; i < n; ++i) {
      const float c =
          1e-3f * static_cast<float>(static_cast<int>((i * 7 + micro * 3 + static_cast<std::size_t>(step)) % 11) - 5);
      grads[i] += scaled_loss * c;
    }
    if (micro == 0 && overflow_steps.count(step) != 0) grads[n / 2] = std::numeric_limits<float>::infinity();
  }
  void zero_grads() { std::fill(grads.begin(), grads.end(), 0.0f); }
  void sgd(float* params) const {
    for (std::size_t i = 0; i < n; ++i) params[i] -= 0.5f * grads[i];
  }
};

std::vector<float> initial_parameters(std::size_t n, float offset = 0) {
  std::vector<float> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = offset + 0.01f * static_cast<float>(i % 13) - 0.05f;
  return p;
}

bool same_bits(const void* a, const void* b, std::size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

struct step_record {
  float scale;
  bool skipped;
  std::vector<float> params;
};

// The hand-written sequence a train_step stands for.
template <class Policy>
std::vector<step_record> hand_written(const recipe& r, const Policy& policy, toy_model model, int steps) {
  loss_scaler<Policy> scaler{policy, r.options()};
  std::vector<float> params = initial_parameters(model.n);
  std::vector<step_record> out;
  for (int t = 0; t < steps; ++t) {
    model.step = t;
    model.zero_grads();
    const float scale = scaler.get_scale();
    for (int m = 0; m < r.accumulation_steps; ++m) {
      const float loss = model.forward(static_cast<std::size_t>(m));
      model.backward(scaler.scale(loss), static_cast<std::size_t>(m));
    }
    scaler.unscale(model.grads.data(), model.n);
    if (r.max_grad_norm > 0) {
      clip_options clip;
      clip.gradient_rounding = r.gradient_rounding;
      clip_grad_norm({gradient_view(model.grads.data(), model.n)}, r.max_grad_norm, clip);
    }
    const bool stepped = scaler.step([&] { model.sgd(params.data()); });
    scaler.update();
    out.push_back({scale, !stepped, params});
  }
  return out;
}

std::vector<step_record> one_call(const recipe& r, toy_model model, int steps) {
  precision_session amp{r};
  std::vector<float> params = initial_parameters(model.n);
  const std::vector<gradient_view> grads = {gradient_view(model.grads.data(), model.n)};
  std::vector<step_record> out;
  for (int t = 0; t < steps; ++t) {
    model.step = t;
    model.zero_grads();
    const step_result s = amp.train_step([&](std::size_t m) { return model.forward(m); },
                                         [&](float scaled, std::size_t m) { model.backward(scaled, m); }, grads,
                                         [&] { model.sgd(params.data()); });
    CHECK(s.grad_norm.has_value() == (r.max_grad_norm > 0));
    out.push_back({s.scale, s.skipped, params});
  }
  return out;
}

void check_same(const std::vector<step_record>& a, const std::vector<step_record>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t t = 0; t < a.size(); ++t) {
    INFO("step " << t);
    CHECK(a[t].scale == b[t].scale);
    CHECK(a[t].skipped == b[t].skipped);
    CHECK(same_bits(a[t].params.data(), b[t].params.data(), a[t].params.size() * sizeof(float)));
  }
}

}  // namespace

TEST_CASE("train_step is the hand-written loss_scaler sequence, bit for bit", "[session]") {
  const toy_model model{1000, {2, 3, 9, 10, 11, 20}};
  const int steps = 30;
  SECTION("dynamic scaling with accumulation and clipping") {
    const recipe r = parse_recipe("recipe=fp16, growth_interval=3, accumulation_steps=3, max_grad_norm=0.05");
    const auto expected = hand_written(r, r.dynamic_policy(), model, steps);
    check_same(one_call(r, model, steps), expected);
    CHECK(expected[2].skipped);
    CHECK(expected[3].scale == expected[2].scale / 2);  // a back-off the trajectory really takes
  }
  SECTION("hysteresis scaling (DeepSpeed rules)") {
    const recipe r = parse_recipe("recipe=fp16, scaling=hysteresis, hysteresis_rules=deepspeed, growth_interval=4");
    check_same(one_call(r, model, steps), hand_written(r, r.hysteresis_policy(), model, steps));
  }
  SECTION("static scaling (Apex O3) and no scaling (bf16)") {
    const recipe o3 = parse_recipe("recipe=O3, static_scale=128, accumulation_steps=2");
    check_same(one_call(o3, model, steps), hand_written(o3, o3.static_policy(), model, steps));
    const recipe bf16 = parse_recipe("recipe=bf16, max_grad_norm=0.01");
    check_same(one_call(bf16, model, steps), hand_written(bf16, no_scaling{}, model, steps));
  }
}

TEST_CASE("master weights change only on steps taken; working copies are convert_n of the masters", "[session]") {
  for (const char* text : {"O2", "recipe=bf16, master_weights=true, max_grad_norm=0.05"}) {
    INFO(text);
    precision_session amp{parse_recipe(text)};
    toy_model model{300, {1, 4, 5}};
    const std::vector<float> init = initial_parameters(model.n);
    std::vector<float16> user_half(model.n);
    std::vector<bfloat16> user_bf16(model.n);
    master_weights& w = amp.masters();
    const std::size_t owned = w.add(init.data(), model.n);
    const std::size_t user = w.working_dtype() == dtype::float16 ? w.add(init.data(), model.n, user_half.data())
                                                                 : w.add(init.data(), model.n, user_bf16.data());
    CHECK(w.master_bytes() == 2 * model.n * 4);
    CHECK(w.working_bytes() == 2 * model.n * 2);
    const std::vector<gradient_view> grads = {gradient_view(model.grads.data(), model.n)};
    std::int64_t taken = 0;
    for (int t = 0; t < 8; ++t) {
      model.step = t;
      model.zero_grads();
      const std::vector<float> before(w.master(owned), w.master(owned) + model.n);
      const step_result s =
          amp.train_step([&] { return model.forward(0); }, [&](float scaled) { model.backward(scaled, 0); }, grads,
                         [&] {
                           model.sgd(w.master(owned));
                           model.sgd(w.master(user));
                         });
      CHECK(s.skipped == (model.overflow_steps.count(t) != 0));
      taken += s.skipped ? 0 : 1;
      const bool changed = !same_bits(before.data(), w.master(owned), model.n * sizeof(float));
      CHECK(changed == !s.skipped);
      for (const std::size_t p : {owned, user}) {
        if (w.working_dtype() == dtype::float16) {
          std::vector<float16> expected(model.n);
          convert_n(w.master(p), model.n, expected.data());
          CHECK(same_bits(expected.data(), w.working<float16>(p), model.n * 2));
        } else {
          std::vector<bfloat16> expected(model.n);
          convert_n(w.master(p), model.n, expected.data());
          CHECK(same_bits(expected.data(), w.working<bfloat16>(p), model.n * 2));
        }
      }
    }
    CHECK(static_cast<std::int64_t>(w.refreshes()) == taken);
    const bool user_buffer = w.working_dtype() == dtype::float16 ? w.working<float16>(user) == user_half.data()
                                                                 : w.working<bfloat16>(user) == user_bf16.data();
    CHECK(user_buffer);
  }
  precision_session plain{recipes::bf16()};
  CHECK_FALSE(plain.has_master_weights());
  CHECK_THROWS_AS(plain.masters(), invalid_argument);
  CHECK_THROWS_AS(master_weights(dtype::float8_e4m3fn), invalid_argument);
}

TEST_CASE("stochastic rounding of working copies: a neighbour of the master, the same for the same seed", "[session]") {
  const recipe r = parse_recipe("recipe=bf16, master_weights=true, stochastic_rounding=true, seed=5");
  std::vector<std::vector<std::uint16_t>> runs;
  for (int run = 0; run < 2; ++run) {
    precision_session amp{r};
    toy_model model{257, {}};
    const std::vector<float> init = initial_parameters(model.n);
    const std::size_t p = amp.masters().add(init.data(), model.n);
    const std::vector<gradient_view> grads = {gradient_view(model.grads.data(), model.n)};
    for (int t = 0; t < 3; ++t) {
      model.step = t;
      model.zero_grads();
      amp.train_step([&] { return model.forward(0); }, [&](float scaled) { model.backward(scaled, 0); }, grads,
                     [&] { model.sgd(amp.masters().master(p)); });
    }
    std::vector<std::uint16_t> bits;
    for (std::size_t i = 0; i < model.n; ++i) {
      const float m = amp.masters().master(p)[i];
      const bfloat16 w = amp.masters().working<bfloat16>(p)[i];
      const bool neighbour = w.bits() == convert<bfloat16>(m, rounding::downward).bits() ||
                             w.bits() == convert<bfloat16>(m, rounding::upward).bits();
      CHECK(neighbour);
      bits.push_back(w.bits());
    }
    runs.push_back(bits);
  }
  CHECK(runs[0] == runs[1]);
}

namespace {

struct checkpoint_run {
  std::vector<float> masters0, masters1;
  std::vector<std::uint16_t> working0;
  std::vector<float> scales;
  std::vector<bool> skipped;
  epoch_statistics total;
  session_statistics statistics;
};

// Every field of statistics() but the step time, which differs from run to run.
void same_counts(const session_statistics& a, const session_statistics& b) {
  CHECK(a.total_steps == b.total_steps);
  CHECK(a.skipped_steps == b.skipped_steps);
  CHECK(a.overflow_count == b.overflow_count);
  CHECK(a.current_scale == b.current_scale);
  CHECK(a.overflow_ratio == b.overflow_ratio);
  CHECK(a.scaler_updates == b.scaler_updates);
  CHECK(a.master_bytes == b.master_bytes);
  CHECK(a.working_bytes == b.working_bytes);
}

// Steps [from, to) of an O2 session whose model has two parameters.
checkpoint_run continue_run(precision_session& amp, int from, int to) {
  toy_model model{64, {3, 9, 10, 12}};
  const std::vector<gradient_view> grads = {gradient_view(model.grads.data(), model.n)};
  checkpoint_run out;
  for (int t = from; t < to; ++t) {
    model.step = t;
    model.zero_grads();
    const step_result s =
        amp.train_step([&] { return model.forward(0); }, [&](float scaled) { model.backward(scaled, 0); }, grads,
                       [&] {
                         model.sgd(amp.masters().master(0));
                         model.sgd(amp.masters().master(1));
                       });
    out.scales.push_back(s.scale);
    out.skipped.push_back(s.skipped);
  }
  out.masters0.assign(amp.masters().master(0), amp.masters().master(0) + model.n);
  out.masters1.assign(amp.masters().master(1), amp.masters().master(1) + model.n);
  for (std::size_t i = 0; i < model.n; ++i) out.working0.push_back(amp.masters().working<float16>(0)[i].bits());
  out.total = amp.total();
  out.statistics = amp.statistics();
  return out;
}

precision_session o2_session(const recipe& r, float offset, std::size_t n0 = 64) {
  precision_session amp{r};
  const std::vector<float> a = initial_parameters(n0, offset), b = initial_parameters(64, 2 * offset);
  amp.masters().add(a.data(), a.size());
  amp.masters().add(b.data(), b.size());
  return amp;
}

}  // namespace

TEST_CASE("save and load in the middle of training continue bit for bit", "[session]") {
  const recipe r = parse_recipe("recipe=O2, growth_interval=2");
  precision_session original = o2_session(r, 0);
  continue_run(original, 0, 7);
  const std::vector<std::uint8_t> saved = original.save_state();
  const std::string path = "precision_session_test.state";
  original.save(path);
  const checkpoint_run expected = continue_run(original, 7, 15);

  for (int from_file = 0; from_file < 2; ++from_file) {
    precision_session resumed = o2_session(r, 1.0f);  // other initial values: the state replaces them
    if (from_file) {
      resumed.load(path);
    } else {
      resumed.load_state(saved);
    }
    const checkpoint_run got = continue_run(resumed, 7, 15);
    CHECK(got.scales == expected.scales);
    CHECK(got.skipped == expected.skipped);
    CHECK(same_bits(got.masters0.data(), expected.masters0.data(), expected.masters0.size() * 4));
    CHECK(same_bits(got.masters1.data(), expected.masters1.data(), expected.masters1.size() * 4));
    CHECK(got.working0 == expected.working0);
    CHECK(got.total.steps == expected.total.steps);
    CHECK(got.total.skipped == expected.total.skipped);
    CHECK(got.total.scale_changes == expected.total.scale_changes);
    same_counts(got.statistics, expected.statistics);
  }
  std::remove(path.c_str());
}

TEST_CASE("statistics() after a load are those saved: the run's totals continue", "[session]") {
  const recipe r = parse_recipe("recipe=O2, growth_interval=2");
  precision_session original = o2_session(r, 0);
  continue_run(original, 0, 11);  // overflows at steps 3, 9 and 10
  original.end_epoch();           // an epoch ends; the run's totals go on
  const session_statistics saved = original.statistics();
  CHECK(saved.total_steps == 11);
  CHECK(saved.skipped_steps == 3);
  CHECK(saved.overflow_count == 3);
  CHECK(saved.scaler_updates > 0);
  precision_session resumed = o2_session(r, 1.0f);
  resumed.load_state(original.save_state());
  const session_statistics loaded = resumed.statistics();
  same_counts(loaded, saved);
  CHECK(loaded.avg_step_time == saved.avg_step_time);  // the seconds are saved too
  CHECK(resumed.epoch().steps == 0);
}

TEST_CASE("a session state from another recipe, other shapes or corrupt bytes is refused and changes nothing",
          "[session]") {
  const recipe r = parse_recipe("recipe=O2, growth_interval=2");
  precision_session source = o2_session(r, 0);
  continue_run(source, 0, 5);
  const std::vector<std::uint8_t> saved = source.save_state();

  const auto refused = [&](precision_session& target, std::vector<std::uint8_t> bytes, const std::string& message) {
    const std::vector<std::uint8_t> before = target.save_state();
    try {
      target.load_state(bytes);
      FAIL("accepted");
    } catch (const scaler_state_error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(message) != std::string::npos);
    }
    CHECK(target.save_state() == before);
  };
  precision_session other_recipe = o2_session(parse_recipe("recipe=O2, growth_interval=2, init_scale=1024"), 0);
  refused(other_recipe, saved, "another recipe: saved with init_scale=65536, this session has init_scale=1024");
  precision_session other_shape = o2_session(r, 0, 65);
  refused(other_shape, saved, "parameter 0 has 64 values, the registered one has 65");
  precision_session no_masters{parse_recipe("recipe=fp16, growth_interval=2")};
  refused(no_masters, saved, "another recipe");
  precision_session target = o2_session(r, 1.0f);
  std::vector<std::uint8_t> corrupt = saved;
  corrupt[corrupt.size() / 2] ^= 0x10;
  refused(target, corrupt, "checksum mismatch");
  std::vector<std::uint8_t> truncated(saved.begin(), saved.end() - 9);
  refused(target, truncated, "truncated");
  refused(target, {}, "shorter than the 20-byte frame");
  const std::vector<std::uint8_t> scaler_state = loss_scaler<dynamic_scaling>{}.save_state();
  refused(target, scaler_state, "does not start with the magic 'MXSESSON'");
  // Version 1 held no count of scale changes, versions 1 and 2 no parameters or optimizer,
  // version 3 no Kahan compensations, version 4 no schedule position, version 5 no override
  // rules, version 6 no data-parallel keys, version 7 no mx_weight_scales: refused, not read
  // with made-up values.
  for (const std::uint32_t old : {1u, 2u, 3u, 4u, 5u, 6u, 7u}) {
    const std::vector<std::uint8_t> older =
        state_fuzz::framed(detail::session_magic, old, saved.data() + 16, saved.size() - 20);
    refused(target, older, "session state is version " + std::to_string(old) + ", this build reads up to 8");
  }
}

TEST_CASE("a session state whose scaler carries other options than the recipe is refused", "[session]") {
  const recipe r = parse_recipe("recipe=O2, growth_interval=2");
  std::vector<std::uint8_t> saved = o2_session(r, 0).save_state();
  // The payload: settings (u16 length, text), the schedule (u32 length, text, then u32, u8, 3 ×
  // i64, u32 and u32 switches: none here), enabled (u8), then the scaler blob (u32 length, bytes).
  const auto u32_at = [&](std::size_t i) {
    return saved[i] | static_cast<std::size_t>(saved[i + 1]) << 8 | static_cast<std::size_t>(saved[i + 2]) << 16 |
           static_cast<std::size_t>(saved[i + 3]) << 24;
  };
  std::size_t at = 16;
  at += 2 + (saved[at] | static_cast<std::size_t>(saved[at + 1]) << 8);
  at += 4 + u32_at(at);
  REQUIRE(u32_at(at + 4 + 1 + 24 + 4) == 0);  // no switches
  at += 4 + 1 + 24 + 4 + 4 + 1;
  const std::size_t old_length = u32_at(at);
  dynamic_scaling other = r.dynamic_policy();
  other.growth_interval = 5;
  const std::vector<std::uint8_t> blob = loss_scaler<dynamic_scaling>{other, r.options()}.save_state();
  std::vector<std::uint8_t> payload(saved.begin() + 16, saved.begin() + static_cast<std::ptrdiff_t>(at));
  for (int i = 0; i < 4; ++i) payload.push_back(static_cast<std::uint8_t>(blob.size() >> (8 * i)));
  payload.insert(payload.end(), blob.begin(), blob.end());
  payload.insert(payload.end(), saved.begin() + static_cast<std::ptrdiff_t>(at + 4 + old_length), saved.end() - 4);
  const std::vector<std::uint8_t> forged =
      state_fuzz::framed(detail::session_magic, detail::session_state_version, payload.data(), payload.size());
  precision_session target = o2_session(r, 0);
  const std::vector<std::uint8_t> before = target.save_state();
  CHECK_THROWS_WITH(target.load_state(forged), Catch::Contains("policy or scaler options that differ"));
  CHECK(target.save_state() == before);
  // The same surgery with the recipe's own options is accepted: the check is on the options only.
  const std::vector<std::uint8_t> own = loss_scaler<dynamic_scaling>{r.dynamic_policy(), r.options()}.save_state();
  std::vector<std::uint8_t> same(saved.begin() + 16, saved.begin() + static_cast<std::ptrdiff_t>(at));
  for (int i = 0; i < 4; ++i) same.push_back(static_cast<std::uint8_t>(own.size() >> (8 * i)));
  same.insert(same.end(), own.begin(), own.end());
  same.insert(same.end(), saved.begin() + static_cast<std::ptrdiff_t>(at + 4 + old_length), saved.end() - 4);
  CHECK_NOTHROW(target.load_state(
      state_fuzz::framed(detail::session_magic, detail::session_state_version, same.data(), same.size())));
}

TEST_CASE("enable, disable and toggle switch autocast and loss scaling; the log says so", "[session]") {
  std::vector<std::string> lines;
  precision_session amp{recipes::fp16(), [&](const std::string& line) { lines.push_back(line); }};
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "[AMP] Using FP16 mixed precision (dynamic loss scaling, initial scale 65536.0)");
  float grad = 0;
  const std::vector<gradient_view> grads = {gradient_view(&grad, 1)};
  autocast_state seen;
  float scaled_seen = 0;
  const auto step = [&] {
    grad = 0;
    return amp.train_step(
        [&] {
          seen = current_autocast();
          return 0.25f;
        },
        [&](float scaled) {
          scaled_seen = scaled;
          grad = scaled;
        },
        grads, [] {});
  };
  step();
  CHECK(seen.enabled);
  CHECK(seen.lower_precision == dtype::float16);
  CHECK(scaled_seen == 0.25f * 65536);
  amp.disable();
  CHECK_FALSE(amp.enabled());
  CHECK(amp.autocast_dtype() == dtype::float32);
  step();
  CHECK_FALSE(seen.enabled);
  CHECK(scaled_seen == 0.25f);  // scale 1
  CHECK(amp.get_scale() == 1.0f);
  amp.toggle();
  CHECK(amp.enabled());
  step();
  CHECK(seen.enabled);
  CHECK(scaled_seen == 0.25f * 65536);  // the scaler's state was kept while disabled
  CHECK_FALSE(is_autocast_enabled());   // the scope ends with the forward pass
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] == "[AMP] Disabled: training in FP32 (no autocast, no loss scaling)");
  CHECK(lines[2] == lines[0]);
}

TEST_CASE("an optimizer step that throws leaves a session that steps on", "[session]") {
  precision_session amp{parse_recipe("recipe=fp16, growth_interval=1")};
  float grad = 0;
  const std::vector<gradient_view> grads = {gradient_view(&grad, 1)};
  const auto forward = [] { return 1.0f; };
  const auto backward = [&](float scaled) { grad = scaled * 1e-6f; };
  CHECK_THROWS_WITH(amp.train_step(forward, backward, grads, [] { throw std::runtime_error("optimizer failed"); }),
                    "optimizer failed");
  CHECK(amp.get_scale() == 65536.0f);  // closed at its scale: no growth applied
  const step_result next = amp.train_step(forward, backward, grads, [] {});
  CHECK_FALSE(next.skipped);
  CHECK(amp.get_scale() == 131072.0f);  // the policy runs again (growth_interval 1)
  precision_session strict{parse_recipe("recipe=fp16, max_consecutive_skips=1")};
  const auto overflow = [&](float) { grad = INFINITY; };
  CHECK_THROWS_AS(strict.train_step(forward, overflow, grads, [] {}), skip_limit_error);
  CHECK_NOTHROW(strict.train_step(forward, backward, grads, [] {}));
}

TEST_CASE("log lines and epoch statistics", "[session]") {
  CHECK(precision_session{recipes::bf16()}.describe() == "[AMP] Using BF16 mixed precision (no loss scaling)");
  CHECK(precision_session{recipes::O2()}.describe() ==
        "[AMP] Using FP16 mixed precision (dynamic loss scaling, initial scale 65536.0), FP32 master weights, model "
        "cast to FP16, batchnorm kept in FP32");
  CHECK(precision_session{recipes::O3()}.describe() ==
        "[AMP] Using FP16 training (static loss scale 1.0), model cast to FP16");
  CHECK(precision_session{recipes::O0()}.describe() == "[AMP] Using FP32 training (static loss scale 1.0)");

  std::vector<std::string> lines;
  precision_session amp{recipes::fp16(), [&](const std::string& line) { lines.push_back(line); }};
  toy_model model{16, {0, 4}};
  const std::vector<gradient_view> grads = {gradient_view(model.grads.data(), model.n)};
  for (int t = 0; t < 10; ++t) {
    model.step = t;
    model.zero_grads();
    amp.train_step([&] { return model.forward(0); }, [&](float scaled) { model.backward(scaled, 0); }, grads, [] {}, 2);
    if (t == 0) CHECK(amp.stats_line() == "[AMP Stats] Scale: 32768.0, Growth tracker: 0");
  }
  CHECK(amp.epoch().steps == 10);
  CHECK(amp.epoch().skipped == 2);
  CHECK(amp.epoch().overflow_rate() == 0.2);
  CHECK(amp.epoch().mean_step_seconds() >= 0);
  const epoch_statistics e = amp.end_epoch();
  CHECK(e.steps == 10);
  CHECK(amp.epoch().steps == 0);
  CHECK(amp.total().steps == 10);
  CHECK(lines.back().rfind("[AMP Epoch] Steps: 10, Skipped: 2 (20.00%), Mean step: ", 0) == 0);
  std::vector<std::string> skips;  // one line per skipped step, naming the first non-finite gradient
  for (const std::string& line : lines) {
    if (line.rfind("[AMP Skip]", 0) == 0) skips.push_back(line);
  }
  CHECK(skips == std::vector<std::string>{
                     "[AMP Skip] Step 1 skipped, loss scale 65536.0 -> 32768.0: first non-finite gradient in array 0, "
                     "element 8 (+inf)",
                     "[AMP Skip] Step 5 skipped, loss scale 32768.0 -> 16384.0: first non-finite gradient in array 0, "
                     "element 8 (+inf)"});
  CHECK_THROWS_AS(amp.train_step([] { return 0.0f; }, [](float) {}, grads, [] {}, -1), invalid_argument);
}

TEST_CASE("fp8 recipe: the session's delayed scaling follows a standalone fp8_training", "[session]") {
  precision_session amp{recipes::fp8()};
  CHECK_THROWS_AS(amp.fp8(), invalid_argument);
  amp.use_fp8_layers(1);
  ops::fp8_training reference{recipes::fp8().fp8_policy(), 1};
  const std::vector<float> init = initial_parameters(32);
  amp.masters().add(init.data(), init.size());
  std::vector<float> x(32), dy(32), grad(32, 0.0f);
  std::vector<float8_e4m3fn> xq(32);
  std::vector<float8_e5m2> dyq(32);
  const std::vector<gradient_view> grads = {gradient_view(grad.data(), grad.size())};
  for (int t = 0; t < 6; ++t) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(t + 1) * 0.5f * static_cast<float>(i % 5);
      dy[i] = 1e-3f * static_cast<float>(t + 2) * static_cast<float>(i % 3);
    }
    amp.train_step(
        [&] {
          amp.fp8().forward().quantize(0, x.data(), x.size(), xq.data());
          return 1.0f;
        },
        [&](float) { amp.fp8().backward().quantize(0, dy.data(), dy.size(), dyq.data()); }, grads, [] {});
    reference.forward().quantize(0, x.data(), x.size(), xq.data());
    reference.backward().quantize(0, dy.data(), dy.size(), dyq.data());
    reference.update();
    CHECK(amp.fp8().forward().scale(0) == reference.forward().scale(0));
    CHECK(amp.fp8().backward().scale(0) == reference.backward().scale(0));
  }
  CHECK(amp.fp8().forward().scale(0) != 1.0f);  // the amaxes moved the scales
  CHECK_THROWS_AS(precision_session{recipes::bf16()}.use_fp8_layers(1), invalid_argument);
}

TEST_CASE("backward runs in the forward's autocast scope: an fp16 recipe's weight gradients are fp16 products",
          "[session]") {
  matrix x(dtype::float32, 4, 8), w(dtype::float32, 3, 8), dy(dtype::float32, 4, 3);
  for (std::size_t i = 0; i < 32; ++i) x.data<float>()[i] = 0.1234567f * static_cast<float>(i % 7) - 0.3141593f;
  for (std::size_t i = 0; i < 24; ++i) w.data<float>()[i] = 0.0271828f * static_cast<float>(i % 5) + 0.0577216f;
  for (std::size_t i = 0; i < 12; ++i) dy.data<float>()[i] = 0.7071068f - 0.1414214f * static_cast<float>(i % 4);
  const auto weight_gradient = [&] { return ops::linear_backward(dy, x, w).weight.to(dtype::float32); };
  const matrix in_float = weight_gradient();
  std::vector<float> gradient(24, 0.0f);
  const std::vector<gradient_view> grads{gradient_view(gradient.data(), gradient.size())};
  for (const char* name : {"fp16", "bf16", "O0"}) {
    INFO(name);
    precision_session amp{parse_recipe(name)};
    autocast_state in_forward, in_backward;
    matrix computed;
    amp.train_step(
        [&] {
          in_forward = current_autocast();
          return 1.0f;
        },
        [&](float) {
          in_backward = current_autocast();
          computed = weight_gradient();
        },
        grads, [] {});
    CHECK(in_backward.enabled == in_forward.enabled);
    CHECK(in_backward.lower_precision == in_forward.lower_precision);
    CHECK(in_forward.lower_precision == amp.autocast_dtype());
    // The same backward written by hand inside the recipe's scope gives the same bits.
    const matrix expected = [&] {
      if (!in_forward.enabled) return weight_gradient();
      const dynamic_autocast_scope scope(in_forward.lower_precision);
      return weight_gradient();
    }();
    REQUIRE(computed.rows() == 3);
    CHECK(same_bits(computed.data<float>(), expected.data<float>(), 24 * sizeof(float)));
    // ... and, in the low-precision recipes, not the float32 gradient (the test can tell them apart).
    const bool as_float = same_bits(computed.data<float>(), in_float.data<float>(), 24 * sizeof(float));
    CHECK(as_float == !in_forward.enabled);
  }
}

TEST_CASE("statistics(): steps, skips, overflows, scale and scale changes after injected overflows", "[session]") {
  precision_session amp{parse_recipe("recipe=fp16, growth_interval=2")};
  const session_statistics fresh = amp.statistics();
  CHECK(fresh.total_steps == 0);
  CHECK(fresh.overflow_ratio == 0.0);  // no steps: 0, not NaN
  CHECK(fresh.avg_step_time == 0.0);
  CHECK(fresh.current_scale == 65536.0);

  toy_model model{16, {0, 4, 5}};
  const std::vector<gradient_view> grads = {gradient_view(model.grads.data(), model.n)};
  std::vector<float> scales;
  const auto step = [&](int t) {
    model.step = t;
    model.zero_grads();
    scales.push_back(
        amp.train_step([&] { return model.forward(0); }, [&](float scaled) { model.backward(scaled, 0); }, grads, [] {})
            .scale);
  };
  for (int t = 0; t < 10; ++t) step(t);
  scales.push_back(amp.get_scale());
  std::int64_t changes = 0;
  for (std::size_t t = 1; t < scales.size(); ++t) changes += scales[t] != scales[t - 1] ? 1 : 0;

  const session_statistics s = amp.statistics();
  const scaler_statistics scaler = std::get<loss_scaler<dynamic_scaling>>(amp.scaler()).get_amp_stats();
  CHECK(s.total_steps == 10);
  CHECK(s.skipped_steps == 3);
  CHECK(s.overflow_count == 3);
  CHECK(s.overflow_count == scaler.counters.overflow_count);
  CHECK(s.overflow_ratio == 0.3);
  CHECK(s.current_scale == amp.get_scale());
  CHECK(s.current_scale == scaler.scale);
  CHECK(s.avg_step_time >= 0);
  CHECK(s.avg_step_time == amp.total().mean_step_seconds());
  // 65536 -> 32768 (overflow), 65536 (growth), 32768, 16384 (overflows), 32768, 65536 (growth).
  CHECK(s.scaler_updates == 6);
  CHECK(s.scaler_updates == changes);
  CHECK(s.scaler_updates == static_cast<std::int64_t>(scaler.history.size()));  // no floor entries here
  CHECK(s.master_bytes == 0);                                                   // no master weights in this recipe
  CHECK(s.working_bytes == 0);

  amp.end_epoch();  // the statistics cover the run, not the epoch
  CHECK(amp.statistics().total_steps == 10);

  // Disabled: the fp32 scaler's checks count too; the scale is 1 and does not change.
  amp.disable();
  model.overflow_steps.insert(10);
  step(10);
  const session_statistics d = amp.statistics();
  CHECK(d.total_steps == 11);
  CHECK(d.skipped_steps == 4);
  CHECK(d.overflow_count == 4);
  CHECK(d.current_scale == 1.0);
  CHECK(d.scaler_updates == 6);
  amp.enable();
  CHECK(amp.statistics().current_scale == scaler.scale);

  // A step that ends in skip_limit_error returns no result: overflow_count, from the scaler's
  // counters, has it; total_steps does not.
  precision_session strict{parse_recipe("recipe=fp16, max_consecutive_skips=1")};
  float grad = 0;
  CHECK_THROWS_AS(
      strict.train_step([] { return 1.0f; }, [&](float) { grad = INFINITY; }, {gradient_view(&grad, 1)}, [] {}),
      skip_limit_error);
  CHECK(strict.statistics().total_steps == 0);
  CHECK(strict.statistics().overflow_count == 1);
  CHECK(strict.statistics().overflow_ratio == 0.0);
}

TEST_CASE("statistics(): master and working memory are element counts times element sizes", "[session]") {
  const std::vector<float> a = initial_parameters(64), b = initial_parameters(100);
  precision_session o2{recipes::O2()};  // fp16 working copies
  o2.masters().add(a.data(), a.size());
  std::vector<float16> user(100);
  o2.masters().add(b.data(), b.size(), user.data());  // a working copy in the caller's buffer counts too
  CHECK(o2.statistics().master_bytes == 164 * sizeof(float));
  CHECK(o2.statistics().working_bytes == 164 * sizeof(float16));
  precision_session fp8{recipes::fp8()};  // bf16 working copies
  fp8.masters().add(b.data(), b.size());
  CHECK(fp8.statistics().master_bytes == 100 * sizeof(float));
  CHECK(fp8.statistics().working_bytes == 100 * sizeof(bfloat16));
  CHECK(precision_session{recipes::bf16()}.statistics().master_bytes == 0);
}

TEST_CASE("statistics as JSON: exactly the documented keys, strict JSON that reads back", "[session]") {
  session_statistics s;
  s.total_steps = 10;
  s.skipped_steps = 2;
  s.overflow_count = 3;
  s.current_scale = 32768;
  s.overflow_ratio = 0.2;
  s.avg_step_time = 0.0125;
  s.scaler_updates = 4;
  s.master_bytes = 656;
  s.working_bytes = 328;
  s.gradient_bytes = 656;
  s.optimizer_bytes = 1312;
  s.recipe_switches = 2;
  CHECK(to_json(s) ==
        "{\"total_steps\": 10, \"skipped_steps\": 2, \"overflow_count\": 3, \"current_scale\": 32768, "
        "\"overflow_ratio\": 0.2, \"avg_step_time\": 0.0125, \"scaler_updates\": 4, \"master_bytes\": 656, "
        "\"working_bytes\": 328, \"gradient_bytes\": 656, \"optimizer_bytes\": 1312, \"recipe_switches\": 2}");

  // A session's own statistics through the library's strict reader (RFC 8259).
  precision_session amp = o2_session(parse_recipe("recipe=O2, growth_interval=2"), 0);
  continue_run(amp, 0, 11);
  const session_statistics got = amp.statistics();
  const detail::json_value v = detail::parse_json(to_json(got));
  REQUIRE(v.type == detail::json_value::kind::object);
  const std::vector<std::string> keys = {"total_steps",    "skipped_steps",  "overflow_count",  "current_scale",
                                         "overflow_ratio", "avg_step_time",  "scaler_updates",  "master_bytes",
                                         "working_bytes",  "gradient_bytes", "optimizer_bytes", "recipe_switches"};
  REQUIRE(v.members.size() == keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    CHECK(v.members[i].first == keys[i]);
    CHECK(v.members[i].second.type == detail::json_value::kind::number);
  }
  CHECK(v.members[0].second.number == static_cast<double>(got.total_steps));
  CHECK(v.members[2].second.number == static_cast<double>(got.overflow_count));
  CHECK(v.members[3].second.number == got.current_scale);
  CHECK(v.members[4].second.number == got.overflow_ratio);  // the shortest text reads back exactly
  CHECK(v.members[5].second.number == got.avg_step_time);
  CHECK(v.members[7].second.number == static_cast<double>(got.master_bytes));
}

namespace {

// A process group of one process that records what the session asks of it and stands in for
// the other ranks: every rank holding the same gradients, their mean is the gradient itself;
// `halve` makes it the mean with a rank whose gradients are all zero.
class recording_group : public process_group {
 public:
  bool halve = true, plant_non_finite = false;
  std::size_t differing = std::numeric_limits<std::size_t>::max();
  std::vector<std::vector<float>> seen;  // the gradients each all_reduce received, concatenated
  std::vector<all_reduce_options> options;
  std::vector<std::vector<std::uint64_t>> prints;

  int rank() const override { return 0; }
  int size() const override { return 2; }
  all_reduce_result all_reduce(const gradient_view* arrays, std::size_t count, const all_reduce_options& o) override {
    options.push_back(o);
    seen.emplace_back();
    all_reduce_result r;
    r.buckets = 1;
    r.found_inf = plant_non_finite;
    for (std::size_t a = 0; a < count; ++a) {
      auto* data = static_cast<float*>(arrays[a].data());
      seen.back().insert(seen.back().end(), data, data + arrays[a].size());
      for (std::size_t i = 0; i < arrays[a].size(); ++i) {
        data[i] = plant_non_finite ? std::numeric_limits<float>::quiet_NaN() : halve ? data[i] / 2 : data[i];
      }
    }
    return r;
  }
  std::size_t first_difference(const std::uint64_t* f, std::size_t count) override {
    prints.emplace_back(f, f + count);
    return std::min(differing, count);
  }
  // The other rank's amaxes, as the maximum would take them: the first `other_amax.size()`
  // values become max(this rank's, the other's).
  std::vector<float> other_amax;
  std::vector<std::vector<float>> amax_seen;
  void reduce_amax(float* amax, std::size_t count) override {
    amax_seen.emplace_back(amax, amax + count);
    for (std::size_t i = 0; i < count && i < other_amax.size(); ++i) amax[i] = std::max(amax[i], other_amax[i]);
  }
};

struct two_parameters {
  parameter w{matrix(dtype::float32, 2, 3), "fc.weight"};
  parameter b{matrix(dtype::float32, 1, 3), "fc.bias"};
  precision_session amp;
  explicit two_parameters(const recipe& r) : amp(r) {
    amp.add_parameter(w);
    amp.add_parameter(b);
    amp.use_optimizer(optim::sgd());
  }
  // Micro-batch m adds (m + 1) / 8 · loss_gradient · factor to every gradient value.
  step_result step(float factor = 1.0f) {
    return amp.train_step([] { return 1.0f; },
                          [&](const backward_context& c) {
                            const float v = static_cast<float>(c.micro_batch + 1) / 8 * c.loss_gradient * factor;
                            matrix gw(dtype::float32, 2, 3), gb(dtype::float32, 1, 3);
                            std::fill(gw.data<float>(), gw.data<float>() + 6, v);
                            std::fill(gb.data<float>(), gb.data<float>() + 3, -v);
                            amp.accumulate_gradient(w, gw);
                            amp.accumulate_gradient(b, gb);
                          });
  }
};

}  // namespace

TEST_CASE("with a process group, train_step reduces the accumulated scaled gradients once, before the unscale",
          "[session][data_parallel]") {
  const recipe r = parse_recipe(
      "recipe=fp16, init_scale=1024, accumulation_steps=2, reduce_dtype=bf16, bucket_bytes=4096, "
      "weight_check_interval=2");
  two_parameters ranked(r), alone(r);
  auto group = std::make_shared<recording_group>();
  ranked.amp.use_process_group(group);
  CHECK(ranked.amp.group() == group);
  for (int t = 0; t < 4; ++t) {
    const step_result s = ranked.step();
    alone.step(0.5f);  // what the mean with a zero rank gives
    CHECK_FALSE(s.skipped);
    CHECK(s.communicated.buckets == 1);
  }
  REQUIRE(group->seen.size() == 4);  // once per optimizer step, not per micro-batch
  for (const std::vector<float>& g : group->seen) {
    REQUIRE(g.size() == 9);
    CHECK(g[0] == 1024.0f * (1.0f / 8 + 2.0f / 8));  // both micro-batches, still scaled
    CHECK(g[8] == -1024.0f * (1.0f / 8 + 2.0f / 8));
  }
  for (const all_reduce_options& o : group->options) {
    CHECK(o.communication == dtype::bfloat16);
    CHECK(o.bucket_bytes == 4096u);
    CHECK(o.average);
  }
  CHECK(std::memcmp(ranked.w.value().raw_data(), alone.w.value().raw_data(), ranked.w.value().bytes()) == 0);
  CHECK(std::memcmp(ranked.b.value().raw_data(), alone.b.value().raw_data(), ranked.b.value().bytes()) == 0);
  // The replicas compared after steps 2 and 4: two fingerprints each, which moved with the weights.
  REQUIRE(group->prints.size() == 2);
  CHECK(group->prints[0].size() == 2);
  CHECK(group->prints[0] != group->prints[1]);
  // The weight's values, then its (empty) master and compensation: model_parameters::fingerprint.
  std::uint64_t expected = detail::fingerprint_bytes(ranked.w.value().raw_data(), ranked.w.value().bytes());
  expected = detail::fingerprint_bytes(nullptr, 0, detail::fingerprint_bytes(nullptr, 0, expected));
  CHECK(group->prints[1][0] == expected);
}

TEST_CASE("with a process group, the fp8 layers' amaxes are agreed on at the end of every step",
          "[session][data_parallel]") {
  // Two layers: forward tensors 0-3 (input, weight per layer), backward tensors 0-1.  This rank
  // sees small values; the "other rank" larger ones on forward tensor 0 and backward tensor 1.
  precision_session amp{recipes::fp8()};
  amp.use_fp8_layers(2);
  auto group = std::make_shared<recording_group>();
  group->other_amax = {8.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f};
  amp.use_process_group(group);
  ops::fp8_training reference{recipes::fp8().fp8_policy(), 2};
  std::vector<float> x(16, 0.25f), dy(16, 0.01f), grad(4, 0.0f);
  std::vector<float8_e4m3fn> xq(16);
  std::vector<float8_e5m2> dyq(16);
  const std::vector<gradient_view> grads = {gradient_view(grad.data(), grad.size())};
  for (int t = 0; t < 3; ++t) {
    const auto quantize_all = [&](ops::fp8_training& fp8) {
      for (std::size_t tensor = 0; tensor < 4; ++tensor) fp8.forward().quantize(tensor, x.data(), x.size(), xq.data());
      for (std::size_t tensor = 0; tensor < 2; ++tensor)
        fp8.backward().quantize(tensor, dy.data(), dy.size(), dyq.data());
    };
    amp.train_step(
        [&] {
          for (std::size_t tensor = 0; tensor < 4; ++tensor)
            amp.fp8().forward().quantize(tensor, x.data(), x.size(), xq.data());
          return 1.0f;
        },
        [&](float) {
          for (std::size_t tensor = 0; tensor < 2; ++tensor)
            amp.fp8().backward().quantize(tensor, dy.data(), dy.size(), dyq.data());
        },
        grads, [] {});
    // The reference sees what the maximum over both ranks is: the other rank's larger values.
    quantize_all(reference);
    reference.update([&](float* amax, std::size_t count) {
      REQUIRE(count == 6);
      for (std::size_t i = 0; i < count; ++i) amax[i] = std::max(amax[i], group->other_amax[i]);
    });
    for (std::size_t tensor = 0; tensor < 4; ++tensor)
      CHECK(amp.fp8().forward().scale(tensor) == reference.forward().scale(tensor));
    for (std::size_t tensor = 0; tensor < 2; ++tensor)
      CHECK(amp.fp8().backward().scale(tensor) == reference.backward().scale(tensor));
  }
  // Once per step, with this rank's own amaxes, forward tensors first.
  REQUIRE(group->amax_seen.size() == 3);
  CHECK(group->amax_seen[0] == std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f, 0.01f, 0.01f});
  // The agreed maxima moved the scales apart from a rank that kept its own.
  ops::fp8_training alone{recipes::fp8().fp8_policy(), 2};
  for (std::size_t tensor = 0; tensor < 4; ++tensor) alone.forward().quantize(tensor, x.data(), x.size(), xq.data());
  for (std::size_t tensor = 0; tensor < 2; ++tensor)
    alone.backward().quantize(tensor, dy.data(), dy.size(), dyq.data());
  alone.update();
  CHECK(amp.fp8().forward().scale(0) < alone.forward().scale(0));
  CHECK(amp.fp8().forward().scale(1) == alone.forward().scale(1));
  CHECK(amp.fp8().backward().scale(1) < alone.backward().scale(1));
}

TEST_CASE("a non-finite gradient on any rank skips the step with no culprit named", "[session][data_parallel]") {
  two_parameters ranked(parse_recipe("recipe=fp16, init_scale=1024"));
  auto group = std::make_shared<recording_group>();
  ranked.amp.use_process_group(group);
  const matrix before = ranked.w.value();
  group->plant_non_finite = true;
  const step_result s = ranked.step();
  CHECK(s.skipped);
  CHECK(s.communicated.found_inf);
  CHECK_FALSE(s.culprit);
  CHECK(s.parameter.empty());
  CHECK(ranked.amp.get_scale() == 512.0f);
  CHECK(std::memcmp(before.raw_data(), ranked.w.value().raw_data(), before.bytes()) == 0);
  group->plant_non_finite = false;
  CHECK_FALSE(ranked.step().skipped);
}

TEST_CASE("replicas that differ are a replica_mismatch_error naming the parameter and the step",
          "[session][data_parallel]") {
  two_parameters ranked(parse_recipe("recipe=fp32, weight_check_interval=3"));
  auto group = std::make_shared<recording_group>();
  ranked.amp.use_process_group(group);
  ranked.step();
  ranked.step();
  group->differing = 1;
  CHECK_THROWS_WITH(ranked.step(), Catch::Contains("precision_session::check_replicas: after 3 steps the 2 ranks hold "
                                                   "different parameter 'fc.bias' (1 of 2 registered"));
  CHECK_THROWS_AS(ranked.amp.check_replicas(), replica_mismatch_error);
  group->differing = 0;
  CHECK_THROWS_WITH(ranked.amp.check_replicas(), Catch::Contains("different parameter 'fc.weight' (0 of 2"));
  CHECK_THROWS_WITH(ranked.amp.train_step([] { return 1.0f; }, [&](float) { ranked.amp.use_process_group(nullptr); }),
                    Catch::Contains("use_process_group: called from inside train_step"));
  ranked.amp.use_process_group(nullptr);
  CHECK_NOTHROW(ranked.amp.check_replicas());  // no group: nothing to compare
}

TEST_CASE("without a process group the data-parallel keys change nothing", "[session][data_parallel]") {
  two_parameters plain(parse_recipe("recipe=fp16, init_scale=1024"));
  two_parameters keyed(parse_recipe("recipe=fp16, init_scale=1024, reduce_dtype=e4m3, weight_check_interval=1"));
  for (int t = 0; t < 3; ++t) {
    plain.step();
    const step_result s = keyed.step();
    CHECK(s.communicated.buckets == 0);
  }
  CHECK(std::memcmp(plain.w.value().raw_data(), keyed.w.value().raw_data(), plain.w.value().bytes()) == 0);
}
