// cuda/detail/device_scaler_step.hpp, run on the CPU: the update step of the device-resident
// scaler gives the host loss_scaler's scale, trackers and counters at every iteration, for every
// policy and the rails the device supports; and where the host throws, the device records the
// matching error and freezes.  (The GPU run of the same step, captured in a CUDA graph, is
// tests/cuda/gpu; this checks the logic it runs.)
#include <mixprec/cuda/detail/device_scaler_step.hpp>
#include <mixprec/scaling/scaling.hpp>

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace mixprec;
using gpu::device_scaler_error;
using gpu::detail::device_scaler_state;
using gpu::detail::device_update_options;

namespace {

template <class Policy>
struct device_model {
  Policy policy;
  device_scaler_state d{};
  std::vector<float> found_inf;
  device_update_options options{};

  device_model(const Policy& p, const scaler_options& o, int optimizers)
      : policy(p), found_inf(static_cast<std::size_t>(optimizers), 0.0f) {
    d.state = p.initial_state();
    d.counters = scaler_counters{};
    d.error = device_scaler_error::none;
    gpu::detail::publish_scale(d);
    options.limits = mixprec::detail::update_limits_of(o);  // as device_loss_scaler does
    options.throw_at_floor = o.at_floor == floor_action::throw_error;
  }
  void step() {
    gpu::detail::device_update_step(
        [this](scale_state& s, bool f) { return mixprec::detail::try_policy_update(policy, s, f); }, d,
        found_inf.data(), static_cast<int>(found_inf.size()), options);
  }
};

// Drives both scalers through the same found_inf pattern (per optimizer) and compares after every
// update.  Returns the number of iterations run before an error (the host throwing).
template <class Policy>
int compare_trajectories(const Policy& policy, const scaler_options& options,
                         const std::vector<std::vector<bool>>& pattern, device_scaler_error* error_seen = nullptr) {
  const int optimizers = static_cast<int>(pattern.front().size());
  loss_scaler<Policy> host(policy, options);
  device_model<Policy> device(policy, options, optimizers);
  int it = 0;
  for (const auto& found : pattern) {
    for (int i = 0; i < optimizers; ++i) {
      host.record_found_inf(found[static_cast<std::size_t>(i)], static_cast<std::size_t>(i));
      if (found[static_cast<std::size_t>(i)]) device.found_inf[static_cast<std::size_t>(i)] = 1.0f;
    }
    bool threw = false;
    try {
      host.update();
    } catch (const scaling_error&) {
      threw = true;
    }
    device.step();
    INFO("iteration " << it);
    if (threw) {
      REQUIRE(device.d.error != device_scaler_error::none);
      if (error_seen) *error_seen = device.d.error;
      // Frozen: the state is the host's (which kept its state), and a further step changes nothing.
      CHECK(device.d.state == host.state());
      const device_scaler_state before = device.d;
      device.step();
      CHECK(device.d.state == before.state);
      return it;
    }
    REQUIRE(device.d.error == device_scaler_error::none);
    REQUIRE(device.d.state == host.state());
    REQUIRE(device.d.counters == host.get_amp_stats().counters);
    REQUIRE(device.d.scale == host.get_scale());
    REQUIRE(device.d.inv_scale == host.get_inv_scale());
    for (const float f : device.found_inf) REQUIRE(f == 0.0f);
    ++it;
  }
  return it;
}

std::vector<std::vector<bool>> random_pattern(int iterations, int optimizers, double p, unsigned seed) {
  std::mt19937 random(seed);
  std::bernoulli_distribution overflow(p);
  std::vector<std::vector<bool>> pattern(static_cast<std::size_t>(iterations));
  for (auto& found : pattern) {
    for (int i = 0; i < optimizers; ++i) found.push_back(overflow(random));
  }
  return pattern;
}

}  // namespace

TEST_CASE("the device update step follows the host loss_scaler for every policy", "[device_scaler_step]") {
  dynamic_scaling fast;
  fast.growth_interval = 7;
  hysteresis_scaling megatron;
  megatron.growth_interval = 5;
  megatron.hysteresis = 3;
  hysteresis_scaling deepspeed = megatron;
  deepspeed.rules = hysteresis_scaling::rule_set::deepspeed;
  deepspeed.consecutive_hysteresis = true;
  static_scaling fixed;
  fixed.scale = 1024;
  for (const double p : {0.02, 0.2, 0.6}) {
    for (const int optimizers : {1, 3}) {
      const auto pattern = random_pattern(3000, optimizers, p, static_cast<unsigned>(p * 1000) + 7u);
      CHECK(compare_trajectories(fast, scaler_options{}, pattern) == 3000);
      CHECK(compare_trajectories(dynamic_scaling{}, scaler_options{}, pattern) == 3000);
      CHECK(compare_trajectories(megatron, scaler_options{}, pattern) == 3000);
      CHECK(compare_trajectories(deepspeed, scaler_options{}, pattern) == 3000);
      CHECK(compare_trajectories(fixed, scaler_options{}, pattern) == 3000);
      CHECK(compare_trajectories(no_scaling{}, scaler_options{}, pattern) == 3000);
    }
  }
}

TEST_CASE("the device update step applies the bounds and the floor clamp as the host does", "[device_scaler_step]") {
  dynamic_scaling d;
  d.growth_interval = 3;
  scaler_options o;
  o.min_scale = 1024;
  o.max_scale = 262144;
  const auto pattern = random_pattern(2000, 2, 0.4, 11);
  CHECK(compare_trajectories(d, o, pattern) == 2000);
  // Long runs of overflows: the floor is hit and clamped.
  std::vector<std::vector<bool>> floor_run(200, std::vector<bool>{true});
  CHECK(compare_trajectories(d, o, floor_run) == 200);
}

TEST_CASE("where the host throws, the device records the error and freezes", "[device_scaler_step]") {
  device_scaler_error error = device_scaler_error::none;
  std::vector<std::vector<bool>> overflows(100, std::vector<bool>{true});

  scaler_options skips;
  skips.max_consecutive_skips = 5;
  CHECK(compare_trajectories(dynamic_scaling{}, skips, overflows, &error) == 4);
  CHECK(error == device_scaler_error::skip_limit);

  scaler_options floor;
  floor.min_scale = 4096;
  floor.at_floor = floor_action::throw_error;
  CHECK(compare_trajectories(dynamic_scaling{}, floor, overflows, &error) == 4);  // 65536 -> 4096 in 4
  CHECK(error == device_scaler_error::floor_reached);

  hysteresis_scaling raising;
  raising.rules = hysteresis_scaling::rule_set::deepspeed;
  raising.hysteresis = 1;
  raising.min_scale = 8192;
  raising.raise_at_min_scale = true;
  CHECK(compare_trajectories(raising, scaler_options{}, overflows, &error) == 3);
  CHECK(error == device_scaler_error::policy_refused);
}

TEST_CASE("a recorded device error throws the host scaler's exception type with the values", "[device_scaler_step]") {
  device_model<dynamic_scaling> device(dynamic_scaling{}, scaler_options{}, 1);
  device.options.limits.max_consecutive_skips = 3;
  device.options.limits.min_scale = 1;
  for (int i = 0; i < 5; ++i) {
    device.found_inf[0] = 1.0f;
    device.step();
  }
  REQUIRE(device.d.error == device_scaler_error::skip_limit);
  CHECK(device.d.error_iteration == 2);
  CHECK_THROWS_AS(gpu::detail::throw_device_scaler_error(device.d, device.options, "dynamic_scaling"),
                  skip_limit_error);
  CHECK_THROWS_WITH(gpu::detail::throw_device_scaler_error(device.d, device.options, "dynamic_scaling"),
                    Catch::Contains("3 consecutive skipped steps reached scaler_options::max_consecutive_skips = 3 "
                                    "at loss scale 16384 (device scaler, stopped at iteration 2)"));
  device.d.error = device_scaler_error::floor_reached;
  CHECK_THROWS_AS(gpu::detail::throw_device_scaler_error(device.d, device.options, "dynamic_scaling"),
                  scale_floor_error);
  device.d.error = device_scaler_error::nan_scale;
  CHECK_THROWS_AS(gpu::detail::throw_device_scaler_error(device.d, device.options, "dynamic_scaling"), scaling_error);
  device.d.error = device_scaler_error::none;
  CHECK_NOTHROW(gpu::detail::throw_device_scaler_error(device.d, device.options, "dynamic_scaling"));
}
