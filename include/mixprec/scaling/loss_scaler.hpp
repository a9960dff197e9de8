// loss_scaler<Policy, Agreement> (DESIGN.md, "Loss scaling"): scales the loss, unscales the
// gradients with the inf/NaN check in the same pass, skips the optimizer step on overflow and
// applies the policy's rule at the end of each iteration.
//
// One iteration, per optimizer (parameter group) i, as torch/amp/grad_scaler.py's GradScaler:
//
//   scale(loss)                       any number of times (micro-batches of gradient accumulation)
//   unscale(grads..., i)              once: unscales and records whether anything was inf/NaN
//     or unscale_with_amax(views, amax, i)   the same, and each array's amax in that pass
//     or record_found_inf(found, i)   once: records a check made elsewhere (a GPU kernel)
//   step(fn, i)                       once: runs fn unless that optimizer's check found inf/NaN
//   update() / update(new_scale)      once for all optimizers: applies the policy, ends the iteration
//
// Out of order calls throw scaler_usage_error, as GradScaler raises: unscale twice, unscale
// after step, step twice, step or update with no check recorded.  The found_inf of each check
// goes through the Agreement (local by default; distributed/mpi.hpp, distributed/nccl.hpp), so
// that every process takes the same skip and scale decisions.
//
// update() is all or nothing: when the policy, the floor rule or the skip limit throws, the
// scaler keeps its state and the iteration stays open (update(new_scale) can close it).
//
// Which gradient overflowed: when unscale()'s check fails, the scaler finds the first inf/NaN
// of the arrays it was given (find_first_nonfinite, nonfinite.hpp; a search made only after a
// failed check, so a step with finite gradients costs nothing more).  update() keeps each
// culprit in the statistics (culprits, culprit_counts), names them in skip_limit_error, and
// gives scaler_options::skip_log one line per skipped iteration.  An Agreement with
//   std::optional<ranked_nonfinite> first_culprit(const std::optional<nonfinite_element>& local)
// (collective, called by every process after each check that found inf/NaN anywhere;
// mpi_agreement has it) makes every process name the same culprit: the smallest (array, element,
// rank) of the processes' own (smallest_culprit, nonfinite.hpp).  Without it each process keeps
// its own, with rank -1.
//
// A loss_scaler is not thread-safe; unscale may use threads internally (scaler_options::unscale).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../errors.hpp"
#include "detail/files.hpp"
#include "../detail/text.hpp"
#include "errors.hpp"
#include "nonfinite.hpp"
#include "options.hpp"
#include "policies.hpp"
#include "state.hpp"
#include "statistics.hpp"
#include "unscale.hpp"
#include "update_rule.hpp"

namespace mixprec {

// The Agreement concept: `bool any(bool local_found_inf)` returns true when any process found
// inf/NaN.  Every process calls it once per inf check, in the same order (it is collective).
struct local_agreement {
  bool any(bool local_found_inf) const noexcept { return local_found_inf; }
};

namespace detail {

// Whether an Agreement agrees on culprits too (first_culprit, above).
template <class Agreement, class = void>
struct agrees_on_culprits : std::false_type {};
template <class Agreement>
struct agrees_on_culprits<Agreement, std::void_t<decltype(std::declval<Agreement&>().first_culprit(
                                         std::declval<const std::optional<nonfinite_element>&>()))>> : std::true_type {
};

template <class Policy>
std::string policy_label(const Policy&) {
  return Policy::name;
}
inline std::string policy_label(const hysteresis_scaling& p) {
  return std::string(hysteresis_scaling::name) + "/" + to_string(p.rules);
}
}  // namespace detail

template <class Policy, class Agreement = local_agreement>
class loss_scaler {
 public:
  using policy_type = Policy;
  using agreement_type = Agreement;
  static constexpr std::size_t max_optimizers = 4096;

  explicit loss_scaler(Policy policy = Policy{}, scaler_options options = {}, Agreement agreement = Agreement{})
      : policy_(std::move(policy)), options_(std::move(options)), agreement_(std::move(agreement)) {
    validate_policy(policy_);
    detail::validate_scaler_options(options_);
    state_ = policy_.initial_state();
    require_in_bounds(state_.scale, "the policy's initial scale");
  }

  float get_scale() const noexcept { return static_cast<float>(state_.scale); }
  // What unscale multiplies by: float(1.0 / double(scale)), as PyTorch.
  float get_inv_scale() const noexcept { return inverse_scale(get_scale()); }
  float scale(float loss) const noexcept { return loss * get_scale(); }
  double scale(double loss) const noexcept { return loss * static_cast<double>(get_scale()); }

  // Unscale in place and check; true when every gradient was finite (on every process).
  template <class T, class = std::enable_if_t<std::is_constructible<gradient_view, T*, std::size_t>::value>>
  bool unscale(T* grads, std::size_t n, std::size_t optimizer = 0) {
    if (grads == nullptr && n > 0) {
      throw invalid_argument("loss_scaler::unscale: null gradient pointer with n = " + std::to_string(n));
    }
    const gradient_view view(grads, n);
    return unscale(&view, 1, optimizer);
  }
  bool unscale(const gradient_view* arrays, std::size_t count, std::size_t optimizer = 0) {
    detail::check_gradient_views("loss_scaler::unscale", arrays, count);
    return unscale_checked(arrays, count, nullptr, optimizer);
  }
  bool unscale(std::initializer_list<gradient_view> arrays, std::size_t optimizer = 0) {
    return unscale(arrays.begin(), arrays.size(), optimizer);
  }
  bool unscale(const std::vector<gradient_view>& arrays, std::size_t optimizer = 0) {
    return unscale(arrays.data(), arrays.size(), optimizer);
  }
  // An Eigen matrix, array, map, ref or block with a contiguous inner dimension.
  template <class Dense, class = std::enable_if_t<detail::is_dense_like<Dense>::value>>
  bool unscale(Dense& matrix, std::size_t optimizer = 0) {
    return unscale(gradient_views_of(matrix), optimizer);
  }
  // unscale(), and each array's amax in the same pass (unscale_and_check's amax: the largest
  // unscaled magnitude of array a, +inf / NaN when it held one, 0 when empty or all zero).  The
  // amax is this process's: the agreement decides found_inf only.  A named function rather than
  // an overload, so that unscale(views, count, 0) stays the optimizer index.
  bool unscale_with_amax(const gradient_view* arrays, std::size_t count, float* amax, std::size_t optimizer = 0) {
    detail::check_gradient_views("loss_scaler::unscale_with_amax", arrays, count);
    if (count > 0 && amax == nullptr) {
      throw invalid_argument("loss_scaler::unscale_with_amax: null amax pointer for " + std::to_string(count) +
                             " arrays");
    }
    if (count > 0) detail::check_array_extent("loss_scaler::unscale_with_amax", "amax", amax, count);
    return unscale_checked(arrays, count, amax, optimizer);
  }
  // The same, amax resized to one value per array.
  bool unscale_with_amax(const std::vector<gradient_view>& arrays, std::vector<float>& amax,
                         std::size_t optimizer = 0) {
    amax.assign(arrays.size(), 0.0f);
    return unscale_with_amax(arrays.data(), arrays.size(), amax.data(), optimizer);
  }

  // Records a check made elsewhere; returns true when no process found inf/NaN.
  bool record_found_inf(bool local_found_inf, std::size_t optimizer = 0) {
    return !finish_check(begin_check("record_found_inf()", optimizer), local_found_inf);
  }

  // Runs optimizer_step() unless this optimizer's check found inf/NaN; true when it ran.
  template <class F>
  bool step(F&& optimizer_step, std::size_t optimizer = 0) {
    const std::size_t i = record_index("step()", optimizer);
    if (records_[i].stage == phase::stepped) {
      throw scaler_usage_error("step() has already been called for optimizer " + std::to_string(optimizer) +
                               " in this iteration; update() starts the next one");
    }
    if (!records_[i].checked) {
      throw scaler_usage_error("step() for optimizer " + std::to_string(optimizer) +
                               " with no inf check recorded in this iteration: call unscale() or record_found_inf() "
                               "first");
    }
    if (!records_[i].found_inf) std::forward<F>(optimizer_step)();
    records_[i].stage = phase::stepped;
    return !records_[i].found_inf;
  }

  // Whether any check of this iteration so far found inf/NaN.
  bool found_inf() const noexcept {
    for (const record& r : records_) {
      if (r.checked && r.found_inf) return true;
    }
    return false;
  }
  bool iteration_in_progress() const noexcept {
    for (const record& r : records_) {
      if (r.stage != phase::ready) return true;
    }
    return false;
  }

  // Applies the policy to this iteration's checks (after the skip limit and the floor rule of
  // scaler_options) and starts the next iteration.
  void update() {
    if (!any_checked()) {
      throw scaler_usage_error(
          "update() with no inf check recorded in this iteration: call unscale() or record_found_inf() first "
          "(update(new_scale) sets the scale without one)");
    }
    const bool found = found_inf();
    const detail::update_limits limits = detail::update_limits_of(options_);
    const detail::update_result r =
        detail::apply_update([this](scale_state& s, bool f) { return detail::try_policy_update(policy_, s, f); },
                             state_, counters_, found, overflowed_checks(), limits);
    switch (r.status) {
      case detail::update_status::skip_limit:
        throw skip_limit_error(std::to_string(r.counters.consecutive_skips) +
                               " consecutive skipped steps reached scaler_options::max_consecutive_skips = " +
                               std::to_string(options_.max_consecutive_skips) + " at loss scale " +
                               detail::number_text(state_.scale) +
                               ": the gradients stay non-finite whatever the scale (look for inf/NaN in the loss or "
                               "the forward pass); this iteration's first non-finite gradients: " +
                               culprits_text());
      case detail::update_status::policy_refused: {
        scale_state scratch = state_;
        policy_.update(scratch, found);  // throws the policy's own error
        throw scaling_error(std::string(Policy::name) + ": try_update refused an update that update() accepts");
      }
      case detail::update_status::nan_scale:
        throw scaling_error(std::string(Policy::name) + ": the policy turned scale " +
                            detail::number_text(state_.scale) + " into NaN");
      case detail::update_status::applied:
        break;
    }
    scale_state next = r.state;
    scale_change_reason reason = r.reason;
    if (r.at_floor) next.scale = floor_scale(r.proposed_scale, r.counters.consecutive_skips, reason);
    commit(next, r.counters, reason, r.at_floor);
  }

  // Sets the scale (GradScaler.update(new_scale)): the policy's rule is not applied and its
  // trackers stay; the iteration ends.
  void update(float new_scale) {
    if (!detail::within_bounds(new_scale, options_)) {
      throw invalid_argument("loss_scaler::update(new_scale): new_scale is " + detail::number_text(new_scale) +
                             ", it must be in " + detail::bounds_text(options_));
    }
    scale_state next = state_;
    next.scale = new_scale;
    try {
      validate_scale_state(policy_, next);
    } catch (const invalid_argument& e) {
      throw invalid_argument(std::string("loss_scaler::update(new_scale): ") + e.what());
    }
    commit(next, detail::count_step(counters_, found_inf(), overflowed_checks()), scale_change_reason::manual, false);
  }

  const Policy& policy() const noexcept { return policy_; }
  const scale_state& state() const noexcept { return state_; }
  const scaler_options& options() const noexcept { return options_; }
  Agreement& agreement() noexcept { return agreement_; }

  // Replaces the policy options and the rule's state (importing framework state); counters and
  // history start afresh.  Only between iterations.
  void restore(const Policy& policy, const scale_state& state) {
    require_between_iterations("restore()");
    validate_policy(policy);
    validate_scale_state(policy, state);
    require_in_bounds(state.scale, "restore(): the scale");
    policy_ = policy;
    state_ = state;
    counters_ = scaler_counters{};
    history_.clear();
    culprits_.clear();
    culprit_counts_.clear();
    scale_histogram_.clear();
  }

  scaler_statistics get_amp_stats() const {
    scaler_statistics s;
    s.policy = detail::policy_label(policy_);
    s.scale = state_.scale;
    s.growth_tracker = state_.growth_tracker;
    s.hysteresis_tracker = state_.hysteresis_tracker;
    s.iteration = state_.iteration;
    s.last_overflow_iteration = state_.last_overflow_iteration;
    s.counters = counters_;
    s.history = history_;
    s.culprits = culprits_;
    s.culprit_counts = culprit_counts_;
    s.scale_histogram = scale_histogram_;
    return s;
  }
  void save_amp_stats(const std::string& path) const { detail::write_file(path, to_json(get_amp_stats()) + "\n"); }

  // The versioned, checksummed state (state.hpp).  Only between iterations.
  std::vector<std::uint8_t> save_state() const {
    require_between_iterations("save_state()");
    return encode_scaler_state(snapshot());
  }
  // Loads a state saved by save_state() of a scaler with the same policy type: policy options,
  // scale options, rule state, counters and history.  On any error the scaler is unchanged.
  void load_state(const std::uint8_t* data, std::size_t size) {
    require_between_iterations("load_state()");
    scaler_snapshot<Policy> loaded = decode_scaler_state(data, size, snapshot());
    if (!detail::within_bounds(loaded.state.scale, loaded.options)) {
      throw scaler_state_error("scaler state: scale " + detail::number_text(loaded.state.scale) + " outside " +
                               detail::bounds_text(loaded.options));
    }
    policy_ = std::move(loaded.policy);
    state_ = loaded.state;
    options_ = std::move(loaded.options);
    counters_ = loaded.counters;
    history_ = std::move(loaded.history);
  }
  void load_state(const std::vector<std::uint8_t>& bytes) { load_state(bytes.data(), bytes.size()); }
  void save_state_file(const std::string& path) const {
    const std::vector<std::uint8_t> bytes = save_state();
    detail::write_file(path, std::string(bytes.begin(), bytes.end()));
  }
  void load_state_file(const std::string& path) {
    require_between_iterations("load_state_file()");
    load_state(detail::read_file(path, detail::state_file_limit));
  }

 private:
  enum class phase : unsigned char { ready, unscaled, stepped };
  struct record {  // one optimizer's part of the current iteration
    phase stage = phase::ready;
    bool checked = false;  // its found_inf is known (agreed across processes)
    bool found_inf = false;
    std::optional<nonfinite_element> culprit;  // unscale()'s own, or the one agreed across processes
    int culprit_rank = -1;                     // the agreed culprit's process; -1: not agreed
  };

  scaler_snapshot<Policy> snapshot() const { return {policy_, state_, options_, counters_, history_}; }

  // unscale() and unscale_with_amax() after their argument checks; amax may be null.
  bool unscale_checked(const gradient_view* arrays, std::size_t count, float* amax, std::size_t optimizer) {
    const std::size_t i = begin_check("unscale()", optimizer);
    const bool finite = detail::unscale_views(arrays, count, get_inv_scale(), amax, options_.unscale);
    if (!finite) records_[i].culprit = find_first_nonfinite(arrays, count);
    return !finish_check(i, !finite);
  }

  void require_in_bounds(double scale, const char* what) const {
    if (!detail::within_bounds(scale, options_)) {
      throw invalid_argument(std::string("loss_scaler: ") + what + " " + detail::number_text(scale) + " is outside " +
                             detail::bounds_text(options_));
    }
  }

  void require_between_iterations(const char* what) const {
    if (iteration_in_progress()) {
      throw scaler_usage_error(std::string(what) +
                               " in the middle of an iteration (an optimizer has been unscaled or stepped); call it "
                               "before the first unscale() or after update()");
    }
  }

  std::size_t record_index(const char* what, std::size_t optimizer) {
    if (optimizer >= max_optimizers) {
      throw invalid_argument(std::string("loss_scaler::") + what + ": optimizer index " + std::to_string(optimizer) +
                             ", the limit is " + std::to_string(max_optimizers));
    }
    if (optimizer >= records_.size()) records_.resize(optimizer + 1);
    return optimizer;
  }

  std::size_t begin_check(const char* what, std::size_t optimizer) {
    const std::size_t i = record_index(what, optimizer);
    if (records_[i].stage == phase::unscaled) {
      throw scaler_usage_error(std::string(what) + ": an inf check has already been recorded for optimizer " +
                               std::to_string(optimizer) + " in this iteration; update() starts the next one");
    }
    if (records_[i].stage == phase::stepped) {
      throw scaler_usage_error(std::string(what) + " for optimizer " + std::to_string(optimizer) +
                               " after its step() in this iteration");
    }
    records_[i].stage = phase::unscaled;  // from here on a second check is an error, even if agreement fails
    return i;
  }

  bool finish_check(std::size_t i, bool local_found_inf) {
    const bool found = agreement_.any(local_found_inf);
    records_[i].checked = true;
    records_[i].found_inf = found;
    if constexpr (detail::agrees_on_culprits<Agreement>::value) {
      if (found) {  // every process is here: found is agreed
        const std::optional<ranked_nonfinite> agreed = agreement_.first_culprit(records_[i].culprit);
        records_[i].culprit.reset();
        if (agreed) {
          records_[i].culprit = agreed->element;
          records_[i].culprit_rank = agreed->rank;
        }
      }
    }
    return found;
  }

  bool any_checked() const noexcept {
    for (const record& r : records_) {
      if (r.checked) return true;
    }
    return false;
  }

  // This iteration's checks (one per optimizer) that found inf/NaN.
  std::int64_t overflowed_checks() const noexcept {
    std::int64_t n = 0;
    for (const record& r : records_) n += (r.checked && r.found_inf) ? 1 : 0;
    return n;
  }

  // An overflow at the floor: what scaler_options::at_floor says.
  double floor_scale(double proposed, std::int64_t consecutive_skips, scale_change_reason& reason) const {
    const float floor = detail::usable_bounds(options_).lowest;
    const floor_event event{state_.scale, proposed, floor, state_.iteration, consecutive_skips};
    switch (options_.at_floor) {
      case floor_action::clamp:
        break;
      case floor_action::throw_error:
        throw scale_floor_error(
            "overflow at the floor: loss scale " + detail::number_text(state_.scale) + " is already at " +
            (floor == options_.min_scale ? "scaler_options::min_scale "
                                         : "smallest_usable_scale (its inverse is float's largest) ") +
            detail::number_text(floor) + " and the policy asks for " + detail::number_text(proposed) + " (" +
            std::to_string(consecutive_skips) + " consecutive skipped steps)");
      case floor_action::call_handler: {
        const float chosen = options_.floor_handler(event);
        if (!detail::within_bounds(chosen, options_)) {
          throw invalid_argument("floor_handler returned scale " + detail::number_text(chosen) + ", it must be in " +
                                 detail::bounds_text(options_));
        }
        reason = scale_change_reason::floor_handler;
        return chosen;
      }
    }
    reason = scale_change_reason::floor_clamp;
    return floor;
  }

  // "optimizer 0: array 1, element 1 (+inf); optimizer 2: none in this process", for each
  // optimizer whose check found inf/NaN in this iteration.
  std::string culprits_text() const {
    std::string text;
    for (std::size_t i = 0; i < records_.size(); ++i) {
      if (!records_[i].checked || !records_[i].found_inf) continue;
      const record& r = records_[i];
      text += (text.empty() ? "" : "; ") + std::string("optimizer ") + std::to_string(i) + ": ";
      if (!r.culprit) {
        text += detail::agrees_on_culprits<Agreement>::value
                    ? "none found (record_found_inf)"
                    : "none in this process (record_found_inf or another process)";
      } else {
        text += to_string(*r.culprit) + (r.culprit_rank >= 0 ? " on rank " + std::to_string(r.culprit_rank) : "");
      }
    }
    return text;
  }

  // ++bins[key]'s count in a vector of bins kept sorted by key_of (a new bin from make(key)).
  template <class Bin, class Key, class KeyOf, class Make>
  static void count_in(std::vector<Bin>& bins, const Key& key, KeyOf key_of, Make make) {
    auto at =
        std::lower_bound(bins.begin(), bins.end(), key, [&](const Bin& b, const Key& k) { return key_of(b) < k; });
    if (at == bins.end() || key_of(*at) != key) at = bins.insert(at, make(key));
    ++at->count;
  }

  void keep_culprits() {
    for (std::size_t i = 0; i < records_.size(); ++i) {
      if (!records_[i].culprit) continue;
      const nonfinite_element& e = *records_[i].culprit;
      if (options_.history_capacity > 0) {
        if (culprits_.size() >= options_.history_capacity) culprits_.pop_front();
        culprits_.push_back(overflow_culprit{state_.iteration, i, e, records_[i].culprit_rank});
      }
      count_in(
          culprit_counts_, std::make_pair(i, e.view),
          [](const culprit_count& c) { return std::make_pair(c.optimizer, c.view); },
          [](const std::pair<std::size_t, std::size_t>& k) {
            return culprit_count{k.first, k.second, 0};
          });
    }
  }

  // One more iteration at `scale` (in the usable range: a positive, finite float).
  void count_scale(double scale) {
    count_in(
        scale_histogram_, std::ilogb(scale), [](const scale_bin& b) { return b.log2_scale; },
        [](int k) {
          return scale_bin{k, 0};
        });
  }

  void commit(const scale_state& next, const scaler_counters& counters, scale_change_reason reason, bool at_floor) {
    if ((next.scale != state_.scale || at_floor) && options_.history_capacity > 0) {
      if (history_.size() >= options_.history_capacity) history_.pop_front();
      history_.push_back(scale_change{state_.iteration, state_.scale, next.scale, reason});
    }
    const bool skipped = found_inf();
    std::string log_line;
    if (skipped && options_.skip_log) {
      log_line = "mixprec: skipped step at iteration " + std::to_string(state_.iteration) + ", loss scale " +
                 detail::number_text(state_.scale) + " -> " + detail::number_text(next.scale) + "; " + culprits_text();
    }
    keep_culprits();
    count_scale(state_.scale);
    state_ = next;
    counters_ = counters;
    records_.clear();
    if (!log_line.empty()) options_.skip_log(log_line);  // last: the iteration is closed whatever it does
  }

  Policy policy_;
  scaler_options options_;
  Agreement agreement_;
  scale_state state_;
  scaler_counters counters_;
  std::deque<scale_change> history_;
  std::deque<overflow_culprit> culprits_;
  std::vector<culprit_count> culprit_counts_;
  std::vector<scale_bin> scale_histogram_;
  std::vector<record> records_;
};

}  // namespace mixprec
