// scaling/loss_scaler.hpp: the contract's example; the per-iteration state machine rejects misuse
// as GradScaler does; several optimizers and micro-batches per iteration; the safety rails
// (bounds, the floor actions, the consecutive-skip limit); statistics and their JSON; a custom
// policy in a few lines; static and no scaling.
#include <mixprec/scaling/loss_scaler.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace mixprec;

namespace {
constexpr float inf = std::numeric_limits<float>::infinity();

// One iteration with a gradient array that overflows or not.
template <class Scaler>
bool iterate(Scaler& scaler, bool overflow) {
  std::vector<float> g = {scaler.scale(1.f), scaler.scale(-0.5f)};
  if (overflow) g[1] = inf;
  scaler.unscale(g.data(), g.size());
  const bool ran = scaler.step([] {});
  scaler.update();
  return ran;
}
}  // namespace

TEST_CASE("the contract's loss-scaling example holds (DESIGN.md, Loss scaling)", "[loss_scaler]") {
  dynamic_scaling d;
  CHECK((d.init_scale == 65536.f && d.growth_factor == 2.f && d.backoff_factor == 0.5f && d.growth_interval == 2000));
  loss_scaler<dynamic_scaling> scaler{d};
  CHECK(scaler.get_scale() == 65536.f);
  CHECK(scaler.scale(0.5f) == 32768.f);
  std::vector<float> g = {65536.f, -131072.f, inf};
  const bool finite = scaler.unscale(g.data(), g.size());
  CHECK((!finite && g[0] == 1.f && g[1] == -2.f));
  bool ran = false;
  scaler.step([&] { ran = true; });
  CHECK(!ran);
  scaler.update();
  CHECK(scaler.get_scale() == 32768.f);

  static_scaling st;
  st.scale = 8.f;
  loss_scaler<static_scaling> fixed{st};
  CHECK(fixed.get_scale() == 8.f);
  loss_scaler<no_scaling> none{no_scaling{}};
  CHECK(none.get_scale() == 1.f);

  hysteresis_scaling h;
  CHECK((h.rules == hysteresis_scaling::rule_set::megatron && h.init_scale == 65536.f && h.growth_factor == 2.f &&
         h.backoff_factor == 0.5f && h.growth_interval == 1000 && h.hysteresis == 2 && h.min_scale == 1.f &&
         !h.consecutive_hysteresis && !h.raise_at_min_scale));
}

TEST_CASE("misuse within an iteration throws scaler_usage_error, as GradScaler raises",
          "[loss_scaler][state machine]") {
  loss_scaler<dynamic_scaling> scaler;
  float g[2] = {1.f, 2.f};
  CHECK_THROWS_WITH(scaler.update(), Catch::Contains("update() with no inf check recorded"));
  CHECK_THROWS_WITH(scaler.step([] {}), Catch::Contains("with no inf check recorded"));
  scaler.unscale(g, 2);
  CHECK_THROWS_WITH(scaler.unscale(g, 2), Catch::Contains("already been recorded for optimizer 0"));
  CHECK_THROWS_AS(scaler.record_found_inf(false), scaler_usage_error);
  CHECK(scaler.step([] {}));
  CHECK_THROWS_WITH(scaler.step([] {}), Catch::Contains("step() has already been called for optimizer 0"));
  CHECK_THROWS_WITH(scaler.unscale(g, 2), Catch::Contains("after its step()"));
  CHECK_THROWS_AS(scaler.save_state(), scaler_usage_error);
  scaler.update();
  CHECK_FALSE(scaler.iteration_in_progress());
  CHECK_THROWS_AS(scaler.step([] {}, loss_scaler<dynamic_scaling>::max_optimizers), invalid_argument);
  // A step that throws can be retried: it did not count as the step.
  scaler.unscale(g, 2);
  CHECK_THROWS_AS(scaler.step([] { throw std::runtime_error("optimizer failed"); }), std::runtime_error);
  CHECK(scaler.step([] {}));
  scaler.update();
}

TEST_CASE("several optimizers per iteration: each skips on its own check, update sees them all", "[loss_scaler]") {
  loss_scaler<dynamic_scaling> scaler;
  std::vector<float> a = {scaler.scale(1.f)}, b = {inf}, c = {scaler.scale(2.f)};
  CHECK(scaler.unscale(a.data(), a.size(), 0));
  CHECK_FALSE(scaler.unscale(b.data(), b.size(), 1));
  int ran = 0;
  CHECK(scaler.step([&] { ran += 1; }, 0));
  CHECK_FALSE(scaler.step([&] { ran += 10; }, 1));
  CHECK(scaler.found_inf());
  CHECK(ran == 1);
  // Optimizer 2 was not checked: update still applies to the iteration (one overflow: back off).
  scaler.update();
  CHECK(scaler.get_scale() == 32768.f);
  CHECK(c[0] == 131072.f);
  CHECK(scaler.get_amp_stats().counters.overflow_count == 1);
}

TEST_CASE("gradient accumulation: several scaled micro-batches, one unscale", "[loss_scaler]") {
  loss_scaler<dynamic_scaling> scaler;
  std::vector<float> grad(4, 0.f);
  const float micro[3][4] = {{1, 2, 3, 4}, {0.5f, 0.25f, -1, 2}, {-1, 0, 0, 0.125f}};
  for (const auto& m : micro) {
    for (std::size_t i = 0; i < 4; ++i) grad[i] += scaler.scale(m[i]);  // backward of the scaled loss
  }
  CHECK(scaler.unscale(grad.data(), grad.size()));
  CHECK(grad == std::vector<float>{0.5f, 2.25f, 2.f, 6.125f});
  CHECK(scaler.step([] {}));
  scaler.update();
}

TEST_CASE("several gradient arrays and element types in one unscale", "[loss_scaler]") {
  loss_scaler<dynamic_scaling> scaler;
  std::vector<float> f(10, scaler.scale(1.f));
  std::vector<bfloat16> b(10, bfloat16(scaler.scale(2.f)));
  std::vector<float16> h(3, float16(1024.f));
  CHECK(scaler.unscale({{f.data(), f.size()}, {b.data(), b.size()}, {h.data(), h.size()}}));
  CHECK(f[9] == 1.f);
  CHECK(static_cast<float>(b[0]) == 2.f);
  CHECK(static_cast<float>(h[0]) == 1024.f / 65536.f);
}

TEST_CASE("dynamic_scaling grows after exactly growth_interval clean updates", "[loss_scaler]") {
  dynamic_scaling d;
  d.growth_interval = 3;
  loss_scaler<dynamic_scaling> scaler{d};
  iterate(scaler, false);
  iterate(scaler, false);
  CHECK(scaler.get_scale() == 65536.f);
  iterate(scaler, false);
  CHECK(scaler.get_scale() == 131072.f);
  iterate(scaler, false);
  iterate(scaler, true);  // resets the tracker
  iterate(scaler, false);
  iterate(scaler, false);
  CHECK(scaler.get_scale() == 65536.f);
  iterate(scaler, false);
  CHECK(scaler.get_scale() == 131072.f);
}

TEST_CASE("update(new_scale) sets the scale and ends the iteration; bad values are errors", "[loss_scaler]") {
  loss_scaler<dynamic_scaling> scaler;
  scaler.update(1024.f);  // no check needed
  CHECK(scaler.get_scale() == 1024.f);
  CHECK(scaler.get_amp_stats().history.back().reason == scale_change_reason::manual);
  CHECK_THROWS_AS(scaler.update(0.f), invalid_argument);
  CHECK_THROWS_AS(scaler.update(std::nanf("")), invalid_argument);
  CHECK_THROWS_AS(scaler.update(inf), invalid_argument);
  loss_scaler<no_scaling> none;
  CHECK_THROWS_WITH(none.update(2.f), Catch::Contains("not 1"));
}

TEST_CASE("max_scale caps growth; min_scale stops a back-off", "[loss_scaler][bounds]") {
  dynamic_scaling d;
  d.growth_interval = 1;
  scaler_options o;
  o.max_scale = 200000.f;
  o.min_scale = 16384.f;
  loss_scaler<dynamic_scaling> scaler{d, o};
  for (int i = 0; i < 10; ++i) iterate(scaler, false);
  CHECK(scaler.get_scale() == 200000.f);
  CHECK(scaler.get_amp_stats().history.back().reason == scale_change_reason::capped);
  for (int i = 0; i < 4; ++i) iterate(scaler, true);
  CHECK(scaler.get_scale() == 16384.f);
  CHECK(scaler.get_amp_stats().counters.floor_hits == 0);  // reaching the floor is no floor hit
  iterate(scaler, true);
  CHECK(scaler.get_scale() == 16384.f);
  CHECK(scaler.get_amp_stats().counters.floor_hits == 1);
  CHECK(scaler.get_amp_stats().history.back().reason == scale_change_reason::floor_clamp);

  o.max_scale = 1024.f;
  CHECK_THROWS_WITH((loss_scaler<dynamic_scaling>{d, o}), Catch::Contains("above max_scale"));
  o.max_scale = 4e6f;
  o.min_scale = 131072.f;
  CHECK_THROWS_WITH((loss_scaler<dynamic_scaling>{d, o}), Catch::Contains("initial scale 65536 is outside"));
}

TEST_CASE("an overflow at the floor can throw, leaving the scaler as it was", "[loss_scaler][bounds]") {
  scaler_options o;
  o.min_scale = 32768.f;
  o.at_floor = floor_action::throw_error;
  loss_scaler<dynamic_scaling> scaler{dynamic_scaling{}, o};
  iterate(scaler, true);
  CHECK(scaler.get_scale() == 32768.f);
  std::vector<float> g = {inf};
  scaler.unscale(g.data(), 1);
  const scale_state before = scaler.state();
  CHECK_THROWS_WITH(scaler.update(),
                    Catch::Contains("loss scale 32768 is already at scaler_options::min_scale 32768") &&
                        Catch::Contains("asks for 16384"));
  CHECK(scaler.state() == before);
  CHECK(scaler.iteration_in_progress());
  scaler.update(65536.f);  // a way out: set a scale
  CHECK(scaler.get_scale() == 65536.f);
}

TEST_CASE("an overflow at the floor can call a user function that picks the scale", "[loss_scaler][bounds]") {
  scaler_options o;
  o.min_scale = 1.f;
  o.at_floor = floor_action::call_handler;
  std::vector<floor_event> events;
  o.floor_handler = [&](const floor_event& e) {
    events.push_back(e);
    return 1024.f;  // start over higher
  };
  hysteresis_scaling h;
  h.init_scale = 2.f;
  h.hysteresis = 1;
  loss_scaler<hysteresis_scaling> scaler{h, o};
  iterate(scaler, true);  // 2 -> 1: hysteresis_scaling's own min_scale
  CHECK(scaler.get_scale() == 1.f);
  iterate(scaler, true);  // the rule's floor holds at 1: the policy does not ask for less
  CHECK(events.empty());

  dynamic_scaling d;
  d.init_scale = 2.f;
  loss_scaler<dynamic_scaling> dyn{d, o};
  iterate(dyn, true);
  CHECK(dyn.get_scale() == 1.f);
  iterate(dyn, true);
  REQUIRE(events.size() == 1);
  CHECK(events[0].scale == 1.0);
  CHECK(events[0].proposed_scale == 0.5);
  CHECK(events[0].consecutive_skips == 2);
  CHECK(dyn.get_scale() == 1024.f);
  CHECK(dyn.get_amp_stats().history.back().reason == scale_change_reason::floor_handler);

  o.floor_handler = [](const floor_event&) { return 0.f; };
  loss_scaler<dynamic_scaling> bad{d, o};
  iterate(bad, true);
  CHECK_THROWS_WITH(iterate(bad, true), Catch::Contains("floor_handler returned scale 0"));

  o.floor_handler = nullptr;
  CHECK_THROWS_WITH((loss_scaler<dynamic_scaling>{d, o}), Catch::Contains("floor_handler is empty"));
}

TEST_CASE("a limit on consecutive skipped steps raises an error that names it", "[loss_scaler][bounds]") {
  scaler_options o;
  o.max_consecutive_skips = 5;
  loss_scaler<dynamic_scaling> scaler{dynamic_scaling{}, o};
  for (int i = 0; i < 4; ++i) iterate(scaler, true);
  iterate(scaler, false);  // a clean step resets the run
  for (int i = 0; i < 4; ++i) iterate(scaler, true);
  CHECK(scaler.get_amp_stats().counters.consecutive_skips == 4);
  CHECK_THROWS_WITH(iterate(scaler, true),
                    Catch::Contains("5 consecutive skipped steps") && Catch::Contains("max_consecutive_skips = 5"));
  CHECK_THROWS_AS(scaler.update(), skip_limit_error);  // still open, still over the limit
}

TEST_CASE("the bf16 recipe: no_scaling never multiplies but still skips on inf/NaN", "[loss_scaler]") {
  loss_scaler<no_scaling> scaler;
  std::vector<bfloat16> g = {bfloat16(3.f), bfloat16(std::nanf(""))};
  CHECK_FALSE(scaler.unscale(g.data(), g.size()));
  CHECK_FALSE(scaler.step([] {}));
  scaler.update();
  CHECK(scaler.get_scale() == 1.f);
  CHECK(static_cast<float>(g[0]) == 3.f);
  CHECK(scaler.get_amp_stats().counters.skipped_steps == 1);

  static_scaling st;
  st.scale = 128.f;
  loss_scaler<static_scaling> fixed{st};
  for (int i = 0; i < 3; ++i) iterate(fixed, i == 1);
  CHECK(fixed.get_scale() == 128.f);
  st.scale = -1.f;
  CHECK_THROWS_WITH(loss_scaler<static_scaling>{st}, Catch::Contains("scale is -1"));
}

namespace {
// A custom policy: halve on overflow, double after 100 clean steps, never above 2^24.
struct halve_and_double {
  static constexpr const char* name = "halve_and_double";
  scale_state initial_state() const {
    scale_state s;
    s.scale = 1024;
    return s;
  }
  void update(scale_state& s, bool found_inf) const {
    if (found_inf) {
      s.scale /= 2;
      s.growth_tracker = 0;
    } else if (++s.growth_tracker == 100) {
      s.scale = std::min(s.scale * 2, 16777216.0);
      s.growth_tracker = 0;
    }
  }
};
}  // namespace

TEST_CASE("a custom policy plugs in and gets the safety rails and saved state", "[loss_scaler][policy]") {
  scaler_options o;
  o.min_scale = 256.f;
  loss_scaler<halve_and_double> scaler{halve_and_double{}, o};
  for (int i = 0; i < 100; ++i) iterate(scaler, false);
  CHECK(scaler.get_scale() == 2048.f);
  for (int i = 0; i < 5; ++i) iterate(scaler, true);
  CHECK(scaler.get_scale() == 256.f);
  const auto bytes = scaler.save_state();
  loss_scaler<halve_and_double> restored{halve_and_double{}, o};
  restored.load_state(bytes);
  CHECK(restored.state() == scaler.state());
  CHECK_THROWS_WITH(loss_scaler<dynamic_scaling>{}.load_state(bytes),
                    Catch::Contains("saved by policy 'halve_and_double', this scaler runs 'dynamic_scaling'"));
}

TEST_CASE("statistics count steps and skips, keep a bounded history and export JSON", "[loss_scaler][statistics]") {
  dynamic_scaling d;
  d.growth_interval = 2;
  scaler_options o;
  o.history_capacity = 3;
  loss_scaler<dynamic_scaling> scaler{d, o};
  for (const bool overflow : {true, true, false, false, true, false, false, false, false}) iterate(scaler, overflow);
  const scaler_statistics s = scaler.get_amp_stats();
  CHECK(s.counters.steps == 9);
  CHECK(s.counters.skipped_steps == 3);
  CHECK(s.counters.overflow_count == 3);
  CHECK(s.counters.consecutive_skips == 0);
  CHECK(s.counters.longest_skip_run == 2);
  CHECK(s.iteration == 9);
  CHECK(s.last_overflow_iteration == 4);
  REQUIRE(s.history.size() == 3);  // 6 changes, the last 3 kept
  CHECK(s.history.front().iteration == 4);
  CHECK(s.history.back().iteration == 8);
  CHECK(s.history.back().reason == scale_change_reason::growth);
  // Iterations per power of two of the scale: 2^16 once, then 2^15 and 2^14 four times each.
  CHECK(s.scale_histogram == std::vector<scale_bin>{{14, 4}, {15, 4}, {16, 1}});
  const std::string json = to_json(s);
  CHECK(json ==
        "{\"policy\": \"dynamic_scaling\", \"scale\": 65536, \"growth_tracker\": 0, \"hysteresis_tracker\": 0, "
        "\"iteration\": 9, \"last_overflow_iteration\": 4, \"steps\": 9, \"skipped_steps\": 3, \"overflow_count\": 3, "
        "\"consecutive_skips\": 0, \"longest_skip_run\": 2, \"floor_hits\": 0, \"history\": ["
        "{\"iteration\": 4, \"from\": 32768, \"to\": 16384, \"reason\": \"backoff\"}, "
        "{\"iteration\": 6, \"from\": 16384, \"to\": 32768, \"reason\": \"growth\"}, "
        "{\"iteration\": 8, \"from\": 32768, \"to\": 65536, \"reason\": \"growth\"}], \"culprits\": ["
        "{\"iteration\": 0, \"optimizer\": 0, \"array\": 0, \"element\": 1, \"kind\": \"+inf\", \"rank\": -1}, "
        "{\"iteration\": 1, \"optimizer\": 0, \"array\": 0, \"element\": 1, \"kind\": \"+inf\", \"rank\": -1}, "
        "{\"iteration\": 4, \"optimizer\": 0, \"array\": 0, \"element\": 1, \"kind\": \"+inf\", \"rank\": -1}], "
        "\"culprit_counts\": [{\"optimizer\": 0, \"array\": 0, \"count\": 3}], \"scale_histogram\": ["
        "{\"log2_scale\": 14, \"steps\": 4}, {\"log2_scale\": 15, \"steps\": 4}, {\"log2_scale\": 16, \"steps\": 1}]}");

  const std::string path = "loss_scaler_test_stats.json";
  scaler.save_amp_stats(path);
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  CHECK(content.str() == json + "\n");
  std::remove(path.c_str());

  loss_scaler<hysteresis_scaling> h;
  CHECK(h.get_amp_stats().policy == "hysteresis_scaling/megatron");
  scaler_statistics odd;
  odd.scale = inf;
  odd.policy = "a \"quoted\"\n name";
  CHECK(to_json(odd).find("\"scale\": \"inf\"") != std::string::npos);
  CHECK(to_json(odd).find("\"a \\\"quoted\\\"\\u000a name\"") != std::string::npos);
}

TEST_CASE("policy options are validated at construction with messages naming the value", "[loss_scaler][policy]") {
  dynamic_scaling d;
  d.growth_factor = 1.0;
  CHECK_THROWS_WITH(loss_scaler<dynamic_scaling>{d}, Catch::Contains("growth_factor is 1, it must be finite and > 1"));
  d = dynamic_scaling{};
  d.growth_interval = 0;
  CHECK_THROWS_AS(loss_scaler<dynamic_scaling>{d}, invalid_argument);
  hysteresis_scaling h;
  h.min_scale = 1e6f;
  CHECK_THROWS_WITH(loss_scaler<hysteresis_scaling>{h},
                    Catch::Contains("min_scale is 1e+06, it must be <= init_scale"));
  h = hysteresis_scaling{};
  h.hysteresis = 0;
  CHECK_THROWS_AS(loss_scaler<hysteresis_scaling>{h}, invalid_argument);
  scaler_options o;
  o.min_scale = -1.f;
  CHECK_THROWS_WITH((loss_scaler<dynamic_scaling>{dynamic_scaling{}, o}), Catch::Contains("min_scale is -1"));
}

TEST_CASE("the usable scale range: the inverse of smallest_usable_scale is finite, of the float below it not",
          "[loss_scaler][bounds]") {
  CHECK(std::isfinite(inverse_scale(smallest_usable_scale)));
  CHECK(inverse_scale(smallest_usable_scale) > 0);
  CHECK(std::isinf(inverse_scale(std::nextafter(smallest_usable_scale, 0.f))));
  CHECK(inverse_scale(largest_usable_scale) > 0);  // 2^-128-ish: a subnormal, not zero
  CHECK(std::isfinite(inverse_scale(largest_usable_scale)));
}

TEST_CASE("a dynamic scale never backs off to where its inverse is infinite (unscale would hand out inf/NaN)",
          "[loss_scaler][bounds]") {
  // Regression: 144 overflows took the default scale to <= 2^-128; get_inv_scale() was inf, and
  // unscale({1, 0}) returned true with {inf, NaN}, so step() ran the optimizer on them.
  loss_scaler<dynamic_scaling> scaler;
  for (int i = 0; i < 200; ++i) {
    scaler.record_found_inf(true);
    scaler.update();
  }
  // 2^16 halved 143 times is 2^-127; the next halving (2^-128, whose inverse 2^128 is past float)
  // stops at the edge, and later overflows there count as floor hits.
  CHECK(scaler.get_scale() == smallest_usable_scale);
  CHECK(std::isfinite(scaler.get_inv_scale()));
  CHECK(scaler.get_amp_stats().counters.floor_hits > 0);
  std::vector<float> g = {scaler.scale(1.f), 0.f};
  CHECK(scaler.unscale(g.data(), g.size()));
  CHECK(g[0] == 1.f);
  CHECK(g[1] == 0.f);
  scaler.step([] {});
  scaler.update();

  // A back-off factor that jumps past the edge stops at the smallest usable scale.
  dynamic_scaling steep;
  steep.init_scale = 1e-30f;
  steep.backoff_factor = 1e-10;
  loss_scaler<dynamic_scaling> fast{steep};
  fast.record_found_inf(true);
  fast.update();
  CHECK(fast.get_scale() == smallest_usable_scale);  // 1e-40 is past the edge
  // A scale past the edge is refused at construction, naming the value and the range.
  dynamic_scaling tiny;
  tiny.init_scale = 1e-40f;
  CHECK_THROWS_WITH(
      loss_scaler<dynamic_scaling>{tiny},
      Catch::Contains("initial scale 9.9999") && Catch::Contains("the scales whose inverse is a finite float"));
}

TEST_CASE("a DeepSpeed scale stops growing at the largest float (unscale would zero the gradients)",
          "[loss_scaler][bounds]") {
  // Regression: with the deepspeed rules the double scale grew past FLT_MAX; get_scale() was inf,
  // the inverse 0, and unscale zeroed finite gradients while reporting them finite.
  hysteresis_scaling p;
  p.rules = hysteresis_scaling::rule_set::deepspeed;
  p.init_scale = 0x1p120f;
  p.growth_interval = 1;
  loss_scaler<hysteresis_scaling> scaler{p};
  for (int i = 0; i < 40; ++i) {
    scaler.record_found_inf(false);
    scaler.update();
  }
  CHECK(scaler.state().scale == static_cast<double>(largest_usable_scale));
  CHECK(scaler.get_inv_scale() > 0);
  float one = 1.f;
  CHECK(scaler.unscale(&one, 1));
  CHECK(one > 0);
  scaler.step([] {});
  scaler.update();
  // And the megatron rules, whose float scale would reach infinity.
  hysteresis_scaling m;
  m.growth_factor = 1e10f;
  m.growth_interval = 1;
  loss_scaler<hysteresis_scaling> megatron{m};
  for (int i = 0; i < 10; ++i) {
    megatron.record_found_inf(false);
    megatron.update();
  }
  CHECK(megatron.get_scale() == largest_usable_scale);
}
