// delayed_scaler: the state of delayed scaling (scaling/fp8/delayed_scaling.hpp) for a set of
// tensors of one pass, the quantisation that uses it, and the update that ends each step.
//
//   mixprec::delayed_scaler forward{mixprec::delayed_scaling{}, mixprec::fp8_pass::forward, 3};
//   auto q = forward.quantize(0, x, n, x_fp8);      // x_fp8[i] = convert(x[i] * scale(0)),
//                                                   // saturating; records amax(x) in slot 0
//   mixprec::dequantize_n(x_fp8, n, y, q.scale_inv); // y[i] = float(x_fp8[i]) * scale_inv
//   ...
//   forward.update();                               // end of the step: rolls the histories and
//                                                   // computes the next scales (TE's rules)
//
// The quantise/dequantise convention is Transformer Engine's: q = convert(x · scale), x ≈
// float(q) · scale_inv, scale_inv = 1 / scale (IEEE float division, as TE's reciprocal), with
// saturation (±max for out-of-range values and ±inf).  quantize() runs on bulk/quantize.hpp's
// fused pass (scale, convert and amax in one read of x).
//
// Across processes: update(reduce) first replaces every tensor's slot 0 by reduce's in-place MAX
// over the processes (distributed/mpi.hpp: mpi_reduce_amax; distributed/nccl.hpp:
// nccl_agreement::reduce_amax), as TE reduces its amax buffer before the fused update; every
// process then computes the same scales.
//
// Statistics (TE's log_fp8_tensor_stats with its freq option): collect_statistics(tensor, every)
// makes quantize() measure the tensor on the iterations that are multiples of `every`, fused with
// the quantise (quantize_with_statistics: the same codes and amax); statistics(tensor) holds the
// last one with its iteration, statistics_json() all of them.  A diagnostic setting: not part of
// the saved state.
//
// A delayed_scaler is not thread-safe.  Errors: invalid_argument for a bad tensor index or
// element type, scaler_state_error for a state that cannot be loaded (the scaler is unchanged).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../bulk/quantize.hpp"
#include "../../detail/bits.hpp"
#include "../../errors.hpp"
#include "../detail/files.hpp"
#include "delayed_scaling.hpp"
#include "format.hpp"
#include "quantization_statistics.hpp"
#include "state.hpp"

namespace mixprec {

class delayed_scaler {
 public:
  delayed_scaler(delayed_scaling recipe, fp8_pass pass, std::size_t tensors) : recipe_(std::move(recipe)) {
    recipe_.validate();
    if (tensors * static_cast<std::size_t>(recipe_.amax_history_len) > delayed_scaling_slot_limit) {
      throw invalid_argument("delayed_scaler: " + std::to_string(tensors) + " tensors with histories of " +
                             std::to_string(recipe_.amax_history_len) + " exceed the limit of " +
                             std::to_string(delayed_scaling_slot_limit) + " history slots");
    }
    state_.pass = pass;
    state_.tensors = tensors;
    state_.history_length = static_cast<std::size_t>(recipe_.amax_history_len);
    state_.scale.assign(tensors, 1.0f);  // TE's initial scale (DelayedScalingRecipeState: torch.ones)
    state_.amax_history.assign(tensors * state_.history_length, 0.0f);
    refresh_inverses();
  }

  const delayed_scaling& recipe() const noexcept { return recipe_; }
  fp8_pass pass() const noexcept { return state_.pass; }
  fp8_element element() const noexcept { return element_of(recipe_.format, state_.pass); }
  std::size_t tensors() const noexcept { return state_.tensors; }
  std::size_t history_length() const noexcept { return state_.history_length; }
  std::int64_t iteration() const noexcept { return state_.iteration; }
  const delayed_scaling_state& state() const noexcept { return state_; }

  float scale(std::size_t tensor) const { return state_.scale[checked(tensor)]; }
  float scale_inv(std::size_t tensor) const { return scale_inv_[checked(tensor)]; }
  // The tensor's history_length() amaxes, slot 0 = this step's.
  const float* amax_history(std::size_t tensor) const { return state_.history_of(checked(tensor)); }

  // Raises slot 0 of the tensor to |amax|, as TE's quantise kernels do with atomicMaxFloat
  // (common/utils.cuh: an atomic max of the float bits as an int): NaN, whose bits lie above
  // infinity's, wins over every number.
  void record_amax(std::size_t tensor, float amax) {
    float& slot = state_.history_of(checked(tensor))[0];
    const std::uint32_t seen = detail::bit_cast<std::uint32_t>(slot);
    const std::uint32_t bits = detail::bit_cast<std::uint32_t>(amax) & 0x7FFF'FFFFu;
    if (bits > seen) slot = detail::bit_cast<float>(bits);
  }

  // Quantises x into out with the tensor's current scale and records amax(x).  T must be the
  // element type of this scaler's pass.
  template <class T>
  fp8_quantized quantize(std::size_t tensor, const float* x, std::size_t n, T* out,
                         rounding r = rounding::nearest_even) {
    require_element(fp8_element_of<T>(), "quantize");
    fp8_quantized result;
    result.scale = scale(tensor);
    result.scale_inv = scale_inv_[tensor];
    if (collecting(tensor)) {
      const quantized_with_statistics measured =
          quantize_with_statistics(x, n, out, result.scale, r, overflow::saturate);
      result.amax = measured.quantized.amax;
      statistics_[tensor] = fp8_statistics_record{state_.iteration, {measured.tensor, measured.quantization}};
    } else {
      result.amax = quantize_n(x, n, out, result.scale, r, overflow::saturate);
    }
    record_amax(tensor, result.amax);
    return result;
  }

  // Measures the tensor's quantisations on iterations that are multiples of every (0: never).
  void collect_statistics(std::size_t tensor, std::int64_t every) {
    checked(tensor);
    if (every < 0) {
      throw invalid_argument("delayed_scaler::collect_statistics: every is " + std::to_string(every) +
                             ", it must be >= 0 (0 turns collection off)");
    }
    every_.resize(state_.tensors, 0);
    statistics_.resize(state_.tensors);
    every_[tensor] = every;
  }
  // The collection interval of the tensor (0: off).
  std::int64_t statistics_every(std::size_t tensor) const {
    checked(tensor);
    return tensor < every_.size() ? every_[tensor] : 0;
  }
  // The tensor's last measured quantisation and its iteration; empty before the first.
  const std::optional<fp8_statistics_record>& statistics(std::size_t tensor) const {
    static const std::optional<fp8_statistics_record> none;
    checked(tensor);
    return tensor < statistics_.size() ? statistics_[tensor] : none;
  }
  // {"pass": ..., "tensors": [{"tensor": t, "iteration": i, "stats": {...}} for each measured
  // tensor]}, the stats as to_json(quantization_report).
  std::string statistics_json() const {
    std::string out = std::string("{\"pass\": \"") + to_string(state_.pass) + "\", \"tensors\": [";
    bool first = true;
    for (std::size_t t = 0; t < statistics_.size(); ++t) {
      if (!statistics_[t]) continue;
      if (!first) out += ", ";
      first = false;
      out += "{\"tensor\": " + std::to_string(t) + ", \"iteration\": " + std::to_string(statistics_[t]->iteration) +
             ", \"stats\": " + to_json(statistics_[t]->report) + "}";
    }
    return out + "]}";
  }

  // Ends the step on this process: every tensor's history and scale per TE's rule.  All or
  // nothing: an amax_function that throws leaves the scaler as it was.
  void update() {
    if (recipe_.amax_compute_algo == amax_algorithm::custom) {
      std::vector<float> amax(state_.tensors);  // every call first: the only step that can throw
      for (std::size_t t = 0; t < state_.tensors; ++t) {
        amax[t] = recipe_.amax_function(state_.history_of(t), state_.history_length);
      }
      for (std::size_t t = 0; t < state_.tensors; ++t) {
        state_.scale[t] = detail::delayed_update_unfused(state_.history_of(t), state_.history_length, amax[t], recipe_,
                                                         state_.pass, state_.scale[t]);
      }
    } else {
      for (std::size_t t = 0; t < state_.tensors; ++t) {
        state_.scale[t] =
            detail::delayed_update_fused(state_.history_of(t), state_.history_length, recipe_.amax_compute_algo,
                                         state_.scale[t], recipe_.scaled_max(state_.pass));
      }
    }
    refresh_inverses();
    ++state_.iteration;
  }

  // Ends the step after agreeing on this step's amaxes: reduce_max(float* amax, std::size_t count)
  // replaces each value by its maximum over the processes (collective).  If it throws, nothing
  // has changed.
  template <class ReduceMax>
  void update(ReduceMax&& reduce_max) {
    std::vector<float> current(state_.tensors);
    for (std::size_t t = 0; t < state_.tensors; ++t) current[t] = state_.history_of(t)[0];
    reduce_max(current.data(), current.size());
    for (std::size_t t = 0; t < state_.tensors; ++t) state_.history_of(t)[0] = current[t];
    update();
  }

  std::vector<std::uint8_t> save_state() const { return encode_delayed_scaling_state(recipe_, state_); }

  // Loads a state saved by a scaler of the same pass and tensor count; its recipe options
  // replace this scaler's (the amax function stays).  All or nothing.
  void load_state(const std::uint8_t* data, std::size_t size) {
    auto loaded = decode_delayed_scaling_state(data, size, recipe_, state_.pass, state_.tensors);
    recipe_ = std::move(loaded.first);
    state_ = std::move(loaded.second);
    refresh_inverses();
  }
  void load_state(const std::vector<std::uint8_t>& bytes) { load_state(bytes.data(), bytes.size()); }

  void save_state_file(const std::string& path) const {
    const std::vector<std::uint8_t> bytes = save_state();
    detail::write_file(path, std::string(bytes.begin(), bytes.end()));
  }
  void load_state_file(const std::string& path) {
    // No valid state for this scaler is larger than its own saved form plus the options' text.
    const std::size_t limit = detail::state_header_size + 1024 + (state_.tensors + 1) * 4 +
                              state_.tensors * static_cast<std::size_t>(delayed_scaling_history_limit) * 4;
    load_state(detail::read_file(path, limit));
  }

 private:
  std::size_t checked(std::size_t tensor) const {
    if (tensor >= state_.tensors) {
      throw invalid_argument("delayed_scaler: tensor " + std::to_string(tensor) + " out of range, the scaler has " +
                             std::to_string(state_.tensors));
    }
    return tensor;
  }

  void require_element(fp8_element requested, const char* what) const {
    if (requested != element()) {
      throw invalid_argument(std::string("delayed_scaler::") + what + "<" + to_string(requested) +
                             ">: this scaler's tensors are " + to_string(element()) + " (format " +
                             to_string(recipe_.format) + ", " + to_string(state_.pass) + " pass)");
    }
  }

  bool collecting(std::size_t tensor) const noexcept {
    return tensor < every_.size() && every_[tensor] > 0 && state_.iteration % every_[tensor] == 0;
  }

  void refresh_inverses() {
    scale_inv_.resize(state_.tensors);
    for (std::size_t t = 0; t < state_.tensors; ++t) scale_inv_[t] = 1.0f / state_.scale[t];
  }

  delayed_scaling recipe_;
  delayed_scaling_state state_;
  std::vector<float> scale_inv_;
  std::vector<std::int64_t> every_;  // per tensor; empty: no collection
  std::vector<std::optional<fp8_statistics_record>> statistics_;
};

}  // namespace mixprec
