// One training run of train_digits: a recipe (precision and loss scaling), the data, and the
// loop, written on mixprec's one training API: a precision_session that holds the parameters,
// their gradients and the optimizer, and runs each step in one train_step call.
#pragma once

#include <mixprec/mixprec.hpp>
#include <mixprec/optim/optim.hpp>
#include <mixprec/session/session.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/digits.hpp"
#include "common/random.hpp"
#include "model.hpp"

namespace train_digits {

enum class scaling { none, fixed, dynamic, hysteresis };

inline const char* to_string(precision p) {
  switch (p) {
    case precision::fp32:
      return "fp32";
    case precision::fp16:
      return "fp16";
    case precision::bf16:
      return "bf16";
    case precision::fp8:
      return "fp8";
    case precision::mxfp8:
      return "mxfp8";
    case precision::fp8_block:
      return "fp8_block";
    case precision::nvfp4:
      return "nvfp4";
    case precision::fp8_rowwise:
      return "fp8_rowwise";
    case precision::mxfp4:
      return "mxfp4";
  }
  return "?";
}
inline const char* to_string(scaling s) {
  switch (s) {
    case scaling::none:
      return "none";
    case scaling::fixed:
      return "static";
    case scaling::dynamic:
      return "dynamic";
    case scaling::hysteresis:
      return "hysteresis";
  }
  return "?";
}

struct recipe {
  precision p = precision::fp32;
  scaling s = scaling::none;
  std::string name() const { return std::string(to_string(p)) + "/" + to_string(s); }
};

struct training_options {
  layer_sizes sizes;  // 64-128-128-10 by default
  int epochs = 20;
  std::uint64_t seed = 1;
  std::size_t batch = 64;
  float learning_rate = 0.05f;
  float momentum = 0.9f;
  // The loss is multiplied by 2^-gradient_shift and the learning rate by 2^gradient_shift: the
  // float32 trajectory is the same bit for bit (powers of two are exact), and every gradient is
  // 2^gradient_shift times smaller, the regime in which float16 gradients underflow.
  int gradient_shift = 18;
  float static_scale = 65536.0f;  // static_scaling's scale
  int growth_interval = 10;       // of dynamic and hysteresis scaling (short runs; PyTorch: 2000)
  bool progress = false;          // a progress line on stderr within each epoch
  bool measure_flush = true;      // fp16/bf16: count flushed weight gradients; fp8: the gradients' quantisation
                                  // underflow (both outside the timed part)
  bool evaluate = true;           // accuracy on both parts after each epoch
  std::int64_t max_steps = 0;     // stop after this many optimizer steps (0: the epochs decide)
  bool drop_last = false;         // skip an epoch's last, smaller batch (benchmarks: one shape)
  std::string checkpoint;         // the session's checkpoint file, written after save_after steps
  std::int64_t save_after = 0;    // (0: never)
  std::string resume;             // a checkpoint to load before training: its steps are not run again
  // fp16/bf16 only: "nearest", "stochastic" or "kahan" keeps the parameters in that dtype with no
  // fp32 masters (Apex O3-style, recipes-2026 #9), each update rounded that way; empty: fp32
  // parameters, the recipe's default.
  std::string cast_model;
  // A recipe schedule (precision_session::set_schedule): from epoch `first` on (after that many
  // epochs), train with `r`; and, with fallback_after_skips > 0, switch to `fallback` after that
  // many skipped steps in a row.  Empty: the recipe of the run throughout.
  struct scheduled {
    int first = 0;
    recipe r;
  };
  std::vector<scheduled> schedule;
  int fallback_after_skips = 0;
  recipe fallback;
  // Per-layer precision overrides of every session recipe (the recipe key override's text, for
  // example "first:bf16,last:bf16"; empty: none).  Layers are fc1, fc2, ... (the parameters'
  // names fc1.weight, fc1.bias, ...).
  std::string overrides;
  // Data parallelism.  Each batch is cut into `shards` row ranges (rows n·r/p to n·(r+1)/p of a
  // batch of n).  With a process group (mpirun ... --data-parallel) this process trains shard
  // group->rank() and the session all-reduces the gradients (their mean, in reduce_dtype, summed
  // in float in rank order); without one (--shards P) one process trains every shard as a
  // micro-batch whose loss gradient is divided by P: the one-process equivalent of the float32
  // all-reduce, bit for bit when P is a power of two (dividing by it is exact at every rounding
  // of these normal values).  The weight gradients' flush counts are not measured then.
  std::size_t shards = 1;
  std::shared_ptr<mixprec::process_group> group;
  mixprec::dtype reduce_dtype = mixprec::dtype::float32;
  std::int64_t weight_check_interval = 0;  // the session compares the replicas every N steps
};

// The CRC-32 of every parameter's bytes, in order: two runs that end with this value hold the
// same parameters bit for bit (what a resumed run is checked by).
inline std::uint32_t parameters_crc(const mlp& model) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t l = 0; l < model.layers(); ++l) {
    for (const parameter* p : {&model.weight(l), &model.bias(l)}) {
      const auto* b = static_cast<const std::uint8_t*>(p->value().raw_data());
      bytes.insert(bytes.end(), b, b + p->value().bytes());
    }
  }
  return mixprec::detail::crc32(bytes.data(), bytes.size());
}

struct epoch_record {
  int epoch = 0;
  double loss = 0;  // mean training loss of the epoch (cross-entropy, without the shift)
  double train_accuracy = 0, test_accuracy = 0;
  float scale = 1;
  std::int64_t skipped = 0;  // skipped steps so far
  double seconds = 0;        // training time so far: the steps alone, without evaluation or diagnostics
  double flushed = 0;        // mean share of weight-gradient elements flushed to zero (fp16/bf16)
};

struct step_record {
  std::int64_t step = 0;
  double loss = 0;
  float scale = 1;  // the scale this step used
  bool skipped = false;
  std::string culprit = {};                      // a skipped step's first non-finite gradient: its parameter
  std::vector<double> layer_flushed = {};        // per layer, the share of weight gradients flushed (fp16/bf16)
  std::vector<double> layer_fp8_underflow = {};  // fp8: per layer, the share of dy its e5m2 quantisation flushed
};

struct run_result {
  recipe r;
  std::vector<epoch_record> epochs;
  std::vector<step_record> steps;
  std::size_t master_bytes = 0;      // float32 weights and biases
  std::size_t cast_bytes = 0;        // low-precision copies the autocast cache held in a step
  std::size_t activation_bytes = 0;  // what one batch's forward keeps for the backward
  std::vector<double> step_seconds;  // each optimizer step's time (forward to update), diagnostics excluded
  std::int64_t resumed_steps = 0;    // steps the loaded checkpoint had done (not run here)
  std::uint32_t parameters_crc = 0;  // of the final parameters
  std::uint32_t trajectory_crc = 0;  // with shards: of the parameters' crc32 after every step, in order
  double best_loss() const {
    double best = epochs.empty() ? 0 : epochs.front().loss;
    for (const epoch_record& e : epochs) best = std::min(best, e.loss);
    return best;
  }
};

// The session recipe of a train_digits recipe: mixprec's named recipe of that precision, with the
// scaling asked for.  MXFP8, fp8_block, NVFP4, fp8_rowwise and MXFP4 are the session's block-scaled
// recipes: their linear layers in blocks (ops::mx_linear, fp8_block_linear, nvfp4_linear,
// torchao_fp8_linear, mx_linear, as session_linear runs them), everything else in float32 (no autocast, no loss
// scaling), the run's seed keying NVFP4's stochastic rounding.  fp16 without scaling is the experiment that shows the
// underflow, so it turns the recipe's safety check off.
inline mixprec::recipe session_recipe(const recipe& r, const training_options& o) {
  mixprec::recipe s = r.p == precision::fp16          ? mixprec::recipes::fp16()
                      : r.p == precision::bf16        ? mixprec::recipes::bf16()
                      : r.p == precision::fp8         ? mixprec::recipes::fp8()
                      : r.p == precision::mxfp8       ? mixprec::recipes::mxfp8()
                      : r.p == precision::fp8_block   ? mixprec::recipes::fp8_block()
                      : r.p == precision::nvfp4       ? mixprec::recipes::nvfp4()
                      : r.p == precision::fp8_rowwise ? mixprec::recipes::fp8_rowwise()
                      : r.p == precision::mxfp4       ? mixprec::recipes::mxfp4()
                                                      : mixprec::recipes::fp32();
  s.name = r.name();
  s.reduce_dtype = o.reduce_dtype;
  s.weight_check_interval = o.weight_check_interval;
  if (mixprec::is_block_scaled(s.precision)) s.seed = static_cast<std::int64_t>(o.seed);
  if (!o.overrides.empty()) s.overrides = mixprec::parse_overrides(o.overrides);
  if (!o.cast_model.empty()) {
    if (r.p != precision::fp16 && r.p != precision::bf16) {
      throw mixprec::invalid_argument("--cast-model keeps the parameters in fp16 or bf16; the precision is " +
                                      r.name());
    }
    s.cast_model = true;
    s.stochastic_rounding = o.cast_model == "stochastic";
    s.kahan_summation = o.cast_model == "kahan";
    s.seed = static_cast<std::int64_t>(o.seed);
  }
  switch (r.s) {
    case scaling::none:
      s.scaling = mixprec::loss_scaling_mode::none;
      s.safe = false;
      break;
    case scaling::fixed:
      s.scaling = mixprec::loss_scaling_mode::fixed;
      s.static_scale = o.static_scale;
      break;
    case scaling::dynamic:
      s.scaling = mixprec::loss_scaling_mode::dynamic;
      s.growth_interval = o.growth_interval;
      break;
    case scaling::hysteresis:  // Megatron-LM's rules
      s.scaling = mixprec::loss_scaling_mode::hysteresis;
      s.growth_interval = o.growth_interval;
      break;
  }
  return s;
}

// The session's schedule of the options' (epochs and train_digits recipes, each made a session
// recipe as above); the recipes' names say which one is active (precision_of).
inline mixprec::precision_schedule session_schedule(const training_options& o) {
  mixprec::precision_schedule s;
  for (const training_options::scheduled& c : o.schedule) {
    s.changes.push_back({mixprec::schedule_unit::epoch, c.first, session_recipe(c.r, o)});
  }
  if (o.fallback_after_skips > 0) {
    s.fallback_after_skips = o.fallback_after_skips;
    s.fallback = session_recipe(o.fallback, o);
  }
  return s;
}

// The train_digits recipe the session trains with now: the run's own, or one of its schedule.
inline recipe active_recipe(const mixprec::precision_session& amp, const recipe& start, const training_options& o) {
  const std::string& name = amp.get_recipe().name;
  for (const training_options::scheduled& c : o.schedule) {
    if (c.r.name() == name) return c.r;
  }
  if (o.fallback_after_skips > 0 && o.fallback.name() == name) return o.fallback;
  return start;
}

// The images of `part` listed in `rows` as a batch: pixels scaled to [0, 1].
inline matrix batch_of(const mixprec_example::digits_data& part, const std::vector<std::size_t>& order,
                       std::size_t first, std::size_t count, std::vector<int>& labels) {
  constexpr std::size_t pixels = mixprec_example::digits_data::pixels_per_image;
  matrix x(dtype::float32, count, pixels);
  labels.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t sample = order[first + i];
    for (std::size_t j = 0; j < pixels; ++j) {
      x.data<float>()[i * pixels + j] = part.image(sample)[j] / mixprec_example::digits_data::max_pixel;
    }
    labels[i] = part.labels[sample];
  }
  return x;
}

// fp8 (delayed scaling): the share of each layer's output gradient dy that the backward pass's
// e5m2 quantisation flushes to zero (Transformer Engine's underflows%: nonzero values whose code
// is zero), measured by the batch's forward and backward again through a copy of the fp8 state
// with TE's statistics on: the scales the next step will use, training's histories untouched.
inline std::vector<double> fp8_gradient_underflow(const mlp& model, const matrix& x, const std::vector<int>& labels,
                                                  float grad_loss, const ops::fp8_training& fp8,
                                                  const mixprec::autocast_state& autocast, std::uint32_t step) {
  ops::fp8_training probe = fp8;
  for (std::size_t l = 0; l < model.layers(); ++l) probe.backward().collect_statistics(l, 1);
  const mixprec::dynamic_autocast_scope scope(autocast);
  const activations a = model.forward(x, precision::fp8, &probe);
  model.backward(a, x, labels, grad_loss, precision::fp8, &probe, step);
  std::vector<double> share(model.layers(), 0.0);
  for (std::size_t l = 0; l < model.layers(); ++l) {
    const auto& measured = probe.backward().statistics(l);  // empty for a layer taken out of fp8
    if (measured) share[l] = measured->report.quantization.underflows_percent / 100;
  }
  return share;
}

// The share of `part` the model classifies right (forward in the recipe's precision; an fp8
// recipe's state is copied so that evaluating does not move its amax histories).
inline double accuracy(const mlp& model, const mixprec_example::digits_data& part, precision p,
                       const ops::fp8_training* fp8, const mixprec::autocast_state& autocast) {
  std::vector<std::size_t> all(part.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<int> labels;
  const matrix x = batch_of(part, all, 0, all.size(), labels);
  std::optional<ops::fp8_training> fp8_copy;
  if (fp8 != nullptr) fp8_copy = *fp8;
  mixprec::dynamic_autocast_scope amp(autocast);
  const matrix logits = model.forward(x, p, fp8_copy ? &*fp8_copy : nullptr).logits.to(dtype::float32);
  std::size_t right = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < logits.cols(); ++c) best = logits.value(i, c) > logits.value(i, best) ? c : best;
    right += static_cast<int>(best) == labels[i] ? std::size_t{1} : std::size_t{0};
  }
  return static_cast<double>(right) / static_cast<double>(labels.size());
}

// One run: the model's parameters registered with a precision_session of the recipe, SGD with
// momentum as the session's optimizer, and each step one train_step: forward (in the recipe's
// autocast scope, or through the fp8 / MX layers), backward from the scaled loss into the
// session's gradient buffers, then unscale, check, SGD or skip, scaler update, fp8 update.
inline run_result train(const recipe& r, const mixprec_example::digits_split& data, const training_options& o,
                        const std::function<void(const epoch_record&)>& on_epoch) {
  run_result result;
  result.r = r;
  mlp model(o.sizes, o.seed);
  result.master_bytes = model.master_bytes();
  mixprec::precision_session amp(session_recipe(r, o));
  for (std::size_t l = 0; l < model.layers(); ++l) {
    amp.add_parameter(model.weight(l));
    amp.add_parameter(model.bias(l));
  }
  const float shift = std::ldexp(1.0f, -o.gradient_shift);
  mixprec::optim::sgd_options sgd;
  sgd.lr = o.learning_rate / shift;  // exact: a power of two
  sgd.momentum = o.momentum;
  amp.use_optimizer(mixprec::optim::sgd(sgd));
  if (r.p == precision::fp8) amp.use_fp8_layers(model.layers());
  if (!o.schedule.empty() || o.fallback_after_skips > 0 || !o.overrides.empty()) {
    if (!o.schedule.empty() || o.fallback_after_skips > 0) amp.set_schedule(session_schedule(o));
    amp.set_log_sink([](const std::string& line) {
      if (line.rfind("[AMP Switch]", 0) == 0 || line.rfind("[AMP Override]", 0) == 0) {
        std::printf("  %s\n", line.c_str());
      }
    });
  }
  if (o.group) amp.use_process_group(o.group);
  if (!o.resume.empty()) {  // the model and session built as above, then the checkpoint: a fresh process
    amp.load(o.resume);
    result.resumed_steps = amp.statistics().total_steps;
  }
  // The recipe of the coming step (a schedule may switch it) and its fp8 layers.
  recipe now = r;
  ops::fp8_training* fp8 = nullptr;
  const auto prepare = [&] {
    amp.apply_schedule();
    now = active_recipe(amp, r, o);
    if (now.p == precision::fp8 && !amp.has_fp8_layers()) amp.use_fp8_layers(model.layers());
    fp8 = now.p == precision::fp8 ? &amp.fp8() : nullptr;
  };
  prepare();

  mixprec_example::reproducible_random shuffler(o.seed ^ 0x5eedu);
  std::vector<std::size_t> order(data.train.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  using clock = std::chrono::steady_clock;
  const auto seconds_since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  double training_seconds = 0;
  std::int64_t step = 0;
  std::vector<std::uint32_t> step_crcs;  // with shards: the parameters' crc32 after every step
  for (int epoch = 1; epoch <= o.epochs && (o.max_steps == 0 || step < o.max_steps); ++epoch) {
    shuffler.shuffle(order);
    double loss_sum = 0, flushed_sum = 0;
    std::size_t batches = 0, trained = 0;  // batches of the epoch, and those trained here (a resume skips some)
    std::size_t measured = 0;              // of those, steps whose flushed gradients were counted
    for (std::size_t first = 0; first < order.size() && (o.max_steps == 0 || step < o.max_steps);
         first += o.batch, ++batches, ++step) {
      if (o.drop_last && first + o.batch > order.size()) break;
      if (step < result.resumed_steps) continue;  // done before the checkpoint: the order still advances
      if (o.progress) {
        std::fprintf(stderr, "\r  %s epoch %d: batch %zu/%zu", r.name().c_str(), epoch, batches + 1,
                     (order.size() + o.batch - 1) / o.batch);
      }
      // This step's rows: the batch, or one shard of it (this rank's, or micro-batch m's).
      const std::size_t n = std::min(o.batch, order.size() - first);
      if (n < o.shards) {
        throw mixprec::invalid_argument("a batch of " + std::to_string(n) + " images cannot be cut into " +
                                        std::to_string(o.shards) + " shards");
      }
      std::vector<int> labels;
      matrix x;
      const auto load_shard = [&](std::size_t m) {
        const std::size_t begin = n * m / o.shards, end = n * (m + 1) / o.shards;
        x = batch_of(data.train, order, first + begin, end - begin, labels);
      };
      const bool micro_shards = o.shards > 1 && !o.group;
      load_shard(o.group ? static_cast<std::size_t>(o.group->rank()) : 0);
      prepare();
      const precision p = now.p;
      const bool measure_flush = o.measure_flush && o.shards == 1 && (p == precision::fp16 || p == precision::bf16);
      const auto step_start = clock::now();
      double diagnostics = 0;  // seconds spent measuring inside the step, taken off its time
      std::vector<flush_count> flush_counts;
      activations a;
      const mixprec::step_result s = amp.train_step(
          [&](std::size_t micro) {
            if (micro_shards) load_shard(micro);
            a = model.forward(x, p, fp8);
            return ops::cross_entropy(a.logits, labels);
          },
          [&](const mixprec::backward_context& b) {
            // d (scale · shift · loss) / d logits: the scaled, shifted loss's gradient (the
            // shards' mean: divided by their count when one process sums them).
            const float grad_loss = b.loss_gradient * shift / (micro_shards ? static_cast<float>(o.shards) : 1.0f);
            const std::vector<ops::linear_grads> grads =
                model.backward(a, x, labels, grad_loss, p, fp8, static_cast<std::uint32_t>(step));
            for (std::size_t l = 0; l < model.layers(); ++l) {
              amp.accumulate_gradient(model.weight(l), grads[l].weight);
              amp.accumulate_gradient(model.bias(l), grads[l].bias);
            }
            if (measure_flush) {
              const auto measuring = clock::now();
              flush_counts = flushed_by_layer(model, a, x, labels, grad_loss, grads);
              flushed_sum += flushed_share(flush_counts);
              ++measured;
              diagnostics += seconds_since(measuring);
            }
            result.activation_bytes = a.bytes();
            result.cast_bytes = mixprec::autocast_cache_statistics().bytes;
          },
          micro_shards ? static_cast<int>(o.shards) : 1);
      result.step_seconds.push_back(seconds_since(step_start) - diagnostics);
      training_seconds += result.step_seconds.back();
      float loss = s.loss;  // this process's shards'; with a group, the mean over the ranks
      if (o.group) {
        mixprec::all_reduce_options mean;
        mean.communication = dtype::float32;
        mean.bucket_bytes = sizeof(float) * static_cast<std::size_t>(o.group->size());
        const mixprec::gradient_view view(&loss, 1);
        o.group->all_reduce(&view, 1, mean);
      }
      if (o.shards > 1) step_crcs.push_back(parameters_crc(model));
      loss_sum += loss;
      step_record record{step, loss, s.scale, s.skipped};
      if (s.skipped) record.culprit = s.parameter.empty() ? "another process" : s.parameter;
      for (const flush_count& c : flush_counts) record.layer_flushed.push_back(c.share());
      if (o.measure_flush && p == precision::fp8 && o.shards == 1) {  // diagnostics, after the timed step
        record.layer_fp8_underflow = fp8_gradient_underflow(model, x, labels, amp.get_scale() * shift, amp.fp8(),
                                                            amp.forward_autocast(), static_cast<std::uint32_t>(step));
      }
      result.steps.push_back(std::move(record));
      ++trained;
      if (o.save_after > 0 && step + 1 == o.save_after) amp.save(o.checkpoint);
    }
    // The session's epoch count drives the schedule; a resumed run ends only the epochs that the
    // saved run had not (it saved after a step, before that epoch's end).
    if (step >= result.resumed_steps) amp.end_epoch();
    epoch_record e;
    e.epoch = epoch;
    e.loss = trained > 0 ? loss_sum / static_cast<double>(trained) : 0.0;
    if (o.evaluate) {
      e.train_accuracy = accuracy(model, data.train, now.p, fp8, amp.forward_autocast());
      e.test_accuracy = accuracy(model, data.test, now.p, fp8, amp.forward_autocast());
    }
    e.scale = amp.get_scale();
    e.skipped = amp.statistics().skipped_steps;
    e.seconds = training_seconds;
    e.flushed = measured > 0 ? flushed_sum / static_cast<double>(measured) : 0.0;
    if (o.progress) std::fprintf(stderr, "\r%60s\r", "");
    result.epochs.push_back(e);
    if (on_epoch) on_epoch(e);
  }
  result.parameters_crc = parameters_crc(model);
  result.trajectory_crc = mixprec::detail::crc32(reinterpret_cast<const std::uint8_t*>(step_crcs.data()),
                                                 step_crcs.size() * sizeof(std::uint32_t));
  return result;
}

}  // namespace train_digits
