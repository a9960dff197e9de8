// loss_scaler_tour: the five loss-scaling policies of mixprec meet the same run, step by step.
//
// Why loss scaling: fp16 flushes values below 2^-24 (6e-8) to zero, and many gradients are that
// small.  Multiplying the loss by a scale S before the backward pass multiplies every gradient by
// S and lifts them into fp16's range; unscale() divides them back in float before the optimizer
// uses them.  Too large an S makes some gradient overflow to inf: that step must be skipped and S
// lowered.  How S moves is the policy.
//
// No model is trained here: the run is a script that says at which steps the backward pass
// produced inf (in a real run that depends on the scale; fixing it lets the rules be compared
// side by side).  The loop in replay() is the shape of a real training step.
//
//   loss_scaler_tour               the timeline, a summary and each rule, as aligned text
//   loss_scaler_tour --markdown    the same as Markdown
//   loss_scaler_tour --csv         the timeline only, as CSV
#include <mixprec/scaling/scaling.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/command_line.hpp"
#include "common/report.hpp"

using namespace mixprec_example;

namespace {

// One character per step: '.' the gradients came out finite, 'x' some gradient was inf or NaN.
// A clean start, an isolated overflow, a burst of three, two overflows with one clean step
// between them, and a long clean stretch in which the scales grow back.
const std::string script = "....x.....xxx.......x.x..........";

// The same small numbers for every dynamic policy, so that growth shows within a few steps
// (real runs use the defaults: growth every 2000 clean steps for dynamic_scaling, 1000 for
// hysteresis_scaling, and a start at 65536).
constexpr float start_scale = 1024;
constexpr int growth_interval = 4;

// What one policy did at one step.
struct step_record {
  float scale;           // the scale the step's loss was multiplied by
  bool stepped;          // whether the optimizer step ran
  long hysteresis_left;  // overflows the hysteresis policies may still absorb before a back-off
};

// The training loop, as an fp16 run with mixprec writes it; only the gradients are invented.
template <class Policy>
std::vector<step_record> replay(const Policy& policy) {
  mixprec::loss_scaler<Policy> scaler(policy);
  std::vector<step_record> records;
  for (const char step : script) {
    const float scale = scaler.get_scale();
    // backward(scaler.scale(loss)) would produce gradients multiplied by the scale:
    const bool overflowed = step == 'x';
    std::vector<float> gradients = {0.25f * scale, -1.5e-3f * scale, overflowed ? INFINITY : 4e-6f * scale};

    scaler.unscale(gradients.data(), gradients.size());  // divides by the scale; notes inf/NaN
    const bool stepped = scaler.step([&] { /* optimizer.step(gradients) goes here */ });
    scaler.update();  // the policy's rule: the scale for the next step

    records.push_back({scale, stepped, static_cast<long>(scaler.state().hysteresis_tracker)});
  }
  return records;
}

mixprec::hysteresis_scaling hysteresis_policy(mixprec::hysteresis_scaling::rule_set rules) {
  mixprec::hysteresis_scaling policy;
  policy.rules = rules;
  policy.init_scale = start_scale;
  policy.growth_interval = growth_interval;
  policy.hysteresis = 2;
  return policy;
}

struct policy_run {
  std::string column;       // short name for the timeline
  std::string declaration;  // the policy and its options
  bool has_hysteresis;      // whether the h column means something
  std::vector<step_record> steps;
};

std::vector<policy_run> run_every_policy() {
  using rules = mixprec::hysteresis_scaling::rule_set;
  const std::string start = format_number(start_scale, 6), interval = std::to_string(growth_interval);
  const std::string hysteresis_options =
      ", init_scale = " + start + ", growth_interval = " + interval + ", hysteresis = 2";
  std::vector<policy_run> runs;
  runs.push_back({"static", "static_scaling{" + start + "}", false, replay(mixprec::static_scaling{start_scale})});
  runs.push_back({"dynamic",
                  "dynamic_scaling{" + start + ", 2, 0.5, " + interval +
                      "}: init_scale, growth_factor, backoff_factor, growth_interval",
                  false, replay(mixprec::dynamic_scaling{start_scale, 2, 0.5, growth_interval})});
  runs.push_back({"deepspeed", "hysteresis_scaling, rules = deepspeed" + hysteresis_options, true,
                  replay(hysteresis_policy(rules::deepspeed))});
  runs.push_back({"megatron", "hysteresis_scaling, rules = megatron" + hysteresis_options, true,
                  replay(hysteresis_policy(rules::megatron))});
  runs.push_back({"none", "no_scaling{}", false, replay(mixprec::no_scaling{})});
  return runs;
}

report_section timeline(const std::vector<policy_run>& runs) {
  std::vector<column> columns = {{"step", "step"}, {"gradients", "gradients", column_kind::text}};
  for (const policy_run& run : runs) {
    columns.push_back({run.column, run.column});
    if (run.has_hysteresis) columns.push_back({run.column + "_hysteresis_left", "h"});
  }
  text_table table(columns);
  for (std::size_t i = 0; i < script.size(); ++i) {
    std::vector<std::string> row = {std::to_string(i + 1), script[i] == 'x' ? "inf: skipped" : "finite"};
    for (const policy_run& run : runs) {
      row.push_back(format_number(run.steps[i].scale, 6));
      if (run.has_hysteresis) row.push_back(std::to_string(run.steps[i].hysteresis_left));
    }
    table.add_row(row);
  }
  return {"timeline", "The scale at each step (script: " + script + ")", table,
          "Each cell is the scale the step's loss was multiplied by; a change shows on the next row. h: the "
          "hysteresis tracker after the step (overflows still absorbed before a back-off). Every policy skips the "
          "optimizer step on inf/NaN, no_scaling included."};
}

// The policies as replay() received them.
report_section policies(const std::vector<policy_run>& runs) {
  text_table table({{"column", "column", column_kind::text}, {"policy", "policy", column_kind::text}});
  for (const policy_run& run : runs) table.add_row({run.column, run.declaration});
  return {"policies", "The policies", table,
          "The scales start at " + format_number(start_scale, 6) + " and grow every " +
              std::to_string(growth_interval) +
              " clean steps so that the tour is short; the defaults are 65536 and 2000 (dynamic_scaling) or 1000 "
              "(hysteresis_scaling)."};
}

// The steps after which a policy's scale went up (or down): the scale of step i + 1 against i's.
std::string steps_where(const std::vector<step_record>& steps, bool grew) {
  std::string list;
  for (std::size_t i = 0; i + 1 < steps.size(); ++i) {
    const bool changed = grew ? steps[i + 1].scale > steps[i].scale : steps[i + 1].scale < steps[i].scale;
    if (changed) list += (list.empty() ? "" : " ") + std::to_string(i + 1);
  }
  return list.empty() ? "-" : list;
}

report_section summary(const std::vector<policy_run>& runs) {
  text_table table({{"policy", "policy", column_kind::text},
                    {"skipped_steps", "skipped steps"},
                    {"grew_after", "grew after steps", column_kind::text},
                    {"backed_off_after", "backed off after steps", column_kind::text},
                    {"final_scale", "final scale"}});
  for (const policy_run& run : runs) {
    int skipped = 0;
    for (const step_record& step : run.steps) skipped += step.stepped ? 0 : 1;
    table.add_row({run.column, std::to_string(skipped), steps_where(run.steps, true), steps_where(run.steps, false),
                   format_number(run.steps.back().scale, 6)});
  }
  return {"summary", "What each policy did", table, ""};
}

// Each rule in words; docs/scaling.md has the exact rules and the reference code they follow.
struct rule_explained {
  const char* policy;
  const char* follows;
  const char* rule;
};

const rule_explained rules[] = {
    {"static_scaling{scale}", "",
     "The scale never moves. Overflowing steps are skipped, so a scale that is too large skips every step."},
    {"dynamic_scaling{init_scale, growth_factor, backoff_factor, growth_interval}", "PyTorch GradScaler",
     "An overflow multiplies the scale by backoff_factor (0.5) at once and restarts the count of clean steps; "
     "growth_interval clean steps in a row (2000 by default) multiply it by growth_factor (2)."},
    {"hysteresis_scaling, rules deepspeed", "DeepSpeed DynamicLossScaler",
     "While h is above 1 an overflow only takes one from h; at h = 1 every overflow backs off (h stays 1). The "
     "first growth after an overflow (or the start) comes after growth_interval + 1 clean steps, one step later "
     "than dynamic_scaling's, and the next ones every growth_interval clean steps. Only growth refills h."},
    {"hysteresis_scaling, rules megatron", "Megatron-LM DynamicGradScaler",
     "Every overflow takes one from h and restarts the count of clean steps; once h is 0 or less every overflow "
     "backs off (h keeps falling below 0). growth_interval clean steps in a row grow the scale, as for "
     "dynamic_scaling, and refill h: the only refill."},
    {"no_scaling", "",
     "The scale stays 1: the bf16 recipe, whose range is float's. Steps with inf/NaN gradients are still skipped."},
};

const char* const advice =
    "Which to use: fp16 training: dynamic_scaling. bf16: no_scaling. Reproducing a DeepSpeed or Megatron-LM "
    "run: hysteresis_scaling with its rules (the same scales, bit for bit).";

std::string explain_rules(table_style style) {
  const bool markdown = style == table_style::markdown;
  std::string text = markdown ? "### The rules\n\n" : "The rules\n=========\n";
  for (const rule_explained& r : rules) {
    const std::string follows = *r.follows ? std::string(" (") + r.follows + ")" : "";
    text += markdown ? "- `" + std::string(r.policy) + "`" + follows + ": " + r.rule + "\n"
                     : std::string(r.policy) + follows + "\n" + word_wrapped(r.rule, 100, "  ");
  }
  return text + "\n" + (markdown ? std::string(advice) + "\n" : word_wrapped(advice, 100));
}

int run(int argc, char** argv) {
  bool markdown = false, csv = false;
  command_line options("loss_scaler_tour",
                       "Shows how each loss-scaling policy moves the scale through the same scripted run.");
  options.flag("--markdown", "print Markdown", markdown);
  options.flag("--csv", "print the timeline only, as CSV", csv);
  if (!options.parse(argc, argv)) return 0;
  if (markdown && csv) throw usage_error("--markdown and --csv exclude each other");

  const std::vector<policy_run> runs = run_every_policy();
  if (csv) {
    std::fputs(to_csv(timeline(runs).table).c_str(), stdout);
    return 0;
  }
  const table_style style = markdown ? table_style::markdown : table_style::aligned;
  std::fputs(render_report({policies(runs), timeline(runs), summary(runs)}, style).c_str(), stdout);
  std::fputs(("\n" + explain_rules(style)).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_example("loss_scaler_tour", [&] { return run(argc, argv); });
}
