// Training recipes: everything a precision_session needs to know about how to train, as one
// plain struct that a user switches at run time (from a name, key=value text, command-line
// flags or a JSON file: parse_recipe.hpp).
//
//   named recipe   precision  scaling           autocast  master weights  cast model  batchnorm fp32
//   fp32           fp32       none              off       off             off         -
//   fp16           fp16       dynamic           on        off             off         -
//   bf16           bf16       none              on        off             off         -
//   fp8            fp8        none              on (bf16) on              off         -
//   O0             fp32       static, 1.0       off       off             off         -
//   O1             fp16       dynamic           on        off             off         -
//   O2             fp16       dynamic           off       on              on          on
//   O3             fp16       static, 1.0       off       off             on          off
//
// O0-O3 are NVIDIA Apex's opt levels (apex/amp/frontend.py, documented in apex.amp): O1 patches
// functions (here: autocast) and keeps fp32 weights, so it needs no master copy; O2 casts the
// model to fp16 with batchnorm kept in fp32 and keeps fp32 master weights; O3 is pure fp16.
// "Cast the model" is done, not described: precision_session::add_parameter converts each
// parameter to fp16 (model_parameters.hpp), and the optimizer updates the fp32 masters (O2) or
// an fp32 copy of the fp16 values rounded back (O3).
// The fp8 recipe is Transformer Engine's DelayedScaling (HYBRID: e4m3 forward, e5m2 backward)
// for the fp8 layers, bf16 autocast for the rest, no loss scaling, and fp32 master weights
// (fp8 weights cannot accumulate updates smaller than their spacing).
//
// validate() throws recipe_error on options that contradict each other; the message names the
// problem and what is allowed.
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "../scaling/all_reduce_options.hpp"
#include "../dtype.hpp"
#include "../mx/scale_sharing.hpp"
#include "../rounding.hpp"
#include "../scaling/fp8/delayed_scaling.hpp"
#include "../scaling/options.hpp"
#include "../scaling/policies.hpp"
#include "errors.hpp"
#include "overrides.hpp"
#include "precision_mode.hpp"

namespace mixprec {

enum class loss_scaling_mode { none, fixed, dynamic, hysteresis };  // "none", "static", "dynamic", "hysteresis"

constexpr const char* to_string(loss_scaling_mode s) noexcept {
  switch (s) {
    case loss_scaling_mode::none:
      return "none";
    case loss_scaling_mode::fixed:
      return "static";
    case loss_scaling_mode::dynamic:
      return "dynamic";
    case loss_scaling_mode::hysteresis:
      return "hysteresis";
  }
  return "invalid loss_scaling_mode";
}

constexpr int recipe_accumulation_limit = 1 << 16;

struct recipe {
  std::string name = "fp32";  // the named recipe it started from (informational)

  precision_mode precision = precision_mode::float32;
  loss_scaling_mode scaling = loss_scaling_mode::none;
  bool autocast = false;             // run the forward pass in an autocast scope of the working dtype
  bool master_weights = false;       // fp32 masters, low-precision working copies (master_weights.hpp)
  bool cast_model = false;           // Apex cast_model_type: the model's parameters live in the working dtype
  bool keep_batchnorm_fp32 = false;  // Apex O2: batchnorm parameters stay fp32 when the model is cast
  bool safe = true;                  // refuse fp16 without loss scaling
  bool stochastic_rounding = false;  // working copies refreshed by stochastic rounding
  bool kahan_summation = false;      // a pure fp16/bf16 model's updates compensated (optimi's kahan_sum)
  std::int64_t seed = 0;             // of the stochastic rounding

  // dynamic_scaling and hysteresis_scaling
  float init_scale = 65536;
  double growth_factor = 2;
  double backoff_factor = 0.5;
  int growth_interval = 2000;
  // hysteresis_scaling only
  hysteresis_scaling::rule_set hysteresis_rules = hysteresis_scaling::rule_set::megatron;
  int hysteresis = 2;
  float hysteresis_min_scale = 1;
  bool consecutive_hysteresis = false;
  bool raise_at_min_scale = false;
  // static_scaling
  float static_scale = 1;
  // scaler_options (every policy)
  float min_scale = 0;
  float max_scale = std::numeric_limits<float>::infinity();
  floor_action at_floor = floor_action::clamp;
  std::int64_t max_consecutive_skips = 0;
  int history_capacity = 64;
  rounding gradient_rounding = rounding::nearest_even;  // bfloat16/float16 gradients after unscale and clip

  double max_grad_norm = 0;    // 0: no clipping (clip_grad_norm, epsilon 0)
  int accumulation_steps = 1;  // micro-batches per optimizer step

  // fp8 (delayed_scaling, Transformer Engine's defaults)
  fp8_format fp8 = fp8_format::hybrid;
  int margin = 0;
  int amax_history_len = 1024;
  amax_algorithm amax_compute_algo = amax_algorithm::max;

  // Layers kept in another precision (overrides.hpp): rules matched against the registered
  // parameters' names when training starts.
  precision_overrides overrides;

  // The MX recipes (mxfp8, mxfp4): whether a weight's scales are per block of 32 (OCP MX) or
  // per 32 × 32 tile (Transformer Engine's 2D weight quantisation: the forward and the backward
  // then see the same quantised weight; ops::mx_linear_options::weight_scales).
  mx_scale_sharing mx_weight_scales = mx_scale_sharing::block;

  // Data parallelism (precision_session::use_process_group, process_group.hpp): the dtype the
  // gradients travel in between the processes (PyTorch FSDP's reduce_dtype; the sum is taken in
  // float whatever it is: distributed/all_reduce.hpp), the all-reduce's bucket size, and every how
  // many steps the replicas' parameters are compared (0: never).  A single process (no group)
  // has nothing to reduce or compare: the keys then change nothing.
  dtype reduce_dtype = dtype::float32;
  std::int64_t bucket_bytes = std::int64_t{25} << 20;
  std::int64_t weight_check_interval = 0;

  // The dtype autocast and the working copies use: fp8 and the block-scaled precisions train
  // their other parts in bf16 (under autocast; the block-scaled recipes leave autocast off).
  dtype working_dtype() const noexcept {
    switch (precision) {
      case precision_mode::float16:
        return dtype::float16;
      case precision_mode::bfloat16:
      case precision_mode::float8:
      case precision_mode::mxfp8:
      case precision_mode::fp8_block:
      case precision_mode::nvfp4:
      case precision_mode::fp8_rowwise:
      case precision_mode::mxfp4:
        return dtype::bfloat16;
      case precision_mode::float32:
        break;
    }
    return dtype::float32;
  }

  // The gradient all-reduce's options: the mean over the ranks, as DDP takes it.
  all_reduce_options reduce_options() const noexcept {
    all_reduce_options o;
    o.communication = reduce_dtype;
    o.bucket_bytes = static_cast<std::size_t>(bucket_bytes);
    o.average = true;
    return o;
  }

  dynamic_scaling dynamic_policy() const {
    dynamic_scaling p;
    p.init_scale = init_scale;
    p.growth_factor = growth_factor;
    p.backoff_factor = backoff_factor;
    p.growth_interval = growth_interval;
    return p;
  }
  hysteresis_scaling hysteresis_policy() const {
    hysteresis_scaling p;
    p.rules = hysteresis_rules;
    p.init_scale = init_scale;
    p.growth_factor = static_cast<float>(growth_factor);
    p.backoff_factor = static_cast<float>(backoff_factor);
    p.growth_interval = growth_interval;
    p.hysteresis = hysteresis;
    p.min_scale = hysteresis_min_scale;
    p.consecutive_hysteresis = consecutive_hysteresis;
    p.raise_at_min_scale = raise_at_min_scale;
    return p;
  }
  static_scaling static_policy() const { return static_scaling{static_scale}; }
  scaler_options options() const {
    scaler_options o;
    o.min_scale = min_scale;
    o.max_scale = max_scale;
    o.at_floor = at_floor;
    o.max_consecutive_skips = max_consecutive_skips;
    o.history_capacity = static_cast<std::size_t>(history_capacity);
    o.unscale.gradient_rounding = gradient_rounding;
    return o;
  }
  delayed_scaling fp8_policy() const {
    delayed_scaling p;
    p.margin = margin;
    p.format = fp8;
    p.amax_history_len = amax_history_len;
    p.amax_compute_algo = amax_compute_algo;
    return p;
  }
};

namespace recipes {

inline recipe fp32() { return recipe{}; }

template <int = 0>
recipe fp16() {
  recipe r;
  r.name = "fp16";
  r.precision = precision_mode::float16;
  r.scaling = loss_scaling_mode::dynamic;
  r.autocast = true;
  return r;
}

template <int = 0>
recipe bf16() {
  recipe r;
  r.name = "bf16";
  r.precision = precision_mode::bfloat16;
  r.autocast = true;
  return r;
}

template <int = 0>
recipe fp8() {
  recipe r;
  r.name = "fp8";
  r.precision = precision_mode::float8;
  r.autocast = true;
  r.master_weights = true;
  return r;
}

// The block-scaled recipes: the linear layers of session_linear (session/linear.hpp) in blocks,
// everything else in float32, no loss scaling (each block's scale follows its own values).
template <int = 0>
recipe block_scaled(precision_mode p, const char* name) {
  recipe r;
  r.name = name;
  r.precision = p;
  return r;
}
inline recipe mxfp8() { return block_scaled(precision_mode::mxfp8, "mxfp8"); }
inline recipe fp8_block() { return block_scaled(precision_mode::fp8_block, "fp8_block"); }
inline recipe nvfp4() { return block_scaled(precision_mode::nvfp4, "nvfp4"); }
inline recipe fp8_rowwise() { return block_scaled(precision_mode::fp8_rowwise, "fp8_rowwise"); }
inline recipe mxfp4() { return block_scaled(precision_mode::mxfp4, "mxfp4"); }

// Apex O0: pure fp32, loss_scale 1.0.
template <int = 0>
recipe O0() {
  recipe r;
  r.name = "O0";
  r.scaling = loss_scaling_mode::fixed;
  return r;
}

// Apex O1: patch_torch_functions (autocast), fp32 model, dynamic loss scale.
template <int = 0>
recipe O1() {
  recipe r = fp16();
  r.name = "O1";
  return r;
}

// Apex O2: model cast to fp16, batchnorm kept fp32, fp32 master weights, dynamic loss scale.
template <int = 0>
recipe O2() {
  recipe r;
  r.name = "O2";
  r.precision = precision_mode::float16;
  r.scaling = loss_scaling_mode::dynamic;
  r.cast_model = true;
  r.keep_batchnorm_fp32 = true;
  r.master_weights = true;
  return r;
}

// Apex O3: pure fp16, no master weights, loss_scale 1.0.
template <int = 0>
recipe O3() {
  recipe r;
  r.name = "O3";
  r.precision = precision_mode::float16;
  r.scaling = loss_scaling_mode::fixed;
  r.cast_model = true;
  return r;
}

}  // namespace recipes

namespace detail {

[[noreturn]] inline void recipe_fail(const std::string& what) { throw recipe_error("recipe: " + what); }

template <class Policy>
void validate_as_recipe(const Policy& policy, const char* options) {
  try {
    validate_policy(policy);
  } catch (const invalid_argument& e) {
    recipe_fail(std::string(options) + " scaling options: " + e.what());
  }
}

}  // namespace detail

// Throws recipe_error when the options cannot train together.
template <int = 0>
void validate(const recipe& r) {
  using detail::recipe_fail;
  const auto low = r.precision != precision_mode::float32;
  if (static_cast<unsigned>(r.precision) > static_cast<unsigned>(last_precision_mode)) {
    recipe_fail("precision is not one of fp32, fp16, bf16, fp8, mxfp8, fp8_block, nvfp4, fp8_rowwise, mxfp4");
  }
  if (static_cast<unsigned>(r.scaling) > 3u) recipe_fail("scaling is not one of none, static, dynamic, hysteresis");
  if (r.safe && r.precision == precision_mode::float16 && r.scaling == loss_scaling_mode::none) {
    recipe_fail(
        "precision=fp16 with scaling=none while safe=true: small fp16 gradients underflow to zero without loss "
        "scaling; allowed: scaling=dynamic, hysteresis or static, or safe=false to accept it");
  }
  if (r.autocast && !low) {
    recipe_fail("autocast=true needs a precision other than fp32 (fp32 has nothing to cast to)");
  }
  if (r.master_weights && !low) {
    recipe_fail("master_weights=true needs a precision other than fp32 (an fp32 model is its own master copy)");
  }
  if (r.cast_model && !low) recipe_fail("cast_model=true needs precision fp16, bf16 or fp8");
  if (r.cast_model && (r.precision == precision_mode::float8 || is_block_scaled(r.precision))) {
    recipe_fail(std::string("cast_model=true with precision=") + to_string(r.precision) +
                ": its weights are quantised per step from the float32 (or master) weights; allowed: "
                "cast_model=false");
  }
  if (r.keep_batchnorm_fp32 && !r.cast_model) {
    recipe_fail("keep_batchnorm_fp32=true needs cast_model=true (batchnorm is only fp16 when the model is cast)");
  }
  if (r.precision == precision_mode::float8 && !r.master_weights) {
    recipe_fail(
        "precision=fp8 with master_weights=false: fp8 weights cannot accumulate updates smaller than their spacing; "
        "allowed: master_weights=true");
  }
  if (r.stochastic_rounding && !r.master_weights && !r.cast_model) {
    recipe_fail(
        "stochastic_rounding=true needs master_weights=true (working copies rounded from the masters) or "
        "cast_model=true (a pure low-precision model whose updates are rounded stochastically)");
  }
  if (r.kahan_summation && (!r.cast_model || r.master_weights)) {
    recipe_fail(
        "kahan_summation=true needs cast_model=true and master_weights=false (it compensates the rounding of a pure "
        "fp16/bf16 model's updates; fp32 master weights keep every update already)");
  }
  if (r.kahan_summation && r.stochastic_rounding) {
    recipe_fail(
        "kahan_summation=true with stochastic_rounding=true: the compensated update rounds to nearest; allowed: "
        "one of the two");
  }
  if (r.seed < 0) recipe_fail("seed is " + std::to_string(r.seed) + "; allowed: an integer >= 0");
  // The dynamic and static options are checked whatever the scaling (a bad value is a mistake
  // even while unused); the hysteresis ones, which constrain each other, when they are used.
  if (!(std::isfinite(r.static_scale) && r.static_scale > 0)) {
    recipe_fail("static_scale is " + detail::number_text(r.static_scale) + "; allowed: a finite number > 0");
  }
  detail::validate_as_recipe(r.dynamic_policy(), "dynamic");
  if (r.scaling == loss_scaling_mode::hysteresis) detail::validate_as_recipe(r.hysteresis_policy(), "hysteresis");
  if (r.at_floor != floor_action::clamp && r.at_floor != floor_action::throw_error) {
    recipe_fail("at_floor must be clamp or throw_error (a floor handler is code, set it on the scaler)");
  }
  if (r.history_capacity < 0 || static_cast<std::size_t>(r.history_capacity) > scaler_history_limit) {
    recipe_fail("history_capacity is " + std::to_string(r.history_capacity) + "; allowed: 0 to " +
                std::to_string(scaler_history_limit));
  }
  try {
    detail::validate_scaler_options(r.options());
  } catch (const invalid_argument& e) {
    recipe_fail(e.what());
  }
  const float initial = r.scaling == loss_scaling_mode::none    ? 1.0f
                        : r.scaling == loss_scaling_mode::fixed ? r.static_scale
                                                                : r.init_scale;
  if (!detail::within_bounds(initial, r.options())) {
    recipe_fail("the initial scale " + detail::number_text(initial) + " of scaling=" + to_string(r.scaling) +
                " is outside " + detail::bounds_text(r.options()) +
                "; allowed: min_scale <= initial scale <= max_scale");
  }
  if (!(std::isfinite(r.max_grad_norm) && r.max_grad_norm >= 0)) {
    recipe_fail("max_grad_norm is " + detail::number_text(r.max_grad_norm) +
                "; allowed: a finite number >= 0 (0: no clipping)");
  }
  if (r.accumulation_steps < 1 || r.accumulation_steps > recipe_accumulation_limit) {
    recipe_fail("accumulation_steps is " + std::to_string(r.accumulation_steps) + "; allowed: 1 to " +
                std::to_string(recipe_accumulation_limit));
  }
  if (!detail::is_all_reduce_dtype(r.reduce_dtype)) {
    recipe_fail(std::string("reduce_dtype is ") + to_string(r.reduce_dtype) +
                "; allowed: fp32, bf16, fp16, e4m3, e5m2");
  }
  if (r.bucket_bytes < 4 || static_cast<std::uint64_t>(r.bucket_bytes) > all_reduce_largest_bucket_bytes) {
    recipe_fail("bucket_bytes is " + std::to_string(r.bucket_bytes) + "; allowed: 4 to " +
                std::to_string(all_reduce_largest_bucket_bytes) + " (one float to 1 GiB)");
  }
  if (r.weight_check_interval < 0) {
    recipe_fail("weight_check_interval is " + std::to_string(r.weight_check_interval) +
                "; allowed: an integer >= 0 (0: never)");
  }
  for (std::size_t k = 0; k < r.overrides.rules.size(); ++k) {
    const layer_override& rule = r.overrides.rules[k];
    detail::check_selector(rule.selector, k + 1);  // first: `which` quotes the selector
    const std::string which = "override rule " + std::to_string(k + 1) + " '" + rule_text(rule) + "'";
    if (static_cast<unsigned>(rule.precision) > 3u)
      recipe_fail(which + ": precision is not one of fp32, fp16, bf16, fp8");
    if (detail::is_operation_selector(rule.selector) && rule.precision == precision_mode::float8) {
      recipe_fail(which +
                  ": an operation rule pins fp32, fp16 or bf16; fp8 is a layer's precision "
                  "(ops::fp8_linear with the recipe's delayed scaling)");
    }
    if (rule.precision == precision_mode::float8 && r.precision != precision_mode::float8) {
      recipe_fail(which + " in a precision=" + to_string(r.precision) +
                  " recipe: fp8 layers need the fp8 recipe's delayed scaling; allowed here: fp32, fp16, bf16");
    }
    if (rule.precision == precision_mode::float16 && r.safe && r.scaling == loss_scaling_mode::none) {
      recipe_fail(which +
                  " with scaling=none while safe=true: small fp16 gradients underflow to zero without "
                  "loss scaling; allowed: scaling=dynamic, hysteresis or static, or safe=false to accept it");
    }
  }
  if (r.precision == precision_mode::float8) {
    if (r.amax_compute_algo == amax_algorithm::custom) {
      recipe_fail("amax_compute_algo=custom needs a function (code); allowed in a recipe: max, most_recent");
    }
    try {
      r.fp8_policy().validate();
    } catch (const invalid_argument& e) {
      recipe_fail(std::string("precision=fp8: ") + e.what());
    }
  }
}

}  // namespace mixprec
