// scaling/policies.hpp through loss_scaler: each rule set follows its reference step by step
// over long random overflow traces (bursts, isolated overflows, long clean runs crossing several
// growth intervals, overflows exactly at the growth step), compared with a plain transcription
// of the reference written below.  The unit run makes 3 * 10^5 updates per rule set; the
// [exhaustive] run (ctest label exhaustive) makes 1.2 * 10^7 per rule set.
#include <mixprec/scaling/loss_scaler.hpp>
#include <mixprec/scaling/policies.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace mixprec;

namespace {

// ---- Transcriptions of the references, as plainly as the sources read --------------------------

// torch/amp/grad_scaler.py (GradScaler.update) calling torch._amp_update_scale_, whose CPU kernel
// is _amp_update_scale_cpu_kernel in aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp (the CUDA
// kernel amp_update_scale_cuda_kernel in aten/src/ATen/native/cuda/AmpKernels.cu is the same).
// The scale is a float32 tensor, the tracker an int32 tensor, the factors C++ doubles.
struct torch_reference {
  float scale;
  int growth_tracker = 0;
  double growth_factor, backoff_factor;
  int growth_interval;

  void update(bool found_inf) {
    if (found_inf) {
      scale = static_cast<float>(scale * backoff_factor);
      growth_tracker = 0;
    } else {
      const int successful = growth_tracker + 1;
      if (successful == growth_interval) {
        const auto new_scale = static_cast<float>(scale * growth_factor);
        if (std::isfinite(new_scale)) scale = new_scale;
        growth_tracker = 0;
      } else {
        growth_tracker = successful;
      }
    }
  }
  bool at_growth_step() const { return growth_tracker + 1 == growth_interval; }
};

// deepspeed/runtime/fp16/loss_scaler.py, DynamicLossScaler.update_scale.  Python floats are
// doubles; scale_factor divides on overflow.
struct deepspeed_floor_exception : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct deepspeed_reference {
  double cur_scale;
  long long cur_iter = 0, last_overflow_iter = -1;
  double scale_factor;
  long long scale_window;
  double min_scale;
  long long delayed_shift, cur_hysteresis;
  bool consecutive_hysteresis, raise_error_at_min_scale;

  void update_scale(bool overflow) {
    if (overflow) {
      if (delayed_shift == 1 || cur_hysteresis == 1) {
        if (cur_scale == min_scale && raise_error_at_min_scale) {
          throw deepspeed_floor_exception("Current loss scale already at minimum - cannot decrease scale anymore.");
        }
        cur_scale = std::max(cur_scale / scale_factor, min_scale);
      } else {
        cur_hysteresis -= 1;
      }
      last_overflow_iter = cur_iter;
    } else {
      if (consecutive_hysteresis) cur_hysteresis = delayed_shift;
      const long long stable_interval = (cur_iter - last_overflow_iter) - 1;
      if (stable_interval > 0 && stable_interval % scale_window == 0) {
        if (!consecutive_hysteresis) cur_hysteresis = delayed_shift;
        cur_scale *= scale_factor;
      }
    }
    cur_iter += 1;
  }
  bool at_growth_step() const {
    const long long stable_interval = (cur_iter - last_overflow_iter) - 1;
    return stable_interval > 0 && stable_interval % scale_window == 0;
  }
};

// megatron/core/optimizer/grad_scaler.py, DynamicGradScaler.update.  scale, min_scale and the
// factors are float32 tensors; the trackers Python ints.
struct megatron_reference {
  float scale, min_scale, growth_factor, backoff_factor;
  long long growth_interval, hysteresis;
  long long growth_tracker = 0, hysteresis_tracker;

  void update(bool found_inf) {
    if (found_inf) {
      growth_tracker = 0;
      hysteresis_tracker -= 1;
      if (hysteresis_tracker <= 0) scale = std::max(scale * backoff_factor, min_scale);
    } else {
      growth_tracker += 1;
      if (growth_tracker == growth_interval) {
        growth_tracker = 0;
        hysteresis_tracker = hysteresis;
        scale = scale * growth_factor;
      }
    }
  }
  bool at_growth_step() const { return growth_tracker + 1 == growth_interval; }
};

// ---- Overflow traces -----------------------------------------------------------------------------

// Segments of one kind after another: long clean runs (up to five growth intervals), bursts of
// overflows, isolated overflows, sparse and dense random overflows, and ambushes (clean until
// the growth step, then an overflow exactly there).
class overflow_trace {
 public:
  overflow_trace(std::uint64_t seed, long long growth_interval) : generator_(seed), interval_(growth_interval) {}

  bool next(bool at_growth_step) {
    if (left_ == 0) start_segment();
    --left_;
    switch (kind_) {
      case kind::clean:
        return false;
      case kind::burst:
        return true;
      case kind::isolated:
        return left_ == 0;
      case kind::sparse:
        return generator_() % 100 == 0;
      case kind::dense:
        return generator_() % 2 == 0;
      case kind::ambush:
        if (at_growth_step) left_ = 0;
        return at_growth_step;
    }
    return false;
  }

 private:
  enum class kind { clean, burst, isolated, sparse, dense, ambush };
  void start_segment() {
    kind_ = static_cast<kind>(generator_() % 6);
    const auto interval = static_cast<std::uint64_t>(interval_);
    switch (kind_) {
      case kind::clean:
        left_ = 1 + generator_() % (5 * interval + 5);
        break;
      case kind::burst:
        left_ = 1 + generator_() % 30;
        break;
      case kind::isolated:
        left_ = 1 + generator_() % 3;
        break;
      case kind::sparse:
      case kind::dense:
        left_ = 1 + generator_() % 200;
        break;
      case kind::ambush:
        left_ = 3 * interval + 10;  // ends at the growth step, or gives up clean
        break;
    }
  }
  std::mt19937_64 generator_;
  long long interval_;
  kind kind_ = kind::clean;
  std::uint64_t left_ = 0;
};

// Runs one iteration through the whole loss_scaler API: unscale (an inf or NaN planted when the
// trace says overflow), step, update.  The other gradients are finite whatever the scale (the
// references take the overflow flag as given, and so does this trace).
template <class Policy>
void iterate(loss_scaler<Policy>& scaler, bool overflow, std::uint64_t step, bool& skipped_right) {
  float grads[5] = {1.f, -2.f, 0.5f, 3.f, 0.f};
  if (overflow) grads[step % 5] = step % 2 ? std::numeric_limits<float>::infinity() : std::nanf("");
  const bool finite = scaler.unscale(grads, 5);
  bool ran = false;
  scaler.step([&] { ran = true; });
  skipped_right = finite == !overflow && ran == !overflow;
}

std::string describe(const scale_state& s) {
  std::ostringstream out;
  out.precision(17);
  out << "scale " << s.scale << " growth_tracker " << s.growth_tracker << " hysteresis_tracker " << s.hysteresis_tracker
      << " iteration " << s.iteration << " last_overflow " << s.last_overflow_iteration;
  return out.str();
}

// What a trace went through: updates compared, and the events that exercise each branch.
struct trace_counts {
  std::uint64_t updates = 0, growths = 0, backoffs = 0, overflows_at_growth_step = 0, raises = 0, stops_at_edge = 0;
  trace_counts& operator+=(const trace_counts& o) {
    updates += o.updates;
    growths += o.growths;
    backoffs += o.backoffs;
    overflows_at_growth_step += o.overflows_at_growth_step;
    raises += o.raises;
    stops_at_edge += o.stops_at_edge;
    return *this;
  }
};

double scale_of(const torch_reference& r) { return r.scale; }
double scale_of(const deepspeed_reference& r) { return r.cur_scale; }
double scale_of(const megatron_reference& r) { return r.scale; }
void set_scale(torch_reference& r, double s) { r.scale = static_cast<float>(s); }
void set_scale(deepspeed_reference& r, double s) { r.cur_scale = s; }
void set_scale(megatron_reference& r, double s) { r.scale = static_cast<float>(s); }

// Drives a policy and its reference through `updates` iterations of one trace; a reference that
// raises (DeepSpeed at the minimum scale) must be matched by scale_floor_error with the state
// unchanged, and both start over.
template <class Policy, class Reference, class MakeReference, class Same>
trace_counts run_trace(const Policy& policy, MakeReference make_reference, Same same, std::uint64_t seed,
                       std::uint64_t updates, long long growth_interval) {
  loss_scaler<Policy> scaler{policy};
  Reference reference = make_reference();
  overflow_trace trace(seed, growth_interval);
  trace_counts counts;
  for (std::uint64_t step = 0; step < updates; ++step) {
    const bool at_growth_step = reference.at_growth_step();
    const bool overflow = trace.next(at_growth_step);
    if (overflow && at_growth_step) ++counts.overflows_at_growth_step;
    bool skipped_right = false;
    iterate(scaler, overflow, step, skipped_right);
    if (!skipped_right) FAIL("seed " << seed << " step " << step << ": the skip decision is wrong");
    bool raised = false;
    try {
      if constexpr (std::is_same<Reference, deepspeed_reference>::value) {
        reference.update_scale(overflow);
      } else {
        reference.update(overflow);
      }
    } catch (const deepspeed_floor_exception&) {
      raised = true;
    }
    if (raised) {
      const scale_state before = scaler.state();
      REQUIRE_THROWS_AS(scaler.update(), scale_floor_error);
      REQUIRE(scaler.state() == before);
      scaler = loss_scaler<Policy>{policy};
      reference = make_reference();
      ++counts.raises;
      continue;
    }
    const double before = scaler.state().scale;
    scaler.update();
    ++counts.updates;
    if (scaler.state().scale > before) ++counts.growths;
    if (scaler.state().scale < before) ++counts.backoffs;
    // Where the reference leaves the scales whose inverse is a finite float (a back-off to zero,
    // growth to infinity), mixprec stops at the edge (scaling/options.hpp, smallest_usable_scale):
    // the reference is moved to the same edge and both go on from there.
    const double reference_scale = scale_of(reference);
    if (!(reference_scale >= static_cast<double>(smallest_usable_scale) &&
          reference_scale <= static_cast<double>(largest_usable_scale))) {
      const double edge = reference_scale > 1 ? largest_usable_scale : smallest_usable_scale;
      if (scaler.state().scale != edge) {
        FAIL("seed " << seed << " step " << step << ": the reference left the usable range (" << reference_scale
                     << ") but mixprec has " << describe(scaler.state()));
      }
      set_scale(reference, edge);
      ++counts.stops_at_edge;
    }
    if (!same(scaler.state(), reference)) {
      FAIL("seed " << seed << " step " << step << " overflow " << overflow << ": mixprec has "
                   << describe(scaler.state()));
    }
  }
  return counts;
}

}  // namespace

namespace {

trace_counts torch_parity(std::uint64_t updates_per_config) {
  struct config {
    float init;
    double growth, backoff;
    int interval;
  };
  const config configs[] = {
      {65536.f, 2.0, 0.5, 2000},   // GradScaler's defaults
      {65536.f, 2.0, 0.5, 1},      // growth every clean step
      {3.3f, 1.001, 0.999, 3},     // factors that are not float32 values: the product is taken in double
      {1e30f, 1e10, 0.5, 2},       // growth stopped short of infinity (the finite guard)
      {1e-30f, 2.0, 1e-10, 5},     // back-off through the subnormals to zero
      {1000.f, 3.0, 1.0 / 3.0, 7}  // an inexact backoff_factor
  };
  trace_counts total;
  std::uint64_t seed = 1;
  for (const config& c : configs) {
    dynamic_scaling p;
    p.init_scale = c.init;
    p.growth_factor = c.growth;
    p.backoff_factor = c.backoff;
    p.growth_interval = c.interval;
    total += run_trace<dynamic_scaling, torch_reference>(
        p,
        [&] {
          return torch_reference{c.init, 0, c.growth, c.backoff, c.interval};
        },
        [](const scale_state& s, const torch_reference& r) {
          return s.scale == static_cast<double>(r.scale) && s.growth_tracker == r.growth_tracker &&
                 s.hysteresis_tracker == 0;
        },
        seed++, updates_per_config, c.interval);
  }
  return total;
}

trace_counts deepspeed_parity(std::uint64_t updates_per_config) {
  struct config {
    float init, factor, min;
    int window, shift;
    bool consecutive, raise;
  };
  const config configs[] = {
      {65536.f, 2.f, 1.f, 1000, 2, false, false},      // DESIGN.md defaults with the deepspeed rules
      {4294967296.f, 2.f, 1.f, 1000, 2, false, true},  // DeepSpeed's fused defaults, raising at the minimum
      {65536.f, 2.f, 0.25f, 1000, 1, false, false},    // unfused defaults, no hysteresis
      {4.f, 2.f, 1.f, 3, 4, true, false},              // consecutive hysteresis, a short window
      {8.f, 4.f, 0.5f, 1, 2, false, true},             // growth every step, a factor of 4
      {16.f, 8.f, 1.f, 5, 3, true, true},
  };
  trace_counts total;
  std::uint64_t seed = 100;
  for (const config& c : configs) {
    hysteresis_scaling p;
    p.rules = hysteresis_scaling::rule_set::deepspeed;
    p.init_scale = c.init;
    p.growth_factor = c.factor;
    p.backoff_factor = 1.f / c.factor;
    p.growth_interval = c.window;
    p.hysteresis = c.shift;
    p.min_scale = c.min;
    p.consecutive_hysteresis = c.consecutive;
    p.raise_at_min_scale = c.raise;
    total += run_trace<hysteresis_scaling, deepspeed_reference>(
        p,
        [&] {
          return deepspeed_reference{c.init, 0,       -1,      c.factor,      c.window,
                                     c.min,  c.shift, c.shift, c.consecutive, c.raise};
        },
        [](const scale_state& s, const deepspeed_reference& r) {
          return s.scale == r.cur_scale && s.iteration == r.cur_iter &&
                 s.last_overflow_iteration == r.last_overflow_iter && s.hysteresis_tracker == r.cur_hysteresis;
        },
        seed++, updates_per_config, c.window);
  }
  return total;
}

trace_counts megatron_parity(std::uint64_t updates_per_config) {
  struct config {
    float init, min, growth, backoff;
    int interval, hysteresis;
  };
  const config configs[] = {
      {65536.f, 1.f, 2.f, 0.5f, 1000, 2},    // Megatron-LM's defaults (initial 2^32 there; 2^16 here)
      {4294967296.f, 1.f, 2.f, 0.5f, 1, 1},  // growth every step, no hysteresis
      {100.f, 0.001f, 1.5f, 0.7f, 7, 5},     // float32 products that round
      {65536.f, 1.f, 1e10f, 0.5f, 3, 2},     // growth to infinity (Megatron does not guard it)
      {1.f, 1.f, 2.f, 0.5f, 50, 3},          // starting at the floor
      {3.f, 0.01f, 1.25f, 0.3f, 2, 2},
  };
  trace_counts total;
  std::uint64_t seed = 200;
  for (const config& c : configs) {
    hysteresis_scaling p;
    p.rules = hysteresis_scaling::rule_set::megatron;
    p.init_scale = c.init;
    p.min_scale = c.min;
    p.growth_factor = c.growth;
    p.backoff_factor = c.backoff;
    p.growth_interval = c.interval;
    p.hysteresis = c.hysteresis;
    total += run_trace<hysteresis_scaling, megatron_reference>(
        p,
        [&] {
          return megatron_reference{c.init, c.min, c.growth, c.backoff, c.interval, c.hysteresis, 0, c.hysteresis};
        },
        [](const scale_state& s, const megatron_reference& r) {
          return s.scale == static_cast<double>(r.scale) && s.growth_tracker == r.growth_tracker &&
                 s.hysteresis_tracker == r.hysteresis_tracker;
        },
        seed++, updates_per_config, c.interval);
  }
  return total;
}

}  // namespace

std::string summary(const trace_counts& c) {
  std::ostringstream out;
  out << c.updates << " updates compared (" << c.growths << " growths, " << c.backoffs << " back-offs, "
      << c.overflows_at_growth_step << " overflows at the growth step, " << c.raises << " raises at the minimum, "
      << c.stops_at_edge << " stops at the edge of the usable scales)";
  return out.str();
}

void check_coverage(const trace_counts& c) {
  CHECK(c.growths > 100);
  CHECK(c.backoffs > 100);
  CHECK(c.overflows_at_growth_step > 100);
}

TEST_CASE("dynamic_scaling follows PyTorch's _amp_update_scale_ update by update", "[parity]") {
  const trace_counts c = torch_parity(50'000);
  CHECK(c.updates == 300'000);
  CHECK(c.stops_at_edge > 0);  // the back-off to zero and the growth toward infinity
  check_coverage(c);
  WARN("PyTorch: " << summary(c));
}

TEST_CASE("hysteresis_scaling/deepspeed follows DynamicLossScaler.update_scale update by update", "[parity]") {
  const trace_counts c = deepspeed_parity(50'000);
  CHECK(c.updates >= 290'000);  // a trace that raises at the minimum starts over
  CHECK(c.raises > 10);
  check_coverage(c);
  WARN("DeepSpeed: " << summary(c));
}

TEST_CASE("hysteresis_scaling/megatron follows DynamicGradScaler.update update by update", "[parity]") {
  const trace_counts c = megatron_parity(50'000);
  CHECK(c.updates == 300'000);
  CHECK(c.stops_at_edge > 0);  // growth to infinity
  check_coverage(c);
  WARN("Megatron-LM: " << summary(c));
}

TEST_CASE("long parity traces: 1.2 * 10^7 updates per rule set", "[.exhaustive]") {
  const trace_counts torch = torch_parity(2'000'000), deepspeed = deepspeed_parity(2'000'000),
                     megatron = megatron_parity(2'000'000);
  WARN("PyTorch: " << summary(torch) << "\nDeepSpeed: " << summary(deepspeed)
                   << "\nMegatron-LM: " << summary(megatron));
  CHECK(torch.updates == 12'000'000);
  CHECK(deepspeed.updates >= 11'000'000);
  CHECK(megatron.updates == 12'000'000);
}
