// precision_session's saved state (included by precision_session.hpp).  The frame is the one
// every saved state of the library shares (scaling/state.hpp: magic, version, payload size,
// payload, CRC-32); the payload, version 8:
//
//   str    the active recipe's settings_text (u16 length; its override rules included)
//   blob   the schedule's schedule_text, then u32 next change, u8 fallback used,
//          i64 epochs ended, i64 skipped steps in a row, i64 overflows of replaced scalers,
//          u32 fp8 layers declared, u32 switches, each: i64 steps, i64 epochs, str from, str to,
//          str reason
//   u8     enabled
//   blob   the recipe's scaler state, then the fp32 (disabled) scaler's   (blob = u32 length, bytes)
//   i64 steps, i64 skipped, f64 seconds, i64 scale changes     this epoch, then the whole run
//   u8     master weights present, then master_weights::write
//   u32    fp8 layers (0: none), then blob forward scaler, blob backward scaler
//   the registered model parameters (model_parameters::write: values, masters, Kahan
//          compensations, update count)
//   u8     optimizer (0 none, 1 sgd, 2 adamw), then its state (optim::sgd/adamw::write)
//
// Loading checks everything before changing anything.  Versions 1 to 3 are refused rather than
// read: version 1 lacks the count of scale changes (the session does not make up a statistic),
// versions 1 and 2 hold neither the parameters nor the optimizer, without which a run does not
// continue, version 3 neither the recipe's kahan_summation nor the compensations, version 4
// not the schedule's position, version 5 not the recipe's per-layer overrides, version 6 not
// its data-parallel keys (reduce_dtype, bucket_bytes, weight_check_interval), and version 7 not
// its mx_weight_scales.
//
// A session loads a state whose active recipe is its own, or (after a switch) one of its
// schedule's recipes: it then trains with that recipe, its parameters stored as it says.
#pragma once

namespace mixprec {
namespace detail {

constexpr char session_magic[8] = {'M', 'X', 'S', 'E', 'S', 'S', 'O', 'N'};
constexpr std::uint32_t session_state_version = 8;
constexpr std::size_t session_settings_limit = 4096;

inline void write_blob(detail::state_writer& w, const std::vector<std::uint8_t>& blob) {
  w.u32(static_cast<std::uint32_t>(blob.size()));
  w.bytes.insert(w.bytes.end(), blob.begin(), blob.end());
}

inline std::vector<std::uint8_t> read_blob(detail::state_reader& in, const char* what) {
  const std::uint32_t n = in.u32(what);
  if (n > in.remaining()) {
    detail::state_reader::fail(std::string(what) + " declares " + std::to_string(n) + " bytes, " +
                               std::to_string(in.remaining()) + " are left");
  }
  std::vector<std::uint8_t> blob(n);
  for (std::uint8_t& b : blob) b = static_cast<std::uint8_t>(in.u8(what));
  return blob;
}

inline void write_statistics(detail::state_writer& w, const epoch_statistics& e) {
  w.i64(e.steps);
  w.i64(e.skipped);
  w.f64(e.seconds);
  w.i64(e.scale_changes);
}

inline epoch_statistics read_statistics(detail::state_reader& in) {
  epoch_statistics e;
  e.steps = in.i64("steps");
  e.skipped = in.i64("skipped steps");
  e.seconds = in.f64("seconds");
  e.scale_changes = in.i64("scale changes");
  if (e.steps < 0 || e.skipped < 0 || e.skipped > e.steps || !(e.seconds >= 0) || !std::isfinite(e.seconds) ||
      e.scale_changes < 0 || e.scale_changes > e.steps) {
    detail::state_reader::fail("statistics out of range (steps " + std::to_string(e.steps) + ", skipped " +
                               std::to_string(e.skipped) + ", scale changes " + std::to_string(e.scale_changes) + ")");
  }
  return e;
}

// Whether a loaded scaler runs the policy options and scaler options that the recipe gives (its
// saved state could carry others: the recipe, not the blob, decides how the session trains).
template <class Policy>
bool same_configuration(const loss_scaler<Policy>& loaded, const loss_scaler<Policy>& fresh) {
  detail::state_writer a, b;
  Policy pa = loaded.policy(), pb = fresh.policy();
  if constexpr (detail::has_options<Policy>::value) {
    pa.visit_options(detail::option_writer{a});
    pb.visit_options(detail::option_writer{b});
  }
  const scaler_options& oa = loaded.options();
  const scaler_options& ob = fresh.options();
  return a.bytes == b.bytes && oa.min_scale == ob.min_scale && oa.max_scale == ob.max_scale &&
         oa.at_floor == ob.at_floor && oa.max_consecutive_skips == ob.max_consecutive_skips &&
         oa.history_capacity == ob.history_capacity && oa.unscale.gradient_rounding == ob.unscale.gradient_rounding;
}

// Whether two fp8 delayed-scaling policies have the same options (a loaded or carried fp8 state
// must run the recipe's).
inline bool same_fp8_options(const delayed_scaling& a, const delayed_scaling& b) noexcept {
  return a.margin == b.margin && a.format == b.format && a.amax_history_len == b.amax_history_len &&
         a.amax_compute_algo == b.amax_compute_algo;
}

// The first key whose value differs, for the mismatch message.
inline std::string first_difference(const std::string& saved, const std::string& current) {
  std::size_t i = 0;
  while (i < saved.size() && i < current.size() && saved[i] == current[i]) ++i;
  const std::size_t start = saved.rfind(", ", i) == std::string::npos ? 0 : saved.rfind(", ", i) + 2;
  const auto until_comma = [&](const std::string& s) { return s.substr(start, s.find(',', start) - start); };
  return "saved with " + until_comma(saved) + ", this session has " + until_comma(current);
}

}  // namespace detail

template <class Unused>
std::vector<std::uint8_t> basic_precision_session<Unused>::save_state() const {
  require_between_steps("save_state");
  detail::state_writer w;
  detail::begin_state_frame(w, detail::session_magic, detail::session_state_version);
  w.str(settings_text(recipe_));
  const std::string schedule = schedule_text(schedule_);
  detail::write_blob(w, std::vector<std::uint8_t>(schedule.begin(), schedule.end()));
  w.u32(static_cast<std::uint32_t>(next_change_));
  w.u8(fallback_used_ ? 1 : 0);
  w.i64(epochs_);
  w.i64(consecutive_skips_);
  w.i64(retired_overflows_);
  w.u32(static_cast<std::uint32_t>(fp8_layers_));
  w.u32(static_cast<std::uint32_t>(switches_.size()));
  for (const recipe_switch& r : switches_) {
    w.i64(r.steps);
    w.i64(r.epochs);
    for (const std::string* text : {&r.from, &r.to, &r.reason}) w.str(*text);
  }
  w.u8(enabled_ ? 1 : 0);
  detail::write_blob(w, std::visit([](const auto& s) { return s.save_state(); }, scaler_));
  detail::write_blob(w, fp32_scaler_.save_state());
  detail::write_statistics(w, epoch_);
  detail::write_statistics(w, total_);
  w.u8(masters_ ? 1 : 0);
  if (masters_) masters_->write(w);
  w.u32(fp8_ ? static_cast<std::uint32_t>(fp8_->layers()) : 0u);
  if (fp8_) {
    detail::write_blob(w, fp8_->forward().save_state());
    detail::write_blob(w, fp8_->backward().save_state());
  }
  model_.write(w);
  w.u8(static_cast<unsigned>(optimizer_.index()));
  std::visit(
      [&](const auto& o) {
        if constexpr (!std::is_same<std::decay_t<decltype(o)>, std::monostate>::value) o.write(w);
      },
      optimizer_);
  detail::end_state_frame(w);
  return w.bytes;
}

template <class Unused>
void basic_precision_session<Unused>::load_state(const std::uint8_t* data, std::size_t size) {
  using detail::state_reader;
  require_between_steps("load_state");
  const auto fail = [](const std::string& what) { throw scaler_state_error("session state: " + what); };
  const std::uint32_t payload =
      detail::check_state_frame(data, size, detail::session_magic, detail::session_state_version, "session state");
  state_reader in(data + detail::state_header_size, payload);
  const std::string saved = in.str("recipe settings", detail::session_settings_limit);
  const std::string current = settings_text(recipe_);
  // The recipe the state was training with: this session's, or one its schedule switches to.
  const recipe* active = saved == current ? &recipe_ : nullptr;
  for (const recipe_change& c : schedule_.changes) {
    if (!active && settings_text(c.next) == saved) active = &c.next;
  }
  if (!active && schedule_.fallback_after_skips > 0 && settings_text(schedule_.fallback) == saved) {
    active = &schedule_.fallback;
  }
  if (!active) {
    fail("another recipe: " + detail::first_difference(saved, current) +
         (schedule_.empty() ? "" : ", and none of its schedule's recipes matches"));
  }
  const recipe target = *active;
  const bool switched = active != &recipe_;
  if (switched && masters_ && masters_->size() != 0) {
    fail("it was saved under another recipe of the schedule, and masters() holds " + std::to_string(masters_->size()) +
         " arrays that a switch would drop");
  }
  const std::vector<std::uint8_t> schedule = detail::read_blob(in, "schedule text");
  if (std::string(schedule.begin(), schedule.end()) != schedule_text(schedule_)) {
    fail(schedule_.empty() ? "it was saved with a recipe schedule, this session has none (set_schedule before load)"
                           : "it was saved with another recipe schedule than this session's");
  }
  const std::uint32_t next_change = in.u32("next schedule change");
  if (next_change > schedule_.changes.size()) {
    fail("next schedule change " + std::to_string(next_change) + " of " + std::to_string(schedule_.changes.size()));
  }
  const bool fallback_used = in.boolean("fallback used");
  const std::int64_t epochs = in.i64("epochs"), consecutive_skips = in.i64("skipped steps in a row"),
                     retired_overflows = in.i64("overflows of replaced scalers");
  if (epochs < 0 || consecutive_skips < 0 || retired_overflows < 0) {
    fail("schedule counters out of range (epochs " + std::to_string(epochs) + ", skipped in a row " +
         std::to_string(consecutive_skips) + ", overflows " + std::to_string(retired_overflows) + ")");
  }
  const std::uint32_t fp8_layers = in.u32("fp8 layers declared");
  const std::uint32_t switch_count = in.u32("recipe switches");
  if (switch_count > in.remaining() / 16) fail(std::to_string(switch_count) + " recipe switches in a truncated state");
  std::vector<recipe_switch> switches(switch_count);
  for (recipe_switch& r : switches) {
    r.steps = in.i64("switch step");
    r.epochs = in.i64("switch epoch");
    for (std::string* text : {&r.from, &r.to, &r.reason}) *text = in.str("switch text", detail::session_settings_limit);
  }
  const bool enabled = in.boolean("enabled");
  const scaler_variant fresh = make_scaler(target);
  scaler_variant scaler = switched ? fresh : scaler_;  // loaded into copies: the session changes once all is read
  const std::vector<std::uint8_t> scaler_bytes = detail::read_blob(in, "scaler state");
  std::visit(
      [&](auto& s) {
        s.load_state(scaler_bytes);
        using scaler_type = std::decay_t<decltype(s)>;
        if (!detail::same_configuration(s, std::get<scaler_type>(fresh))) {
          fail("its scaler state holds policy or scaler options that differ from the recipe's");
        }
      },
      scaler);
  loss_scaler<no_scaling> fp32_scaler = fp32_scaler_;
  fp32_scaler.load_state(detail::read_blob(in, "fp32 scaler state"));
  if (!detail::same_configuration(fp32_scaler, loss_scaler<no_scaling>{})) {
    fail("its fp32 scaler state holds scaler options other than the defaults");
  }
  const epoch_statistics epoch = detail::read_statistics(in);
  const epoch_statistics total = detail::read_statistics(in);
  std::optional<master_weights> switched_masters;  // the target recipe's, when it is another
  if (switched) switched_masters = masters_of(target);
  master_weights* masters_target =
      switched ? (switched_masters ? &*switched_masters : nullptr) : (masters_ ? &*masters_ : nullptr);
  if (in.boolean("master weights present") != (masters_target != nullptr)) {
    fail(masters_target ? "holds no master weights, this session keeps them"
                        : "holds master weights, this session has none");
  }
  std::optional<master_weights::decoded> masters;
  if (masters_target) masters = masters_target->decode(in);
  const std::uint32_t layers = in.u32("fp8 layers");
  // An fp8 target: a session that has fp8 layers takes their count, one that has none yet (a
  // schedule's fp8 phase resumed from its start recipe) the saved count.  Any other target holds
  // none (a run that left fp8 dropped its histories), whatever the session declared at its start.
  const std::size_t current_layers = fp8_ ? fp8_->layers() : 0;
  if (target.precision == precision_mode::float8 ? (fp8_ && layers != current_layers) : layers != 0) {
    fail("holds " + std::to_string(layers) + " fp8 layers, this session has " + std::to_string(current_layers));
  }
  std::optional<ops::fp8_training> fp8;
  if (layers != 0) {
    fp8.emplace(target.fp8_policy(), layers);
    fp8->forward().load_state(detail::read_blob(in, "fp8 forward state"));
    fp8->backward().load_state(detail::read_blob(in, "fp8 backward state"));
    const delayed_scaling expected = target.fp8_policy();
    for (const delayed_scaler* s : {&fp8->forward(), &fp8->backward()}) {
      if (!detail::same_fp8_options(s->recipe(), expected)) {
        fail("its fp8 state holds delayed-scaling options that differ from the recipe's");
      }
    }
  }
  std::vector<layer_precision> table = layer_table_of(target);  // recipe_error: a rule that matches nothing
  const parameter_storage storage = storage_of(target, table);
  const model_parameters::decoded model = model_.decode(in, storage);
  const unsigned kind = in.u8("optimizer");
  if (kind != optimizer_.index()) {
    static const char* const names[] = {"none", "sgd", "adamw"};
    fail(std::string("holds the state of optimizer ") + (kind < 3 ? names[kind] : "(unknown)") +
         ", this session uses " + optimizer_name());
  }
  // The optimizer's state, decoded into a copy of the same kind (the session's own is unchanged
  // until everything is read).
  optimizer_variant optimizer = optimizer_;
  std::visit(
      [&](auto& o) {
        if constexpr (!std::is_same<std::decay_t<decltype(o)>, std::monostate>::value) o.commit(o.decode(in));
      },
      optimizer);
  if (in.remaining() != 0) fail(std::to_string(in.remaining()) + " unread bytes at the end of the payload");

  if (masters) masters_target->commit(*masters);
  if (switched) {
    masters_ = std::move(switched_masters);
    recipe_ = target;
    views_.clear();
  }
  enabled_ = enabled;
  scaler_ = std::move(scaler);
  fp32_scaler_ = std::move(fp32_scaler);
  epoch_ = epoch;
  total_ = total;
  fp8_ = std::move(fp8);
  model_.commit(model, storage);
  optimizer_ = std::move(optimizer);
  next_change_ = next_change;
  fallback_used_ = fallback_used;
  epochs_ = epochs;
  consecutive_skips_ = consecutive_skips;
  retired_overflows_ = retired_overflows;
  fp8_layers_ = fp8_layers;
  switches_ = std::move(switches);
  adopt_layer_table(std::move(table));
}

template <class Unused>
void basic_precision_session<Unused>::load(const std::string& path) {
  // The largest valid state of this session, in any recipe of its schedule: the masters (4 + 2
  // bytes a value), the fp8 histories of the layers declared (the longest history of the
  // schedule's fp8 recipes), and a margin for the scalers and the settings.
  std::size_t limit = detail::state_file_limit;
  if (masters_) limit += masters_->size() * 8 + masters_->master_bytes() / 4 * 6;
  std::size_t history = 0;
  const auto longest = [&](const recipe& r) {
    if (r.precision == precision_mode::float8)
      history = std::max(history, static_cast<std::size_t>(r.amax_history_len));
  };
  longest(recipe_);
  for (const recipe_change& c : schedule_.changes) longest(c.next);
  if (schedule_.fallback_after_skips > 0) longest(schedule_.fallback);
  const std::size_t fp8_layers = std::max<std::size_t>(fp8_ ? fp8_->layers() : 0, fp8_layers_);
  limit += 3 * fp8_layers * history * 4 * 2;
  limit += model_.saved_bytes_limit();
  limit += std::visit(
      [](const auto& o) -> std::size_t {
        if constexpr (std::is_same<std::decay_t<decltype(o)>, std::monostate>::value) {
          return 0;
        } else {
          return 2 * o.state_bytes() + 64 * o.size() + 4096;
        }
      },
      optimizer_);
  load_state(detail::read_file(path, limit));
}

}  // namespace mixprec
