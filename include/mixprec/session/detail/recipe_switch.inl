// precision_session's recipe switches (included by precision_session.hpp after
// session_state.inl, whose same_configuration decides whether a scaler carries over).
#pragma once

namespace mixprec {

template <class Unused>
void basic_precision_session<Unused>::switch_recipe(const recipe& next, const std::string& reason) {
  require_between_steps("switch_recipe");
  validate(next);
  if (same_settings(next, recipe_)) return;
  if (masters_ && masters_->size() != 0) {
    throw invalid_argument("precision_session::switch_recipe: masters() holds " + std::to_string(masters_->size()) +
                           " arrays added by the caller; a recipe switch re-stores the registered parameters "
                           "(add_parameter) only, and would drop those");
  }
  // Everything that can fail is built before the session changes.
  scaler_variant scaler = make_scaler(next);
  bool carried = false;
  std::visit(
      [&](auto& fresh) {
        using scaler_type = std::decay_t<decltype(fresh)>;
        if (const scaler_type* old = std::get_if<scaler_type>(&scaler_)) {
          if (detail::same_configuration(*old, fresh)) {
            fresh = *old;
            carried = true;
          }
        }
      },
      scaler);
  const std::int64_t old_overflows =
      std::visit([](const auto& s) { return s.get_amp_stats().counters.overflow_count; }, scaler_);
  // fp8: the histories stay when next is fp8 with the same options, else next's fresh ones for
  // the layers declared (none outside fp8).
  const bool fp8_next = next.precision == precision_mode::float8 && fp8_layers_ > 0;
  const bool keep_fp8 = fp8_next && fp8_ && detail::same_fp8_options(fp8_->forward().recipe(), next.fp8_policy());
  std::optional<ops::fp8_training> fp8;
  if (fp8_next && !keep_fp8) fp8.emplace(next.fp8_policy(), fp8_layers_);
  std::optional<master_weights> masters = masters_of(next);
  std::vector<layer_precision> table = layer_table_of(next);
  recipe_switch record{total_.steps, epochs_, recipe_.name, next.name, reason};

  model_.restore_as(storage_of(next, table));
  views_.clear();  // the gradient buffers stay, but a train_step rebuilds its views after a switch
  if (!carried) retired_overflows_ += old_overflows;
  scaler_ = std::move(scaler);
  if (!keep_fp8) fp8_ = std::move(fp8);
  masters_ = std::move(masters);
  recipe_ = next;
  consecutive_skips_ = 0;
  log("[AMP Switch] Before step " + std::to_string(total_.steps + 1) + " (" + reason + "): " + record.from + " -> " +
      record.to + (carried ? ", loss scaler state carried over" : ""));
  switches_.push_back(std::move(record));
  log(describe());
  adopt_layer_table(std::move(table));
}

template <class Unused>
void basic_precision_session<Unused>::apply_schedule() {
  require_between_steps("apply_schedule");
  if (!overrides_applied_) apply_overrides();
  while (next_change_ < schedule_.changes.size()) {
    const recipe_change& c = schedule_.changes[next_change_];
    if ((c.unit == schedule_unit::step ? total_.steps : epochs_) < c.at) break;
    switch_recipe(c.next, std::string("schedule: ") + to_string(c.unit) + " " + std::to_string(c.at));
    ++next_change_;
  }
  if (!fallback_used_ && schedule_.fallback_after_skips > 0 && consecutive_skips_ >= schedule_.fallback_after_skips) {
    switch_recipe(schedule_.fallback,
                  "fallback: " + std::to_string(consecutive_skips_) + " skipped steps in a row under " + recipe_.name);
    fallback_used_ = true;
  }
}

template <class Unused>
void basic_precision_session<Unused>::apply_overrides() {
  require_between_steps("apply_overrides");
  std::vector<layer_precision> table = layer_table_of(recipe_);
  model_.set_overrides(storage_of(recipe_, table).overrides);
  adopt_layer_table(std::move(table));
}

template <class Unused>
void basic_precision_session<Unused>::adopt_layer_table(std::vector<layer_precision> table) {
  overridden_.resize(table.size(), false);
  bool changed = table.size() != layer_table_.size();
  for (const layer_precision& row : table) {
    const std::optional<dtype> d = override_dtype(row);
    parameter& p = model_.at(row.parameter);
    if (d) {
      p.set_precision_override(d);
    } else if (overridden_[row.parameter]) {
      p.set_precision_override(std::nullopt);
    }
    overridden_[row.parameter] = d.has_value();
    const layer_precision* before = row.parameter < layer_table_.size() ? &layer_table_[row.parameter] : nullptr;
    changed = changed || !before || before->rule != row.rule || before->precision != row.precision;
  }
  if (changed) {
    for (const layer_precision& row : table) {
      if (!row.rule) continue;
      const layer_override& rule = recipe_.overrides.rules[*row.rule];
      log("[AMP Override] " + row.parameter_name + " (layer " + std::to_string(row.layer) + " '" + row.layer_name +
          "'): " + to_string(row.precision) + ", rule " + std::to_string(*row.rule + 1) + " '" + rule_text(rule) + "'");
    }
  }
  std::shared_ptr<const op_precision_list> pinned = operation_precisions(recipe_.overrides);
  const bool pins_changed = (pinned == nullptr) != (op_precisions_ == nullptr) ||
                            (pinned != nullptr && *pinned != *op_precisions_) || !overrides_applied_;
  for (std::size_t k = 0; pins_changed && k < recipe_.overrides.rules.size(); ++k) {
    const layer_override& rule = recipe_.overrides.rules[k];
    if (!detail::is_operation_selector(rule.selector)) continue;
    log("[AMP Override] operation " + rule.selector.substr(1) + ": " + to_string(rule.precision) + ", rule " +
        std::to_string(k + 1) + " '" + rule_text(rule) + "'");
  }
  layer_table_ = std::move(table);
  overrides_applied_ = true;
  op_precisions_ = std::move(pinned);
}

}  // namespace mixprec
