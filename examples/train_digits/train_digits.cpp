// train_digits: an MLP on the UCI handwritten digits, trained in fp32, fp16, bf16, fp8 (Transformer
// Engine's delayed scaling) or MXFP8, with or without loss scaling — mixprec's operations in a
// training loop on one precision_session (parameters, gradients, SGD, loss scaling).
//
//   train_digits --precision fp16 --scaling dynamic      one run, a line per epoch
//   train_digits --compare --json results.json --svg curves.svg    every recipe, 3 seeds
//   train_digits --precision fp16 --checkpoint c.amp --save-after 50    then: --resume c.amp
//                                                        a resumed run ends with the same
//                                                        parameters crc32 as the whole one
//   train_digits --benchmark --hidden 512 --layers 2 --batch 256 --steps 200 --precision bf16
//                                                        median ms per optimizer step
//   train_digits --schedule 5:bf16,12:fp16 --fallback 3:bf16
//                                                        fp32, bf16 after 5 epochs, fp16 after 12;
//                                                        bf16 after 3 skipped steps in a row
//   train_digits --precision fp8 --override first:bf16,last:bf16
//                                                        fp8 with the first and last layers in bf16
//   mpirun -np 2 train_digits --data-parallel --reduce-dtype bf16
//                                                        each process trains on its half of every
//                                                        batch, gradients all-reduced in bf16
//   train_digits --shards 2                              one process computing what 2 ranks do
//                                                        with --reduce-dtype fp32, bit for bit
//
// By default the loss is multiplied by 2^-18 and the learning rate by 2^18 (--gradient-shift):
// the float32 run is the same, bit for bit, as on the plain loss, while every gradient is 2^18
// times smaller — the regime where float16 gradients underflow and loss scaling restores them.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#if MIXPREC_EXAMPLE_MPI
#include <mixprec/distributed/mpi_process_group.hpp>
#endif

#include "common/command_line.hpp"
#include "common/digits.hpp"
#include "common/files.hpp"
#include "common/svg_chart.hpp"
#include "common/table.hpp"
#include "training.hpp"

namespace {

using namespace train_digits;
using namespace mixprec_example;

// What --compare runs: the baseline, fp16 without and with each scaling policy, bf16, fp8, MXFP8,
// fp8 blocks (1×128 / 128×128), NVFP4 and torchao's row-wise fp8.
const recipe compared_recipes[] = {
    {precision::fp32, scaling::none},    {precision::fp16, scaling::none},        {precision::fp16, scaling::fixed},
    {precision::fp16, scaling::dynamic}, {precision::fp16, scaling::hysteresis},  {precision::bf16, scaling::none},
    {precision::fp8, scaling::none},     {precision::mxfp8, scaling::none},       {precision::fp8_block, scaling::none},
    {precision::nvfp4, scaling::none},   {precision::fp8_rowwise, scaling::none}, {precision::mxfp4, scaling::none},
};

precision parse_precision(const std::string& name) {
  for (precision p : {precision::fp32, precision::fp16, precision::bf16, precision::fp8, precision::mxfp8,
                      precision::fp8_block, precision::nvfp4, precision::fp8_rowwise, precision::mxfp4}) {
    if (name == to_string(p)) return p;
  }
  throw usage_error("unknown precision '" + name + "'");
}
scaling parse_scaling(const std::string& name) {
  for (scaling s : {scaling::none, scaling::fixed, scaling::dynamic, scaling::hysteresis}) {
    if (name == to_string(s)) return s;
  }
  throw usage_error("unknown scaling '" + name + "'");
}

// "bf16" or "fp16/dynamic": a precision and its scaling (the precision's default when omitted).
recipe parse_recipe_spec(const std::string& spec) {
  const std::size_t slash = spec.find('/');
  recipe r;
  r.p = parse_precision(spec.substr(0, slash));
  r.s = slash == std::string::npos ? (r.p == precision::fp16 ? scaling::dynamic : scaling::none)
                                   : parse_scaling(spec.substr(slash + 1));
  return r;
}
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}
// A whole number 0 ... limit written in decimal digits.
long parse_count(const std::string& text, const std::string& what, long limit) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    throw usage_error(what + " '" + text + "' is not a whole number");
  }
  const long value = std::stol(text);
  if (value > limit) throw usage_error(what + " is " + text + "; allowed: 0 to " + std::to_string(limit));
  return value;
}

std::string bytes_text(std::size_t bytes) { return format_number(static_cast<double>(bytes) / 1024.0, 3) + " KiB"; }

// The mean, min and max of f over the runs of one recipe (one run per seed).
struct spread {
  double mean = 0, min = 0, max = 0;
};
template <class F>
spread over_seeds(const std::vector<run_result>& seeds, F f) {
  spread s{0, f(seeds.front()), f(seeds.front())};
  for (const run_result& run : seeds) {
    const double v = f(run);
    s.mean += v / static_cast<double>(seeds.size());
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  return s;
}

// One row per recipe: each figure the mean over the seeds, test accuracy and time with min and max.
text_table comparison_table(const std::vector<std::vector<run_result>>& by_recipe) {
  text_table table({{"precision", "precision", column_kind::text},
                    {"scaling", "scaling", column_kind::text},
                    {"seeds", "seeds"},
                    {"test_accuracy", "test acc. %"},
                    {"test_accuracy_min", "min"},
                    {"test_accuracy_max", "max"},
                    {"train_accuracy", "train acc. %"},
                    {"best_loss", "best loss"},
                    {"skipped_steps", "skipped"},
                    {"final_scale", "final scale"},
                    {"flushed_gradients", "grads flushed", column_kind::text},
                    {"seconds", "time s"},
                    {"seconds_min", "min"},
                    {"seconds_max", "max"},
                    {"weight_memory", "weights (master + casts)", column_kind::text},
                    {"activation_memory", "activations / batch", column_kind::text}});
  for (const std::vector<run_result>& seeds : by_recipe) {
    const run_result& first = seeds.front();
    const auto last = [](const run_result& run) -> const epoch_record& { return run.epochs.back(); };
    const spread test = over_seeds(seeds, [&](const run_result& run) { return 100 * last(run).test_accuracy; });
    const spread seconds = over_seeds(seeds, [&](const run_result& run) { return last(run).seconds; });
    const bool flush_measured = first.r.p == precision::fp16 || first.r.p == precision::bf16;
    const double flushed = over_seeds(seeds, [&](const run_result& run) { return last(run).flushed; }).mean;
    table.add_row(
        {to_string(first.r.p), to_string(first.r.s), std::to_string(seeds.size()), format_number(test.mean, 4),
         format_number(test.min, 4), format_number(test.max, 4),
         format_number(over_seeds(seeds, [&](const run_result& run) { return 100 * last(run).train_accuracy; }).mean,
                       4),
         format_number(over_seeds(seeds, [](const run_result& run) { return run.best_loss(); }).mean, 4),
         format_number(
             over_seeds(seeds, [&](const run_result& run) { return static_cast<double>(last(run).skipped); }).mean, 4),
         format_number(
             over_seeds(seeds, [&](const run_result& run) { return static_cast<double>(last(run).scale); }).mean, 6),
         flush_measured ? format_percent(flushed) : "-", format_number(seconds.mean, 3), format_number(seconds.min, 3),
         format_number(seconds.max, 3), bytes_text(first.master_bytes) + " + " + bytes_text(first.cast_bytes),
         bytes_text(first.activation_bytes)});
  }
  return table;
}

// One row per step; the last two columns give each layer's percentage (fc1 first, separated by
// spaces; empty where the run does not measure it): weight gradients flushed (fp16/bf16), output
// gradients flushed by fp8 quantisation (fp8).
std::string curves_csv(const std::vector<run_result>& runs) {
  const auto percents = [](const std::vector<double>& shares) {
    std::string out;
    for (const double share : shares) out += (out.empty() ? "" : " ") + format_number(100 * share, 4);
    return out;
  };
  std::string text = "recipe,step,loss,scale,skipped,flushed_percent,fp8_underflow_percent\n";
  for (const run_result& run : runs) {
    for (const step_record& s : run.steps) {
      text += run.r.name() + "," + std::to_string(s.step) + "," + format_number(s.loss, 6) + "," +
              format_number(s.scale, 8) + "," + (s.skipped ? "1" : "0") + "," + percents(s.layer_flushed) + "," +
              percents(s.layer_fp8_underflow) + "\n";
    }
  }
  return text;
}

// Up to four panels: the loss; the loss scale, each skipped step marked and labelled with the
// parameter whose gradient was the first inf/NaN; the share of each layer's weight gradients
// that fp16/bf16 flushed to zero; and the share of each fp8 layer's output gradient that its e5m2
// quantisation flushed (the runs that measure them).
std::string curves_svg(const std::vector<run_result>& runs) {
  line_chart loss{
      "Training loss per step", {"step", axis_scale::linear}, {"cross-entropy", axis_scale::logarithmic}, {}};
  line_chart scale{"Loss scale per step; skipped steps marked with the first non-finite gradient",
                   {"step", axis_scale::linear},
                   {"scale", axis_scale::logarithmic},
                   {}};
  line_chart flushed{"Weight gradients flushed to zero, per layer",
                     {"step", axis_scale::linear},
                     {"% of the float32 backward's nonzero values", axis_scale::linear},
                     {}};
  line_chart underflow{"fp8: output gradients (e5m2) flushed to zero by their quantisation, per layer",
                       {"step", axis_scale::linear},
                       {"% of dy's nonzero values (TE's underflows%)", axis_scale::linear},
                       {}};
  std::vector<chart_series> skips;
  for (const run_result& run : runs) {
    chart_series l{run.r.name(), {}, {}}, s{run.r.name(), {}, {}};
    chart_series skipped{"skip " + run.r.name(), {}, {}};
    skipped.points_only = true;
    std::vector<chart_series> layers, fp8_layers;
    for (const step_record& step : run.steps) {
      const auto at = static_cast<double>(step.step);
      l.x.push_back(at);
      l.y.push_back(step.loss);
      s.x.push_back(at);
      s.y.push_back(step.scale);
      if (step.skipped) {
        skipped.x.push_back(at);
        skipped.y.push_back(step.scale);
        skipped.labels.push_back(step.culprit);
      }
      for (std::size_t k = 0; k < step.layer_flushed.size(); ++k) {
        if (layers.size() <= k) layers.push_back({run.r.name() + " fc" + std::to_string(k + 1), {}, {}});
        layers[k].x.push_back(at);
        layers[k].y.push_back(100 * step.layer_flushed[k]);
      }
      for (std::size_t k = 0; k < step.layer_fp8_underflow.size(); ++k) {
        if (fp8_layers.size() <= k)
          fp8_layers.push_back({run.r.name() + " fc" + std::to_string(k + 1) + " dy", {}, {}});
        fp8_layers[k].x.push_back(at);
        fp8_layers[k].y.push_back(100 * step.layer_fp8_underflow[k]);
      }
    }
    loss.series.push_back(std::move(l));
    scale.series.push_back(std::move(s));
    if (!skipped.x.empty()) skips.push_back(std::move(skipped));
    for (chart_series& layer : layers) flushed.series.push_back(std::move(layer));
    for (chart_series& layer : fp8_layers) underflow.series.push_back(std::move(layer));
  }
  for (chart_series& s : skips) scale.series.push_back(std::move(s));
  std::vector<line_chart> panels = {loss, scale};
  if (!flushed.series.empty()) panels.push_back(flushed);
  if (!underflow.series.empty()) panels.push_back(underflow);
  return svg_figure("train_digits: UCI digits MLP 64-128-128-10", panels);
}

// --benchmark: `steps` optimizer steps of one recipe after a warm-up, on batches of one shape,
// without evaluation or diagnostics; the median, min and max time of a step (forward, backward,
// unscale and check, SGD with momentum, scaler update).
struct benchmark_settings {
  long hidden = 128, layers = 2, batch = 64, steps = 200, threads = 1;
};

int benchmark(const recipe& r, const benchmark_settings& b, const digits_split& data, std::uint64_t seed,
              const std::string& json_path) {
  if (static_cast<std::size_t>(b.batch) > data.train.size()) {
    throw usage_error("--batch " + std::to_string(b.batch) + " is larger than the " +
                      std::to_string(data.train.size()) + " training images");
  }
  mixprec::set_gemm_threads(static_cast<unsigned>(b.threads));
  mixprec::set_bulk_threads(static_cast<unsigned>(b.threads));
  training_options o;
  o.sizes.hidden = static_cast<std::size_t>(b.hidden);
  o.sizes.hidden_layers = static_cast<std::size_t>(b.layers);
  o.batch = static_cast<std::size_t>(b.batch);
  o.seed = seed;
  o.epochs = 1000000;
  o.measure_flush = false;
  o.evaluate = false;
  o.drop_last = true;
  const std::int64_t warm_up = std::max<std::int64_t>(5, b.steps / 10);
  o.max_steps = warm_up + b.steps;
  const run_result result = train(r, data, o, {});
  std::vector<double> ms;
  for (std::size_t i = static_cast<std::size_t>(warm_up); i < result.step_seconds.size(); ++i) {
    ms.push_back(1e3 * result.step_seconds[i]);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  std::printf(
      "train_digits benchmark: %s, MLP 64-%ld(x%ld)-10, batch %ld, %d thread(s): median %.4g ms per step "
      "(min %.4g, max %.4g) over %zu steps after %lld warm-up steps; activations %s per batch\n",
      r.name().c_str(), b.hidden, b.layers, b.batch, static_cast<int>(b.threads), median, ms.front(), ms.back(),
      ms.size(), static_cast<long long>(warm_up), bytes_text(result.activation_bytes).c_str());
  if (!json_path.empty()) {
    write_text_file(
        json_path,
        "{\"precision\": \"" + std::string(to_string(r.p)) + "\", \"scaling\": \"" + to_string(r.s) +
            "\", \"hidden\": " + std::to_string(b.hidden) + ", \"layers\": " + std::to_string(b.layers) +
            ", \"batch\": " + std::to_string(b.batch) + ", \"steps\": " + std::to_string(ms.size()) +
            ", \"threads\": " + std::to_string(b.threads) + ", \"ms_per_step\": " + format_number(median, 6) +
            ", \"ms_min\": " + format_number(ms.front(), 6) + ", \"ms_max\": " + format_number(ms.back(), 6) +
            ", \"activation_bytes\": " + std::to_string(result.activation_bytes) + "}\n");
  }
  return 0;
}

int run(int argc, char** argv) {
  std::string precision_name = "fp32", scaling_name, json_path, csv_path, svg_path, data_path = default_digits_path();
  long epochs = 20, seed = 1, shift = 18, seeds = 3;
  bool compare = false, quick = false, benchmark_mode = false;
  benchmark_settings bench;
  command_line options("train_digits",
                       "Trains an MLP on the UCI digits in fp32, fp16, bf16, fp8, MXFP8, fp8 blocks, NVFP4 or row-wise "
                       "fp8, with or without loss "
                       "scaling (mixprec operations on a precision_session).");
  options.choice("--precision", {"fp32", "fp16", "bf16", "fp8", "mxfp8", "fp8_block", "nvfp4", "fp8_rowwise", "mxfp4"},
                 "the recipe's precision (fp32)", precision_name);
  options.choice("--scaling", {"none", "static", "dynamic", "hysteresis"},
                 "loss scaling (dynamic for fp16, none otherwise)", scaling_name);
  options.integer("--epochs", "N", "training epochs (20; --quick: 8)", 1, 1000, epochs);
  options.integer("--seed", "S", "seed of the weights and the batch order (1)", 0, 1L << 40, seed);
  options.integer("--gradient-shift", "N", "loss x 2^-N, learning rate x 2^N (18; 0: the plain loss)", 0, 60, shift);
  options.flag("--compare", "run every recipe at several seeds and print them side by side", compare);
  options.integer("--seeds", "N", "--compare: seeds per recipe, S to S+N-1 (3); the table gives mean, min, max", 1, 100,
                  seeds);
  options.flag("--quick", "8 epochs (for tests)", quick);
  options.value("--json", "FILE", "write the comparison table as JSON", json_path);
  options.value("--csv", "FILE", "write the loss and scale of every step as CSV", csv_path);
  options.value("--svg", "FILE", "write loss and loss-scale curves as an SVG chart", svg_path);
  options.value("--data", "FILE", "the digits CSV (the repository's data/digits/digits.csv)", data_path);
  std::string checkpoint, resume;
  long save_after = 0;
  options.value("--checkpoint", "FILE", "write the session's checkpoint to FILE after --save-after steps", checkpoint);
  options.integer("--save-after", "N", "the optimizer step after which --checkpoint is written", 1, 1L << 40,
                  save_after);
  options.value("--resume", "FILE", "load a checkpoint first and continue from its step (one recipe)", resume);
  std::string cast_model;
  options.choice("--cast-model", {"nearest", "stochastic", "kahan"},
                 "fp16/bf16: keep the parameters in that dtype, no fp32 masters, each update rounded to nearest, "
                 "stochastically or Kahan-summed (off: fp32 parameters)",
                 cast_model);
  long static_scale_log2 = 16;
  options.integer("--static-scale-log2", "N", "static scaling's scale, 2^N (16)", 0, 100, static_scale_log2);
  std::string schedule_spec, fallback_spec;
  options.value("--schedule", "E:P[/S],...",
                "change the recipe as training goes: from epoch E on (after E epochs), precision P with scaling S "
                "(for example 5:bf16,10:fp16/dynamic)",
                schedule_spec);
  options.value("--fallback", "N:P[/S]", "after N skipped steps in a row, switch to precision P with scaling S (once)",
                fallback_spec);
  std::string overrides;
  options.value("--override", "RULES",
                "per-layer precision: SELECTOR:PRECISION rules, the selector first, last, N, N-M (layers 0, 1, ... "
                "are fc1, fc2, ...), a name pattern or @OPERATION, the precision fp32, fp16, bf16 or fp8 (for "
                "example first:bf16,last:bf16)",
                overrides);
  bool data_parallel = false;
  long shards = 1, weight_check = 0;
  std::string reduce_dtype;
  options.flag("--data-parallel",
               "under mpirun: each process trains on its shard of every batch and the session all-reduces the "
               "gradients (a build with MPI)",
               data_parallel);
  options.integer("--shards", "P",
                  "one process: cut every batch into P shards (a power of two), each a micro-batch whose loss "
                  "gradient is divided by P: what --data-parallel over P processes computes with --reduce-dtype "
                  "fp32 (1)",
                  1, 64, shards);
  options.choice("--reduce-dtype", {"fp32", "bf16", "fp16", "e4m3", "e5m2"},
                 "--data-parallel: the dtype the gradients travel in, summed in float (fp32)", reduce_dtype);
  options.integer("--weight-check-every", "N", "--data-parallel: compare the processes' parameters every N steps (0)",
                  0, 1L << 40, weight_check);
  options.flag("--benchmark", "time optimizer steps of one recipe: median ms per step (--json: as JSON)",
               benchmark_mode);
  options.integer("--hidden", "H", "benchmark: units per hidden layer (128)", 1, 65536, bench.hidden);
  options.integer("--layers", "L", "benchmark: hidden layers (2)", 0, 64, bench.layers);
  options.integer("--batch", "B", "benchmark: images per batch (64)", 1, 1 << 20, bench.batch);
  options.integer("--steps", "N", "benchmark: timed optimizer steps, after a warm-up of max(5, N/10) (200)", 1, 1000000,
                  bench.steps);
  options.integer("--threads", "T", "benchmark: threads for gemm and bulk conversion (1)", 1, 1024, bench.threads);
  if (!options.parse(argc, argv)) return 0;

  training_options o;
  o.epochs = quick && epochs == 20 ? 8 : static_cast<int>(epochs);
  o.seed = static_cast<std::uint64_t>(seed);
  o.gradient_shift = static_cast<int>(shift);
  o.static_scale = std::ldexp(1.0f, static_cast<int>(static_scale_log2));
  o.progress = isatty(STDERR_FILENO) != 0;
  if ((checkpoint.empty()) != (save_after == 0)) throw usage_error("--checkpoint and --save-after go together");
  if ((!checkpoint.empty() || !resume.empty()) && (compare || benchmark_mode)) {
    throw usage_error("--checkpoint and --resume train one recipe; they do not go with --compare or --benchmark");
  }
  o.checkpoint = checkpoint;
  o.save_after = save_after;
  o.resume = resume;
  o.cast_model = cast_model;
  if (!cast_model.empty() && compare)
    throw usage_error("--cast-model trains one recipe; it does not go with --compare");
  if (!schedule_spec.empty() || !fallback_spec.empty()) {
    if (compare || benchmark_mode || !cast_model.empty()) {
      throw usage_error(
          "--schedule and --fallback change one run's recipe; they do not go with --compare, "
          "--benchmark or --cast-model");
    }
    for (const std::string& item : split_list(schedule_spec)) {
      const std::size_t colon = item.find(':');
      if (colon == std::string::npos) throw usage_error("--schedule item '" + item + "' is not E:P[/S]");
      o.schedule.push_back({static_cast<int>(parse_count(item.substr(0, colon), "--schedule epoch", 1000)),
                            parse_recipe_spec(item.substr(colon + 1))});
    }
    if (!fallback_spec.empty()) {
      const std::size_t colon = fallback_spec.find(':');
      if (colon == std::string::npos) throw usage_error("--fallback '" + fallback_spec + "' is not N:P[/S]");
      o.fallback_after_skips = static_cast<int>(parse_count(fallback_spec.substr(0, colon), "--fallback N", 1000000));
      if (o.fallback_after_skips == 0) throw usage_error("--fallback N is 0; allowed: 1 to 1000000");
      o.fallback = parse_recipe_spec(fallback_spec.substr(colon + 1));
    }
  }
  if (!overrides.empty()) {
    if (compare || benchmark_mode) {
      throw usage_error("--override changes one run's recipe; it does not go with --compare or --benchmark");
    }
    // Checked against the model's layers now, before any output (the session checks them again).
    std::vector<std::string> names;
    for (std::size_t l = 1; l <= o.sizes.linear_layers(); ++l) {
      for (const char* part : {".weight", ".bias"}) names.push_back("fc" + std::to_string(l) + part);
    }
    const mixprec::precision_overrides rules = mixprec::parse_overrides(overrides);
    mixprec::resolve_overrides(rules, names, mixprec::precision_mode::float32);
    mixprec::check_operation_rules(rules, mixprec::precision_session::known_operations());
    o.overrides = overrides;
  }
  if (data_parallel || shards > 1) {
    if (compare || benchmark_mode || !checkpoint.empty() || !resume.empty()) {
      throw usage_error(
          "--data-parallel and --shards train one recipe; they do not go with --compare, --benchmark, "
          "--checkpoint or --resume");
    }
    if (data_parallel && shards > 1) {
      throw usage_error(
          "--shards is the one-process equivalent of --data-parallel; under mpirun the processes are "
          "the shards");
    }
    if ((shards & (shards - 1)) != 0) {
      throw usage_error("--shards is " + std::to_string(shards) +
                        "; allowed: a power of two (1, 2, 4, ..., 64), for which dividing by it is exact");
    }
  }
  if (!data_parallel && (!reduce_dtype.empty() || weight_check > 0)) {
    throw usage_error("--reduce-dtype and --weight-check-every set the all-reduce of --data-parallel");
  }
  if (data_parallel) {
#if MIXPREC_EXAMPLE_MPI
    o.group = std::make_shared<mixprec::mpi_process_group>(MPI_COMM_WORLD);
    o.shards = static_cast<std::size_t>(o.group->size());
    o.weight_check_interval = weight_check;
    const std::vector<std::pair<std::string, mixprec::dtype>> names = {{"fp32", mixprec::dtype::float32},
                                                                       {"bf16", mixprec::dtype::bfloat16},
                                                                       {"fp16", mixprec::dtype::float16},
                                                                       {"e4m3", mixprec::dtype::float8_e4m3fn},
                                                                       {"e5m2", mixprec::dtype::float8_e5m2}};
    for (const auto& [name, d] : names) o.reduce_dtype = name == reduce_dtype ? d : o.reduce_dtype;
    if (o.group->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) {
      throw std::runtime_error("rank " + std::to_string(o.group->rank()) + ": cannot silence its standard output");
    }
#else
    throw usage_error("--data-parallel needs MPI, and this train_digits was built without it (Debian: libopenmpi-dev)");
#endif
  } else {
    o.shards = static_cast<std::size_t>(shards);
  }
  const digits_split data = split_digits(load_digits(data_path));
  if (benchmark_mode) {
    if (compare) throw usage_error("--benchmark times one recipe; it does not go with --compare");
    recipe r;
    r.p = parse_precision(precision_name);
    r.s = scaling_name.empty() ? (r.p == precision::fp16 ? scaling::dynamic : scaling::none)
                               : parse_scaling(scaling_name);
    return benchmark(r, bench, data, o.seed, json_path);
  }
  std::vector<recipe> recipes;
  if (compare) {
    recipes.assign(std::begin(compared_recipes), std::end(compared_recipes));
  } else {
    recipe r;
    r.p = parse_precision(precision_name);
    r.s = scaling_name.empty() ? (r.p == precision::fp16 ? scaling::dynamic : scaling::none)
                               : parse_scaling(scaling_name);
    recipes.push_back(r);
  }
  std::printf(
      "UCI digits: %zu training and %zu test images; MLP 64-128-128-10, ReLU, SGD momentum 0.9, batch %zu, "
      "%d epochs, seed %llu%s\n",
      data.train.size(), data.test.size(), o.batch, o.epochs, static_cast<unsigned long long>(o.seed),
      compare && seeds > 1 ? (" to " + std::to_string(o.seed + static_cast<std::uint64_t>(seeds) - 1)).c_str() : "");
  for (const training_options::scheduled& c : o.schedule) {
    std::printf("From epoch %d on: %s\n", c.first + 1, c.r.name().c_str());
  }
  if (o.fallback_after_skips > 0) {
    std::printf("After %d skipped steps in a row: %s\n", o.fallback_after_skips, o.fallback.name().c_str());
  }
  if (!o.overrides.empty()) std::printf("Layer overrides: %s\n", o.overrides.c_str());
  if (o.group) {
    std::printf(
        "Data parallel: %d processes, each on its shard of every batch; gradients all-reduced in %s (their mean, "
        "summed in float in rank order)%s\n",
        o.group->size(), reduce_dtype.empty() ? "fp32" : reduce_dtype.c_str(),
        weight_check > 0 ? (", parameters compared every " + std::to_string(weight_check) + " steps").c_str() : "");
  } else if (o.shards > 1) {
    std::printf(
        "Shards: every batch cut into %zu, each a micro-batch with its loss gradient divided by %zu (what "
        "--data-parallel over %zu processes computes with --reduce-dtype fp32)\n",
        o.shards, o.shards, o.shards);
  }
  if (!o.cast_model.empty()) {
    std::printf("Parameters kept in %s without fp32 masters, each update %s\n", precision_name.c_str(),
                o.cast_model == "kahan" ? "Kahan-summed" : (o.cast_model + " rounded").c_str());
  }
  if (o.gradient_shift > 0) {
    std::printf(
        "Loss x 2^-%d, learning rate x 2^%d: the fp32 run is unchanged, every gradient is 2^%d times smaller "
        "(the regime where fp16 needs loss scaling; --gradient-shift 0 for the plain loss)\n",
        o.gradient_shift, o.gradient_shift, o.gradient_shift);
  }
  // --compare: every recipe at seeds S, S+1, ... (--seeds); the curves are those of the first seed.
  const long seed_count = compare ? seeds : 1;
  std::vector<std::vector<run_result>> by_recipe;
  std::vector<run_result> runs;
  for (const recipe& r : recipes) {
    by_recipe.emplace_back();
    for (long k = 0; k < seed_count; ++k) {
      training_options seeded = o;
      seeded.seed = o.seed + static_cast<std::uint64_t>(k);
      std::printf("\n%s%s\n", r.name().c_str(),
                  seed_count > 1 ? (", seed " + std::to_string(seeded.seed)).c_str() : "");
      by_recipe.back().push_back(train(r, data, seeded, [&](const epoch_record& e) {
        if (compare && e.epoch != o.epochs) return;
        std::printf("  epoch %3d  loss %.4f  train %.2f%%  test %.2f%%  scale %g  skipped %lld  %.2f s%s\n", e.epoch,
                    e.loss, 100 * e.train_accuracy, 100 * e.test_accuracy, static_cast<double>(e.scale),
                    static_cast<long long>(e.skipped), e.seconds,
                    e.flushed > 0 ? ("  flushed " + format_percent(e.flushed)).c_str() : "");
        std::fflush(stdout);
      }));
    }
    runs.push_back(by_recipe.back().front());
    if (!compare) {
      const run_result& run = runs.back();
      if (run.resumed_steps > 0) {
        std::printf("  resumed from %s after step %lld\n", o.resume.c_str(), static_cast<long long>(run.resumed_steps));
      }
      if (!o.checkpoint.empty()) std::printf("  checkpoint after step %ld: %s\n", save_after, o.checkpoint.c_str());
      std::printf("  parameters crc32 %08x\n", static_cast<unsigned>(run.parameters_crc));
      if (o.shards > 1) {
        std::printf("  trajectory crc32 %08x (the parameters after every step)\n",
                    static_cast<unsigned>(run.trajectory_crc));
      }
    }
  }
  const text_table table = comparison_table(by_recipe);
  if (compare) std::printf("\n%s", to_aligned_text(table).c_str());
  if (!json_path.empty()) write_text_file(json_path, to_json(table) + "\n");
  if (!csv_path.empty()) write_text_file(csv_path, curves_csv(runs));
  if (!svg_path.empty()) write_text_file(svg_path, curves_svg(runs));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
#if MIXPREC_EXAMPLE_MPI
  // --data-parallel: MPI started first and finished last; a process that fails ends the whole job
  // (the others would wait in a collective for ever).
  if (std::any_of(argv + 1, argv + argc, [](const char* a) { return std::string(a) == "--data-parallel"; })) {
    MPI_Init(&argc, &argv);
    const int status = run_example("train_digits", [&] { return run(argc, argv); });
    if (status != 0) MPI_Abort(MPI_COMM_WORLD, status);
    MPI_Finalize();
    return 0;
  }
#endif
  return run_example("train_digits", [&] { return run(argc, argv); });
}
