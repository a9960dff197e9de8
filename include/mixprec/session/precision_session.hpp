// precision_session: a training recipe (recipe.hpp) put to work.  It owns the loss scaler of the
// recipe's policy, the autocast dtype, the fp32 master weights, fp8 delayed scaling and the
// statistics, and runs a whole optimizer step in one call:
//
//   mixprec::precision_session amp{mixprec::parse_recipe(config_text)};
//   std::size_t w = amp.masters().add(init, n);                 // recipes with master weights
//   auto r = amp.train_step(
//       [&](std::size_t micro) { return model.forward(micro); },       // in the recipe's autocast scope
//       [&](float scaled_loss) { model.backward(scaled_loss); },       // the same scope; writes the gradients
//       grads,                                                         // std::vector<gradient_view>
//       [&] { optimizer.step(amp.masters().master(w), grad, n); });    // on the masters
//
// train_step is exactly this sequence of loss_scaler calls (tests/session/session_test.cpp
// checks it bit for bit against the hand-written one):
//
//   for each of k micro-batches, in the recipe's autocast scope:
//                                 loss = forward(m);  backward(scaler.scale(loss))
//   group.all_reduce(grads)                    with a process group only (use_process_group)
//   scaler.unscale(grads)                      fused unscale + inf/NaN check
//   clip_grad_norm(grads, max_grad_norm)       when max_grad_norm > 0
//   scaler.step(optimizer_step, then refresh the working copies from the masters)
//   scaler.update();  fp8 scalers update()     (every step, as Transformer Engine's amax update;
//                                              with a group, after group.reduce_amax of the step's
//                                              amaxes, so that every replica's scales agree)
//
// The scaler is a std::variant over the four policies, visited once per call: nothing virtual
// runs per gradient.  disable() switches to fp32 behaviour (no autocast, scale 1; a separate
// no_scaling scaler still skips steps with inf/NaN gradients) until enable().  An exception
// from a callable or from the scaler's update (skip_limit_error, scale_floor_error) propagates;
// when it comes after the unscale, the scaler's iteration is first closed at the current scale
// (update(scale): the policy is not applied), so the next train_step runs normally.  Not
// thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../autocast/scope.hpp"
#include "../ops/fp8_linear.hpp"
#include "../scaling/clipping.hpp"
#include "../scaling/loss_scaler.hpp"
#include "capabilities.hpp"
#include "detail/callable_ref.hpp"
#include "../optim/adamw.hpp"
#include "../optim/sgd.hpp"
#include "master_weights.hpp"
#include "model_parameters.hpp"
#include "process_group.hpp"
#include "quantization_statistics.hpp"
#include "recipe.hpp"
#include "recipe_fields.hpp"
#include "schedule.hpp"
#include "statistics.hpp"

namespace mixprec {

using log_sink = std::function<void(const std::string&)>;

// What a backward callback that takes it learns of its micro-batch: the gradient to start the
// backward pass from (d scaled_loss / d loss: the loss scale, what ops::cross_entropy_backward
// takes as grad_loss, as PyTorch's scaler.scale(loss).backward() seeds it), the scaled loss
// itself, and the micro-batch's index.
struct backward_context {
  float loss_gradient = 1;
  float scaled_loss = 0;
  std::size_t micro_batch = 0;
};

// precision_session is basic_precision_session<void>: a class template only so that a file
// compiles the members it calls and no others (docs/design.md, "Compiled where called"); the
// parameter means nothing else.
template <class = void>
class basic_precision_session;
using precision_session = basic_precision_session<>;

template <class>
class basic_precision_session {
 public:
  using scaler_variant = std::variant<loss_scaler<no_scaling>, loss_scaler<static_scaling>,
                                      loss_scaler<dynamic_scaling>, loss_scaler<hysteresis_scaling>>;

  explicit basic_precision_session(const recipe& r, log_sink sink = {})
      : recipe_(checked(r)), scaler_(make_scaler(recipe_)), model_(storage_of(recipe_)), sink_(std::move(sink)) {
    masters_ = masters_of(recipe_);
    op_precisions_ = operation_precisions(recipe_.overrides);
    log(describe());
  }

  // The recipe resolve() picks on this machine; its fallback message goes to the sink first.
  static precision_session for_machine(const recipe& requested, const capabilities& caps, log_sink sink = {}) {
    const recipe_resolution chosen = resolve(requested, caps);
    if (!chosen.message.empty() && sink) sink(chosen.message);
    return precision_session(chosen.used, std::move(sink));
  }

  const recipe& get_recipe() const noexcept { return recipe_; }

  void enable() { set_enabled(true); }
  void disable() { set_enabled(false); }
  void toggle() { set_enabled(!enabled_); }
  bool enabled() const noexcept { return enabled_; }

  // The autocast state train_step's forward and backward run in: the working dtype under
  // autocast (else autocast off), the recipe's operation rules (@NAME, overrides.hpp), the
  // enclosing policy.  An evaluation outside train_step enters it to compute as training does:
  //   mixprec::dynamic_autocast_scope scope(amp.forward_autocast());
  autocast_state forward_autocast() const {
    autocast_state s = current_autocast();
    const dtype compute = autocast_dtype();
    s.enabled = compute != dtype::float32;
    s.lower_precision = compute;
    s.cache_enabled = true;
    s.op_precisions = op_precisions_;
    return s;
  }
  // What the forward pass runs in: the working dtype under autocast, else float32.
  dtype autocast_dtype() const noexcept {
    return enabled_ && recipe_.autocast ? recipe_.working_dtype() : dtype::float32;
  }
  float get_scale() const {
    return enabled_ ? std::visit([](const auto& s) { return s.get_scale(); }, scaler_) : fp32_scaler_.get_scale();
  }
  scale_state scaler_state() const {
    return enabled_ ? std::visit([](const auto& s) { return s.state(); }, scaler_) : fp32_scaler_.state();
  }
  const scaler_variant& scaler() const noexcept { return scaler_; }

  bool has_master_weights() const noexcept { return masters_.has_value(); }
  master_weights& masters() { return masters_.has_value() ? *masters_ : no_masters(); }
  const master_weights& masters() const { return masters_.has_value() ? *masters_ : no_masters(); }

  // ---- The model: parameters, gradients, optimizer (docs/session.md, "One training loop") ----
  //
  //   mixprec::precision_session amp{mixprec::parse_recipe("O2")};
  //   amp.add_parameter(w1);  amp.add_parameter(b1);  ...           // float32 initial values
  //   amp.use_optimizer(mixprec::optim::adamw({.lr = 1e-3f}));
  //   auto r = amp.train_step(
  //       [&] { a = model.forward(x.to(amp.input_dtype())); return ops::cross_entropy(a.logits, y); },
  //       [&](const mixprec::backward_context& b) {                  // ops::*_backward from
  //         dy = ops::cross_entropy_backward(a.logits, y, b.loss_gradient);  ...
  //         amp.accumulate_gradient(w1, g.weight);  ...              // into the session's buffers
  //       });
  //
  // add_parameter casts the parameter to the dtype the recipe stores it in (cast_model: Apex
  // O2/O3's model.half()), keeps its fp32 master where the recipe has master weights, and gives
  // it an fp32 gradient buffer; train_step then zeroes the buffers, runs the micro-batches,
  // unscales, checks and clips the buffers and, unless the step is skipped, updates every
  // parameter with the optimizer (model_parameters.hpp says how, per dtype).  Parameters are
  // registered before the first train_step; indices follow the order of registration.
  std::size_t add_parameter(parameter& p, parameter_role role = parameter_role::weight) {
    require_between_steps("add_parameter");
    if (total_.steps > 0) {
      throw invalid_argument("precision_session::add_parameter: parameter '" + p.name() + "' added after " +
                             std::to_string(total_.steps) +
                             " training steps; register every parameter before the first train_step (its optimizer "
                             "state and checkpoint layout are fixed from then on)");
    }
    const std::size_t i = model_.add(p, role);
    overrides_applied_ = false;
    std::visit([&](auto& o) { register_with(o, i); }, optimizer_);
    return i;
  }
  const model_parameters& parameters() const noexcept { return model_; }
  // The dtype the model's inputs should come in: the working dtype when the recipe casts the
  // model (Apex O2/O3 cast the inputs of the model's forward), else float32.
  dtype input_dtype() const noexcept {
    return enabled_ && recipe_.cast_model ? recipe_.working_dtype() : dtype::float32;
  }
  // The fp32 gradient buffer of a registered parameter, and accumulation into it (any dtype).
  float* gradient(const parameter& p) { return model_.gradient(model_.index_of(p)); }
  void accumulate_gradient(const parameter& p, const matrix_view& g) { model_.accumulate(model_.index_of(p), g); }

  // The optimizer that train_step(forward, backward) runs on the registered parameters
  // (optim::sgd or optim::adamw, fresh: no parameter added to it yet); its state is part of the
  // session's checkpoint.
  template <class Optimizer>
  Optimizer& use_optimizer(Optimizer optimizer) {
    static_assert(std::is_same<Optimizer, optim::sgd>::value || std::is_same<Optimizer, optim::adamw>::value,
                  "precision_session::use_optimizer takes optim::sgd or optim::adamw");
    require_between_steps("use_optimizer");
    if (total_.steps > 0) {
      throw invalid_argument("precision_session::use_optimizer: called after " + std::to_string(total_.steps) +
                             " training steps; choose the optimizer before the first train_step");
    }
    if (optimizer.size() != 0) {
      throw invalid_argument("precision_session::use_optimizer: the optimizer has " + std::to_string(optimizer.size()) +
                             " parameters registered already; pass a fresh one (the session registers its own)");
    }
    for (std::size_t i = 0; i < model_.size(); ++i) optimizer.add(model_.parameter_size(i));
    return optimizer_.template emplace<Optimizer>(std::move(optimizer));
  }
  template <class Optimizer>
  Optimizer& optimizer() {
    if (Optimizer* o = std::get_if<Optimizer>(&optimizer_)) return *o;
    throw invalid_argument("precision_session::optimizer: the session's optimizer is " + std::string(optimizer_name()) +
                           ", not the one asked for");
  }

  // fp8 recipes: the delayed-scaling state of `layers` fp8 linear layers (ops/fp8_linear.hpp),
  // updated at the end of every train_step.
  ops::fp8_training& use_fp8_layers(std::size_t layers) {
    if (recipe_.precision != precision_mode::float8) {
      throw invalid_argument(std::string("precision_session::use_fp8_layers: the recipe's precision is ") +
                             to_string(recipe_.precision) + "; fp8 layers need precision=fp8");
    }
    fp8_.emplace(recipe_.fp8_policy(), layers);
    fp8_layers_ = layers;
    return *fp8_;
  }
  ops::fp8_training& fp8() {
    if (!fp8_) throw invalid_argument("precision_session::fp8: no fp8 layers; call use_fp8_layers(layers) first");
    return *fp8_;
  }
  bool has_fp8_layers() const noexcept { return fp8_.has_value(); }

  // The optimizer steps completed (skipped ones included; restored by load), and, inside
  // train_step, the micro-batch running: with the layer they key the block-scaled recipes'
  // stochastic rounding (session/linear.hpp), so that a resumed run draws the same bits.
  std::int64_t completed_steps() const noexcept { return total_.steps; }
  std::size_t current_micro_batch() const noexcept { return micro_batch_; }

  // ---- Recipes that change as training goes (schedule.hpp, docs/session.md) ----
  //
  // switch_recipe makes the session train with `next` from the next step on.  It carries over
  // the registered parameters (each re-stored from its float32 value: its master, else its
  // stored value plus its Kahan compensation, so nothing the updates have made is lost; then in
  // next's dtype, with a master or a fresh compensation where next keeps one), the gradient
  // buffers, the optimizer and its state, the statistics and the update count (so stochastic
  // rounding streams continue); the loss scaler's state when next uses the same policy with the
  // same options, else next's scaler from its initial scale (the old one's overflow count stays
  // in statistics()); fp8 layers' delayed-scaling histories when next is fp8 with the same fp8
  // options, else fresh histories for the same number of layers (use_fp8_layers before the
  // first fp8 phase).  Refused (invalid_argument) while masters() holds arrays the user added:
  // the session cannot re-store what it does not own.  A next with the current settings changes
  // nothing.  Logged, and recorded in switches().
  void switch_recipe(const recipe& next, const std::string& reason = "switch_recipe");
  // The schedule applied at the start of each train_step; set before the first step (it is part
  // of the checkpoint's identity: a resumed session sets the same schedule, then loads).
  void set_schedule(const precision_schedule& schedule) {
    require_between_steps("set_schedule");
    if (total_.steps > 0) {
      throw invalid_argument("precision_session::set_schedule: called after " + std::to_string(total_.steps) +
                             " training steps; set the schedule before the first train_step");
    }
    validate(schedule);
    schedule_ = schedule;
    next_change_ = 0;
    fallback_used_ = false;
  }
  const precision_schedule& schedule() const noexcept { return schedule_; }
  const std::vector<recipe_switch>& switches() const noexcept { return switches_; }
  // end_epoch calls so far (a schedule's epoch counter).
  std::int64_t epochs() const noexcept { return epochs_; }
  // Makes the schedule's changes that are due now (train_step calls it first).  A loop that
  // prepares per-recipe state before a step (fp8 layers, the inputs' dtype) calls it itself and
  // then reads get_recipe().  Between steps only.
  void apply_schedule();

  // ---- Per-layer precision overrides (overrides.hpp, docs/session.md) ----
  //
  // apply_overrides matches the recipe's override rules against the registered parameters'
  // names and puts each matched parameter in its rule's precision: it sets the parameter's
  // precision override (ops compute as in an autocast scope of that dtype; ops::fp8_linear runs
  // the layer as ops::linear) and, when the recipe casts the model, stores the parameter in that
  // dtype (an fp32 layer of an O2 model stays float32, without a master).  train_step calls it
  // through apply_schedule, switch_recipe and load_state apply the new recipe's rules; call it
  // after registering the parameters to check the rules before training.  recipe_error names a
  // rule that matches no parameter.  The session sets and clears only the overrides its rules
  // set: a parameter no rule matches keeps what the caller gave it.
  void apply_overrides();
  // What an operation rule (@NAME) may name: mixprec::ops' operations and those the autocast
  // policy in force lists.
  static std::vector<std::string> known_operations() {
    std::vector<std::string> names = ops::operation_names();
    const auto policy = current_autocast_policy();
    for (const op_category c : {op_category::lower_precision, op_category::fp32, op_category::promote}) {
      for (const std::string& name : policy->operations(c)) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
    }
    return names;
  }
  // Every registered parameter's layer and precision, as the last apply_overrides decided them.
  const std::vector<layer_precision>& layer_precisions() const noexcept { return layer_table_; }

  // ---- Data parallelism (process_group.hpp, docs/distributed.md) ----
  //
  // With a process group, every rank trains a replica of the model on its share of each batch:
  // train_step all-reduces the gradients (the mean over the ranks, in the recipe's reduce_dtype
  // and bucket_bytes, summed in float in rank order) after the last micro-batch's backward and
  // before the unscale, once per optimizer step, and compares the replicas' parameters every
  // weight_check_interval steps (check_replicas).  The ranks must run the same recipe, register
  // the same parameters and load the same checkpoint; the gradients must be float32 (the
  // registered parameters' buffers are).  nullptr detaches the group.  Between steps only.
  void use_process_group(std::shared_ptr<process_group> group) {
    require_between_steps("use_process_group");
    group_ = std::move(group);
  }
  const std::shared_ptr<process_group>& group() const noexcept { return group_; }
  // Collective with a process group: compares every registered parameter (its stored values, its
  // master and its Kahan compensation) and every masters() array across the ranks by a 64-bit
  // fingerprint, and throws replica_mismatch_error naming the first that differs.  Without a
  // group there is nothing to compare.  train_step calls it every weight_check_interval steps.
  void check_replicas();

  // One optimizer step over micro_batches micro-batches (0: the recipe's accumulation_steps).
  // forward(std::size_t micro_batch) or forward() returns the float loss; backward(float
  // scaled_loss) or backward(scaled_loss, micro_batch) accumulates into the gradients in grads;
  // optimizer_step() updates the parameters (the masters, with master weights).
  template <class Forward, class Backward, class Step>
  step_result train_step(Forward&& forward, Backward&& backward, const std::vector<gradient_view>& grads,
                         Step&& optimizer_step, int micro_batches = 0) {
    auto forward_loss = [&](std::size_t micro) { return call_forward(forward, micro); };
    auto backward_pass = [&](const backward_context& c) { call_backward(backward, c); };
    auto step = [&] { optimizer_step(); };
    return train_step_with(forward_loss, backward_pass, grads, step, micro_batches);
  }

  // One optimizer step of the registered parameters with the session's optimizer: the
  // gradient buffers are zeroed first; backward fills them through accumulate_gradient.
  template <class Forward, class Backward>
  step_result train_step(Forward&& forward, Backward&& backward, int micro_batches = 0) {
    auto forward_loss = [&](std::size_t micro) { return call_forward(forward, micro); };
    auto backward_pass = [&](const backward_context& c) { call_backward(backward, c); };
    return train_registered_with(forward_loss, backward_pass, micro_batches);
  }

  const epoch_statistics& epoch() const noexcept { return epoch_; }
  const epoch_statistics& total() const noexcept { return total_; }
  // The whole run's statistics: total(), the scalers' overflow counters, the current scale and
  // the master weights' memory.  All of it is in the saved state, so a load restores it.
  session_statistics statistics() const {
    session_statistics s;
    s.total_steps = total_.steps;
    s.skipped_steps = total_.skipped;
    const auto overflows = [](const auto& scaler) { return scaler.get_amp_stats().counters.overflow_count; };
    s.overflow_count = std::visit(overflows, scaler_) + overflows(fp32_scaler_);
    s.current_scale = get_scale();
    s.overflow_ratio = total_.overflow_rate();
    s.avg_step_time = total_.mean_step_seconds();
    s.scaler_updates = total_.scale_changes;
    if (masters_) {
      s.master_bytes = masters_->master_bytes();
      s.working_bytes = masters_->working_bytes();
    }
    s.master_bytes += model_.master_bytes();
    for (std::size_t i = 0; i < model_.size(); ++i) {
      const matrix& v = model_.at(i).value();
      s.working_bytes += v.type() == dtype::float32 ? 0 : v.bytes();
    }
    s.gradient_bytes = model_.gradient_bytes();
    s.overflow_count += retired_overflows_;
    s.recipe_switches = static_cast<std::int64_t>(switches_.size());
    s.optimizer_bytes = model_.compensation_bytes();  // optimi keeps them in the optimizer's state
    s.optimizer_bytes += std::visit(
        [](const auto& o) -> std::size_t {
          if constexpr (std::is_same<std::decay_t<decltype(o)>, std::monostate>::value) {
            return 0;
          } else {
            return o.state_bytes();
          }
        },
        optimizer_);
    return s;
  }
  // Logs and returns this epoch's statistics, and starts the next epoch.
  epoch_statistics end_epoch() {
    const epoch_statistics e = epoch_;
    log(detail::epoch_line(e));
    epoch_ = epoch_statistics{};
    ++epochs_;
    return e;
  }

  // "[AMP] Using BF16 mixed precision (no loss scaling)", ...
  std::string describe() const {
    if (!enabled_) return "[AMP] Disabled: training in FP32 (no autocast, no loss scaling)";
    std::string s = std::string("[AMP] Using ") + upper(to_string(recipe_.precision));
    s += recipe_.precision == precision_mode::float32 ? " training"
         : recipe_.autocast || recipe_.master_weights ? " mixed precision"
                                                      : " training";
    s += " (" + scaling_text() + ")";
    if (recipe_.autocast && (recipe_.precision == precision_mode::float8 || is_block_scaled(recipe_.precision))) {
      s += ", BF16 autocast";
    }
    if (is_block_scaled(recipe_.precision)) s += ", block-scaled linear layers (session_linear)";
    if (recipe_.master_weights) s += ", FP32 master weights";
    if (recipe_.cast_model) s += std::string(", model cast to ") + upper(to_string(recipe_.precision));
    if (recipe_.keep_batchnorm_fp32) s += ", batchnorm kept in FP32";
    if (recipe_.kahan_summation) s += ", Kahan-summed updates";
    if (recipe_.precision == precision_mode::float8) {
      s += std::string(", fp8 delayed scaling (") + to_string(recipe_.fp8) + ", margin " +
           std::to_string(recipe_.margin) + ", amax history " + std::to_string(recipe_.amax_history_len) + ", " +
           to_string(recipe_.amax_compute_algo) + ")";
    }
    return s;
  }
  // "[AMP Stats] Scale: 32768.0, Growth tracker: 0"
  std::string stats_line() const {
    const scale_state s = scaler_state();
    return "[AMP Stats] Scale: " + detail::scale_text(s.scale) +
           ", Growth tracker: " + std::to_string(s.growth_tracker);
  }
  void log(const std::string& line) const {
    if (sink_) sink_(line);
  }
  void set_log_sink(log_sink sink) { sink_ = std::move(sink); }
  // Whether train_step reports each gradient's amax (step_result::gradient_amax), taken in the
  // unscale's own pass; off by default.  Not a recipe setting: it changes no result.
  void record_gradient_amax(bool on) noexcept { record_gradient_amax_ = on; }
  bool records_gradient_amax() const noexcept { return record_gradient_amax_; }

  // ---- Quantisation statistics of the layers (quantization_statistics.hpp) ----
  //
  // From the next train_step on, session_linear measures the quantised operands of the layers
  // and steps the options select; quantization_statistics() holds the latest record of each
  // (layer, operand), and the callback gets every record as it is made.  Not a recipe setting:
  // it changes no result, and is not saved.
  void collect_quantization_statistics(const quantization_statistics_options& options) { quantization_.start(options); }
  void stop_quantization_statistics() noexcept { quantization_.stop(); }
  const std::vector<layer_quantization_record>& quantization_statistics() const noexcept {
    return quantization_.latest();
  }
  void on_quantization_statistics(quantization_callback callback) { quantization_.set_callback(std::move(callback)); }
  // session_linear's side: whether layer `layer`'s call now is measured (inside train_step, on a
  // selected step and layer, in the first micro-batch), and where its records go.
  bool quantization_due(std::size_t layer) const {
    return in_step_ && quantization_.due(total_.steps, layer, micro_batch_);
  }
  void record_quantization(std::size_t layer, const ops::statistics_sink& seen) {
    quantization_.record(total_.steps, layer, recipe_.precision, seen);
  }

  // The versioned, checksummed state (scaling/state.hpp's frame, magic "MXSESSON"): the recipe's
  // settings, enabled, both scalers, the statistics, the master weights (masters and working
  // copies) and the fp8 scalers.  Only between steps.
  std::vector<std::uint8_t> save_state() const;
  // Loads a state saved by a session of the same recipe settings, parameter shapes and fp8
  // layers; all or nothing (scaler_state_error naming the mismatch, the session unchanged).
  void load_state(const std::uint8_t* data, std::size_t size);
  void load_state(const std::vector<std::uint8_t>& bytes) { load_state(bytes.data(), bytes.size()); }
  void save(const std::string& path) const {
    const std::vector<std::uint8_t> bytes = save_state();
    detail::write_file(path, std::string(bytes.begin(), bytes.end()));
  }
  void load(const std::string& path);

 private:
  using optimizer_variant = std::variant<std::monostate, optim::sgd, optim::adamw>;

  // Sets a flag for the duration of a train_step, so that a call that must come between steps
  // (a nested train_step from a callback, save_state, add_parameter) is refused by name.
  class step_guard {
   public:
    explicit step_guard(bool& flag) noexcept : flag_(flag) { flag_ = true; }
    step_guard(const step_guard&) = delete;
    step_guard& operator=(const step_guard&) = delete;
    ~step_guard() { flag_ = false; }

   private:
    bool& flag_;
  };
  void require_between_steps(const char* what) const {
    if (in_step_) {
      throw invalid_argument(std::string("precision_session::") + what +
                             ": called from inside train_step (a forward, backward or optimizer callback); "
                             "allowed only between steps");
    }
  }

  static void register_with(std::monostate&, std::size_t) noexcept {}
  template <class Optimizer>
  void register_with(Optimizer& o, std::size_t i) {
    o.add(model_.parameter_size(i));
  }
  const char* optimizer_name() const noexcept {
    return std::holds_alternative<optim::sgd>(optimizer_)     ? "sgd"
           : std::holds_alternative<optim::adamw>(optimizer_) ? "adamw"
                                                              : "none";
  }

  static recipe checked(const recipe& r) {
    validate(r);
    return r;
  }
  // r's override rules resolved against the registered parameters (recipe_error: a rule that
  // matches none), and the storage they give r.
  std::vector<layer_precision> layer_table_of(const recipe& r) const {
    if (!r.overrides.empty()) check_operation_rules(r.overrides, known_operations());
    std::vector<std::string> names(model_.size());
    for (std::size_t i = 0; i < names.size(); ++i) names[i] = model_.at(i).name();
    return resolve_overrides(r.overrides, names, r.precision);
  }
  static std::optional<dtype> override_dtype(const layer_precision& row) noexcept {
    return row.rule ? override_dtype_of(row.precision) : std::nullopt;
  }
  static parameter_storage storage_of(const recipe& r, const std::vector<layer_precision>& table) {
    parameter_storage s = storage_of(r);
    if (r.cast_model) {
      s.overrides.resize(table.size());
      for (const layer_precision& row : table) s.overrides[row.parameter] = override_dtype(row);
    }
    return s;
  }
  // Sets the parameters' precision overrides from the table (clearing those an earlier table
  // set), logs the layers that rules put in another precision, and keeps the table.
  void adopt_layer_table(std::vector<layer_precision> table);
  static parameter_storage storage_of(const recipe& r) noexcept {
    return parameter_storage{r.cast_model ? r.working_dtype() : dtype::float32,
                             r.master_weights,
                             r.keep_batchnorm_fp32,
                             r.stochastic_rounding,
                             static_cast<std::uint64_t>(r.seed),
                             r.kahan_summation,
                             {}};
  }
  static std::optional<master_weights> masters_of(const recipe& r) {
    std::optional<master_weights> m;
    if (r.master_weights) m.emplace(r.working_dtype(), r.stochastic_rounding, static_cast<std::uint64_t>(r.seed));
    return m;
  }

  static scaler_variant make_scaler(const recipe& r) {
    switch (r.scaling) {
      case loss_scaling_mode::fixed:
        return scaler_variant(std::in_place_index<1>, r.static_policy(), r.options());
      case loss_scaling_mode::dynamic:
        return scaler_variant(std::in_place_index<2>, r.dynamic_policy(), r.options());
      case loss_scaling_mode::hysteresis:
        return scaler_variant(std::in_place_index<3>, r.hysteresis_policy(), r.options());
      case loss_scaling_mode::none:
        break;
    }
    return scaler_variant(std::in_place_index<0>, no_scaling{}, r.options());
  }

  [[noreturn]] static master_weights& no_masters() {
    throw invalid_argument("precision_session::masters: the recipe keeps no master weights (master_weights=false)");
  }

  static std::string upper(const char* s) {
    std::string out(s);
    for (char& c : out) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    return out;
  }

  std::string scaling_text() const {
    switch (recipe_.scaling) {
      case loss_scaling_mode::none:
        return "no loss scaling";
      case loss_scaling_mode::fixed:
        return "static loss scale " + detail::scale_text(recipe_.static_scale);
      case loss_scaling_mode::dynamic:
        return "dynamic loss scaling, initial scale " + detail::scale_text(recipe_.init_scale);
      case loss_scaling_mode::hysteresis:
        return std::string("hysteresis loss scaling (") + to_string(recipe_.hysteresis_rules) + "), initial scale " +
               detail::scale_text(recipe_.init_scale);
    }
    return "invalid scaling";
  }

  void compare_replicas();  // check_replicas, also from inside train_step

  void set_enabled(bool on) {
    if (on == enabled_) return;
    enabled_ = on;
    log(describe());
  }

  // After an exception between unscale and the end of update (the optimizer step threw, or the
  // update hit scaler_options' skip limit or floor): ends the scaler's iteration at its current
  // scale, the policy not applied, so that the next train_step can run.
  template <class Scaler>
  static void close_abandoned_iteration(Scaler& scaler) noexcept {
    if (!scaler.iteration_in_progress()) return;
    try {
      scaler.update(scaler.get_scale());
    } catch (...) {  // the scale is in bounds, so update(scale) has nothing to refuse
    }
  }

  // train_step's callbacks, in the forms it accepts: forward() or forward(micro_batch) returning
  // the loss; backward(const backward_context&), backward(scaled_loss, micro_batch) or
  // backward(scaled_loss).
  template <class Forward>
  static float call_forward(Forward& forward, std::size_t micro) {
    if constexpr (std::is_invocable<Forward&, std::size_t>::value) {
      return static_cast<float>(forward(micro));
    } else {
      return static_cast<float>(forward());
    }
  }
  template <class Backward>
  static void call_backward(Backward& backward, const backward_context& c) {
    if constexpr (std::is_invocable<Backward&, const backward_context&>::value) {
      backward(c);
    } else if constexpr (std::is_invocable<Backward&, float, std::size_t>::value) {
      backward(c.scaled_loss, c.micro_batch);
    } else {
      backward(c.scaled_loss);
    }
  }

  // The bodies of the two train_steps, compiled once whatever callbacks a program passes (they
  // are not templates: mixprec::compiled holds them, docs/design.md "Compiled mode").
  using forward_ref = detail::callable_ref<float(std::size_t)>;
  using backward_ref = detail::callable_ref<void(const backward_context&)>;
  using step_ref = detail::callable_ref<void()>;
  step_result train_step_with(forward_ref forward, backward_ref backward, const std::vector<gradient_view>& grads,
                              step_ref optimizer_step, int micro_batches);
  step_result train_registered_with(forward_ref forward, backward_ref backward, int micro_batches);

  template <class Scaler>
  step_result run_step(Scaler& scaler, forward_ref forward, backward_ref backward,
                       const std::vector<gradient_view>& grads, step_ref optimizer_step, int k) {
    step_result r;
    r.scale = scaler.get_scale();
    const dtype compute = autocast_dtype();
    double loss_sum = 0;
    for (int m = 0; m < k; ++m) {
      const auto micro = static_cast<std::size_t>(m);
      micro_batch_ = micro;
      // A micro-batch's forward and backward run in one autocast scope, so that a backward made
      // of ops::*_backward computes in the precision its forward ran in (PyTorch's autograd gets
      // the same from the low-precision tensors its forward saved): in an fp16 recipe the
      // gradients are fp16 products, and can underflow as loss scaling expects them to.
      std::optional<dynamic_autocast_scope> scope;
      if (op_precisions_) {
        scope.emplace(forward_autocast());
      } else if (compute != dtype::float32) {
        scope.emplace(compute);
      }
      const float loss = forward(micro);
      loss_sum += static_cast<double>(loss);
      backward(backward_context{scaler.get_scale(), scaler.scale(loss), micro});
    }
    r.loss = static_cast<float>(loss_sum / k);
    // Data parallelism: the mean of the ranks' scaled gradients, before the unscale checks them
    // (a non-finite gradient on any rank makes every rank's gradients NaN, so every rank skips).
    if (group_) r.communicated = group_->all_reduce(grads.data(), grads.size(), recipe_.reduce_options());
    bool stepped = false;
    const std::int64_t iteration = scaler.state().iteration;
    try {
      if (r.communicated.found_inf) {
        // Some rank's gradient (or the reduced sum) was not finite: every gradient here is NaN,
        // so there is nothing to unscale or to name; every rank records the same skip.
        scaler.record_found_inf(true);
      } else if (record_gradient_amax_) {
        scaler.unscale_with_amax(grads, r.gradient_amax);
      } else {
        scaler.unscale(grads);
      }
      if (recipe_.max_grad_norm > 0 && !r.communicated.found_inf) {
        clip_options clip;
        clip.gradient_rounding = recipe_.gradient_rounding;
        r.grad_norm = clip_grad_norm(grads, recipe_.max_grad_norm, clip).norm;
      }
      stepped = scaler.step([&] {
        optimizer_step();
        if (masters_) masters_->refresh();
      });
      scaler.update();
    } catch (...) {
      close_abandoned_iteration(scaler);
      throw;
    }
    if (fp8_) {
      // Data parallelism: every replica's fp8 scales follow the amaxes of the whole batch.
      if (group_) {
        fp8_->update([this](float* amax, std::size_t count) { group_->reduce_amax(amax, count); });
      } else {
        fp8_->update();
      }
    }
    r.skipped = !stepped;
    if (r.skipped) {  // the scaler's culprit of this iteration, if its own check found one
      const scaler_statistics stats = scaler.get_amp_stats();
      if (!stats.culprits.empty() && stats.culprits.back().iteration == iteration) {
        r.culprit = stats.culprits.back().element;
      }
    }
    return r;
  }

  recipe recipe_;
  scaler_variant scaler_;
  loss_scaler<no_scaling> fp32_scaler_;  // while disabled
  bool enabled_ = true;
  std::optional<master_weights> masters_;
  std::optional<ops::fp8_training> fp8_;
  model_parameters model_;
  optimizer_variant optimizer_;
  std::vector<gradient_view> views_;  // of model_'s gradient buffers
  bool in_step_ = false;
  std::size_t micro_batch_ = 0;
  bool record_gradient_amax_ = false;
  quantization_collector quantization_;
  epoch_statistics epoch_, total_;
  log_sink sink_;
  // Recipe changes (schedule.hpp): the schedule, the next change to apply, whether the fallback
  // has been used, end_epoch calls, skipped steps in a row, the switches made, the overflow
  // counts of scalers a switch replaced, and the fp8 layers declared (for a later fp8 phase).
  precision_schedule schedule_;
  std::size_t next_change_ = 0;
  bool fallback_used_ = false;
  std::int64_t epochs_ = 0;
  std::int64_t consecutive_skips_ = 0;
  std::vector<recipe_switch> switches_;
  // Per-layer overrides: the table in force, which parameters' overrides the session set, and
  // whether the table is current (a registration or a recipe change makes it stale).
  std::vector<layer_precision> layer_table_;
  std::vector<bool> overridden_;
  bool overrides_applied_ = false;
  std::shared_ptr<const op_precision_list> op_precisions_;  // the recipe's operation rules
  std::shared_ptr<process_group> group_;                    // data parallelism: the replicas' processes
  std::int64_t retired_overflows_ = 0;
  std::size_t fp8_layers_ = 0;
};

template <class Unused>
step_result basic_precision_session<Unused>::train_step_with(forward_ref forward, backward_ref backward,
                                                             const std::vector<gradient_view>& grads,
                                                             step_ref optimizer_step, int micro_batches) {
  if (micro_batches < 0 || micro_batches > recipe_accumulation_limit) {
    throw invalid_argument("precision_session::train_step: micro_batches is " + std::to_string(micro_batches) +
                           ", allowed: 0 (the recipe's accumulation_steps) to " +
                           std::to_string(recipe_accumulation_limit));
  }
  require_between_steps("train_step");
  apply_schedule();
  const int k = micro_batches > 0 ? micro_batches : recipe_.accumulation_steps;
  const step_guard guard(in_step_);
  const auto start = std::chrono::steady_clock::now();
  bool scale_changed = false;
  const auto run = [&](auto& scaler) {
    step_result r = run_step(scaler, forward, backward, grads, optimizer_step, k);
    scale_changed = scaler.get_scale() != r.scale;  // the scaler that ran, whatever a callback toggled
    return r;
  };
  step_result result = enabled_ ? std::visit(run, scaler_) : run(fp32_scaler_);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (result.culprit && &grads == &views_) result.parameter = model_.at(result.culprit->view).name();
  for (epoch_statistics* e : {&epoch_, &total_}) {
    ++e->steps;
    e->skipped += result.skipped ? 1 : 0;
    e->seconds += seconds;
    e->scale_changes += scale_changed ? 1 : 0;
  }
  consecutive_skips_ = result.skipped ? consecutive_skips_ + 1 : 0;
  if (result.skipped) log(detail::skip_line(total_.steps, result, get_scale()));
  if (group_ && recipe_.weight_check_interval > 0 && total_.steps % recipe_.weight_check_interval == 0) {
    compare_replicas();
  }
  return result;
}

template <class Unused>
step_result basic_precision_session<Unused>::train_registered_with(forward_ref forward, backward_ref backward,
                                                                   int micro_batches) {
  if (model_.size() == 0) {
    throw invalid_argument(
        "precision_session::train_step: no parameters registered; call add_parameter() for each model parameter, "
        "or pass gradients and an optimizer step to the five-argument train_step");
  }
  if (std::holds_alternative<std::monostate>(optimizer_)) {
    throw invalid_argument(
        "precision_session::train_step: no optimizer; call use_optimizer(optim::sgd(...)) or "
        "use_optimizer(optim::adamw(...)) first");
  }
  require_between_steps("train_step");
  apply_schedule();  // before the views: a switch re-stores the parameters
  model_.zero_gradients();
  if (views_.size() != model_.size()) views_ = model_.gradient_views();
  auto step = [&] {
    std::visit(
        [&](auto& o) {
          if constexpr (!std::is_same<std::decay_t<decltype(o)>, std::monostate>::value) {
            model_.update([&](std::size_t i, float* w, const float* g, std::size_t n) { o.step(i, w, g, n); });
          }
        },
        optimizer_);
  };
  return train_step_with(forward, backward, views_, step, micro_batches);
}

template <class Unused>
void basic_precision_session<Unused>::check_replicas() {
  require_between_steps("check_replicas");
  compare_replicas();
}

template <class Unused>
void basic_precision_session<Unused>::compare_replicas() {
  if (!group_) return;
  const std::size_t registered = model_.size(), user = masters_ ? masters_->size() : 0;
  std::vector<std::uint64_t> prints(registered + user);
  for (std::size_t i = 0; i < registered; ++i) prints[i] = model_.fingerprint(i);
  for (std::size_t i = 0; i < user; ++i) {
    prints[registered + i] =
        detail::fingerprint_bytes(masters_->master(i), masters_->parameter_size(i) * sizeof(float));
  }
  const std::size_t first = group_->first_difference(prints.data(), prints.size());
  if (first >= prints.size()) return;
  const std::string what = first < registered ? "parameter '" + model_.at(first).name() + "' (" +
                                                    std::to_string(first) + " of " + std::to_string(registered) +
                                                    " registered: its values, master or Kahan compensation)"
                                              : "masters() array " + std::to_string(first - registered);
  throw replica_mismatch_error("precision_session::check_replicas: after " + std::to_string(total_.steps) +
                               " steps the " + std::to_string(group_->size()) + " ranks hold different " + what +
                               "; every rank must start from the same parameters (or load the same checkpoint), "
                               "run the same recipe and change the parameters only through the session");
}

}  // namespace mixprec

#include "detail/session_state.inl"
#include "detail/recipe_switch.inl"
