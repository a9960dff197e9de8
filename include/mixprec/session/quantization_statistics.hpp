// Quantisation statistics of the session's layers, every N steps (Transformer Engine's
// log_fp8_tensor_stats with its freq / start_step / end_step options and its per-layer
// selection, without the inspector package):
//
//   mixprec::quantization_statistics_options o;
//   o.every = 10;                     // steps 0, 10, 20, ...
//   o.layers = {0, 2};                // empty: every layer
//   amp.collect_quantization_statistics(o);
//   ... train ...
//   for (const auto& r : amp.quantization_statistics()) use(r.layer, r.operand, r.report);
//   std::string json = mixprec::to_json(amp.quantization_statistics());
//
// On a step the options select, session_linear measures, for each selected layer, the operands
// its recipe quantised (ops/quantization_record.hpp: the forward's input and weight, the
// gradient as the dx product takes it), in the first micro-batch of the step:
//   fp8                 the delayed scaler's own statistics, fused with its quantise
//                       (quantize_with_statistics; overflows are TE's: beyond max · scale_inv)
//   mxfp8, mxfp4        mx_statistics of the MX copies
//   fp8_block           blockscale::fp8_block_statistics of the 1×128 / 128×128 copies
//   nvfp4               blockscale::nvfp4_statistics of the row-wise copies
//   fp8_rowwise         blockscale::torchao_statistics of the row- and column-wise casts
// (block quantisers' overflows: detail::overflow_boundary).  Layers that run in fp32, bf16 or
// fp16 (those recipes, a precision override) quantise nothing and record nothing.  The session
// keeps the latest record of each (layer, operand), and calls the callback, if set, with every
// record as it is made.  Collecting costs one dequantisation per measured operand on the selected
// steps (about a quantise each); the other steps run as without it.  The settings and the
// records are not part of the checkpoint: they change no result.
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../detail/text.hpp"
#include "../ops/quantization_record.hpp"
#include "errors.hpp"
#include "precision_mode.hpp"

namespace mixprec {

struct quantization_statistics_options {
  std::int64_t every = 1;       // steps between collections, >= 1 (TE's freq)
  std::int64_t start_step = 0;  // the first step collected (a step is counted by completed_steps())
  std::int64_t end_step = std::numeric_limits<std::int64_t>::max();  // the last step that may be collected
  std::vector<std::size_t> layers;  // the layers (session_linear's numbers) collected; empty: all
};

struct layer_quantization_record {
  std::int64_t step = 0;  // completed_steps() when measured: the step's number, from 0
  std::size_t layer = 0;
  ops::layer_operand operand = ops::layer_operand::input;
  precision_mode precision = precision_mode::float32;  // the recipe that quantised it
  quantization_report report;
};

using quantization_callback = std::function<void(const layer_quantization_record&)>;

// What the session keeps: the options and the latest record of each (layer, operand).
class quantization_collector {
 public:
  void start(const quantization_statistics_options& o) {
    constexpr const char* function = "precision_session::collect_quantization_statistics";
    if (o.every < 1) {
      throw invalid_argument(std::string(function) + ": every is " + std::to_string(o.every) + ", it must be >= 1");
    }
    if (o.start_step < 0) {
      throw invalid_argument(std::string(function) + ": start_step is " + std::to_string(o.start_step) +
                             ", it must be >= 0");
    }
    if (o.end_step < o.start_step) {
      throw invalid_argument(std::string(function) + ": end_step " + std::to_string(o.end_step) +
                             " is before start_step " + std::to_string(o.start_step));
    }
    options_ = o;
    std::sort(options_.layers.begin(), options_.layers.end());
    active_ = true;
  }
  void stop() noexcept { active_ = false; }
  bool active() const noexcept { return active_; }
  const quantization_statistics_options& options() const noexcept { return options_; }

  // Whether layer `layer` is measured in this call: step selected, layer selected, first
  // micro-batch.
  bool due(std::int64_t step, std::size_t layer, std::size_t micro_batch) const {
    if (!active_ || micro_batch != 0 || step < options_.start_step || step > options_.end_step) return false;
    if ((step - options_.start_step) % options_.every != 0) return false;
    return options_.layers.empty() || std::binary_search(options_.layers.begin(), options_.layers.end(), layer);
  }

  void record(std::int64_t step, std::size_t layer, precision_mode precision, const ops::statistics_sink& seen) {
    for (const ops::operand_statistics& s : seen) {
      layer_quantization_record r{step, layer, s.operand, precision, s.report};
      const auto at = std::lower_bound(latest_.begin(), latest_.end(), r, before);
      if (at != latest_.end() && at->layer == layer && at->operand == s.operand) {
        *at = r;
      } else {
        latest_.insert(at, r);
      }
      if (callback_) callback_(r);
    }
  }

  // The latest record of each (layer, operand), ordered by layer, then input, weight, grad_output.
  const std::vector<layer_quantization_record>& latest() const noexcept { return latest_; }
  void clear() noexcept { latest_.clear(); }
  void set_callback(quantization_callback f) { callback_ = std::move(f); }

 private:
  static bool before(const layer_quantization_record& a, const layer_quantization_record& b) noexcept {
    return a.layer != b.layer ? a.layer < b.layer : a.operand < b.operand;
  }

  quantization_statistics_options options_;
  bool active_ = false;
  std::vector<layer_quantization_record> latest_;
  quantization_callback callback_;
};

// {"step": 10, "layer": 0, "operand": "input", "precision": "mxfp8", "stats": {TE's names}}
// (docs/schemas/quantization_statistics.schema.json).
template <int = 0>
std::string to_json(const layer_quantization_record& r) {
  return "{\"step\": " + std::to_string(r.step) + ", \"layer\": " + std::to_string(r.layer) +
         ", \"operand\": " + detail::json_string(to_string(r.operand)) +
         ", \"precision\": " + detail::json_string(to_string(r.precision)) + ", \"stats\": " + to_json(r.report) + "}";
}

// [record, ...]: an array of to_json(record).
template <int = 0>
std::string to_json(const std::vector<layer_quantization_record>& records) {
  std::string out = "[";
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i > 0) out += ", ";
    out += to_json(records[i]);
  }
  return out + "]";
}

}  // namespace mixprec
