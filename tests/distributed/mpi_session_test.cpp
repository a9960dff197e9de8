// Data-parallel training through precision_session and mpi_process_group (issue 19, item 3),
// under mpirun -np 2 and -np 4 (tests/distributed/CMakeLists.txt).  Each rank trains a replica on
// its own gradients; every rank also knows every rank's gradients, so it can train the
// single-process equivalent alone:
//
//   - float32 communication: every rank's parameters after every step equal, bit for bit, those
//     of one session (no group) whose micro-batch m adds rank m's gradient times 1/p: the ranks'
//     gradients summed in rank order then divided by p, as the all-reduce does (the world sizes
//     are powers of two, so the 1/p commutes with every rounding of these normal values);
//   - bfloat16 and e4m3 communication: the replicas stay bit-identical (check_replicas every 3
//     steps passes) and close to the float32 run;
//   - an inf on one rank at one step under dynamic loss scaling: every rank skips that step and
//     halves its scale, and the step reports found_inf without a culprit;
//   - a parameter changed on one rank: check_replicas throws replica_mismatch_error on every
//     rank, naming the parameter; different registrations: invalid_argument on every rank;
//   - fp8 layers: every rank's delayed-scaling scales are those of the largest rank's amaxes.
//
// Each rank counts its failures; the counts are summed and every rank exits 1 if any failed.
#include <mixprec/distributed/mpi_process_group.hpp>
#include <mixprec/session/session.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mpi_checks.hpp"

using namespace mixprec;
using namespace mpi_checks;

namespace {

constexpr std::size_t weights = 300, biases = 7;

// Rank r's target at step t: what its shard of the data pulls the parameters towards.
std::vector<float> target_of(int r, int t, std::size_t n) {
  std::mt19937 random(static_cast<unsigned>(1000 * t + 17 * r + static_cast<int>(n)));
  std::vector<float> out(n);
  for (float& x : out)
    x = std::ldexp(1.0f + static_cast<float>(random() % 1024) / 1024.0f, static_cast<int>(random() % 9) - 4);
  return out;
}

// The gradient of 0.5 · |p - target|² at p, scaled by the loss scale, times `factor`.
matrix gradient_of(const parameter& p, const std::vector<float>& target, float scale, float factor) {
  const matrix& v = p.value();
  matrix g(dtype::float32, v.rows(), v.cols());
  for (std::size_t i = 0; i < target.size(); ++i) {
    g.data<float>()[i] = ((v.data<float>()[i] - target[i]) * scale) * factor;
  }
  return g;
}

struct replica {
  parameter w{matrix(dtype::float32, 1, weights), "fc.weight"};
  parameter b{matrix(dtype::float32, 1, biases), "fc.bias"};
  precision_session amp;

  explicit replica(const recipe& r) : amp(r) {
    for (std::size_t i = 0; i < weights; ++i) {
      w.modify([&](matrix& m) { m.data<float>()[i] = 0.25f * static_cast<float>(i % 13) - 1.0f; });
    }
    amp.add_parameter(w);
    amp.add_parameter(b);
    optim::sgd_options o;
    o.lr = 0.125f;
    o.momentum = 0.5f;
    amp.use_optimizer(optim::sgd(o));
  }

  // One step on rank `r`'s gradients (a group reduces them), or, with r < 0, on every rank's
  // gradients as micro-batches (the single-process equivalent).  `poison` plants an inf.
  step_result step(int r, int t, bool poison = false) {
    const int micro = r < 0 ? world : 1;
    return amp.train_step([] { return 1.0f; },
                          [&](const backward_context& c) {
                            const int shard = r < 0 ? static_cast<int>(c.micro_batch) : r;
                            const float factor = r < 0 ? 1.0f / static_cast<float>(world) : 1.0f;
                            matrix gw = gradient_of(w, target_of(shard, t, weights), c.loss_gradient, factor);
                            if (poison) gw.data<float>()[weights / 2] = std::numeric_limits<float>::infinity();
                            amp.accumulate_gradient(w, gw);
                            amp.accumulate_gradient(
                                b, gradient_of(b, target_of(shard, t, biases), c.loss_gradient, factor));
                          },
                          micro);
  }
};

bool same_bits(const parameter& a, const parameter& b) {
  return a.value().bytes() == b.value().bytes() &&
         std::memcmp(a.value().raw_data(), b.value().raw_data(), a.value().bytes()) == 0;
}

void float32_matches_the_single_process_sum() {
  recipe r = parse_recipe("recipe=fp32, reduce_dtype=fp32, weight_check_interval=1");
  replica ranked(r), alone(r);
  ranked.amp.use_process_group(std::make_shared<mpi_process_group>(MPI_COMM_WORLD));
  for (int t = 0; t < 12; ++t) {
    const step_result s = ranked.step(rank, t);
    alone.step(-1, t);
    expect(!s.skipped && !s.communicated.found_inf, "fp32 step " + std::to_string(t) + " ran");
    expect(s.communicated.buckets == 1, "one bucket holds both parameters");
    expect(same_bits(ranked.w, alone.w) && same_bits(ranked.b, alone.b),
           "fp32 communication equals the single-process rank-order sum after step " + std::to_string(t));
  }
}

void low_precision_replicas_stay_identical(const char* reduce_dtype) {
  recipe r =
      parse_recipe(std::string("recipe=fp32, weight_check_interval=3, bucket_bytes=400, reduce_dtype=") + reduce_dtype);
  replica ranked(r), exact(parse_recipe("recipe=fp32, reduce_dtype=fp32"));
  ranked.amp.use_process_group(std::make_shared<mpi_process_group>(MPI_COMM_WORLD));
  exact.amp.use_process_group(std::make_shared<mpi_process_group>(MPI_COMM_WORLD));
  try {
    for (int t = 0; t < 12; ++t) {
      const step_result s = ranked.step(rank, t);
      exact.step(rank, t);
      expect(s.communicated.buckets == 4, std::string(reduce_dtype) + ": 307 floats in 4 buckets of up to 100");
    }
  } catch (const replica_mismatch_error& e) {
    expect(false, std::string(reduce_dtype) + ": " + e.what());
  }
  double worst = 0;
  for (std::size_t i = 0; i < weights; ++i) {
    const double a = ranked.w.value().data<float>()[i], e = exact.w.value().data<float>()[i];
    worst = std::max(worst, std::fabs(a - e) / std::max(1.0, std::fabs(e)));
  }
  // 12 steps of gradients rounded to 8 (bf16) or 4 (e4m3) significant bits, lr 1/8.
  const double allowed = std::string(reduce_dtype) == "bf16" ? 0.02 : 0.1;
  expect(worst <= allowed,
         std::string(reduce_dtype) + ": within " + std::to_string(allowed) + " of fp32, got " + std::to_string(worst));
}

void an_overflow_on_one_rank_skips_everywhere() {
  recipe r = parse_recipe("recipe=fp16, growth_interval=1000, reduce_dtype=bf16, weight_check_interval=1");
  replica ranked(r);
  ranked.amp.use_process_group(std::make_shared<mpi_process_group>(MPI_COMM_WORLD));
  const float initial = ranked.amp.get_scale();
  for (int t = 0; t < 5; ++t) {
    const step_result s = ranked.step(rank, t, t == 2 && rank == world - 1);
    expect(s.skipped == (t == 2), "step " + std::to_string(t) + " skipped only at the planted inf");
    expect(s.communicated.found_inf == (t == 2), "found_inf reported by the all-reduce at step 2 only");
    expect(!s.culprit && s.parameter.empty(), "no culprit named for another rank's overflow");
  }
  expect(ranked.amp.get_scale() == initial / 2, "every rank halved its scale once");
  expect(ranked.amp.statistics().skipped_steps == 1, "one skipped step in the statistics");
}

void a_changed_parameter_is_named_on_every_rank() {
  replica ranked(parse_recipe("recipe=fp32"));
  ranked.amp.use_process_group(std::make_shared<mpi_process_group>(MPI_COMM_WORLD));
  ranked.step(rank, 0);
  ranked.amp.check_replicas();  // the same everywhere: no throw
  if (rank == world - 1) ranked.b.modify([](matrix& m) { m.data<float>()[3] += 1.0f; });
  MPI_CHECK_THROWS(
      replica_mismatch_error,
      "after 1 steps the " + std::to_string(world) + " ranks hold different parameter 'fc.bias' (1 of 2 registered",
      "a changed bias is named on every rank", ranked.amp.check_replicas());
}

void different_registrations_throw_everywhere() {
  parameter w{matrix(dtype::float32, 1, 4), "w"}, extra{matrix(dtype::float32, 1, 4), "extra"};
  precision_session amp(parse_recipe("recipe=fp32"));
  amp.add_parameter(w);
  if (rank == 0) amp.add_parameter(extra);
  amp.use_process_group(std::make_shared<mpi_process_group>(MPI_COMM_WORLD));
  MPI_CHECK_THROWS(invalid_argument, "the ranks compare between 1 and 2 parameters",
                   "different registrations are refused on every rank", amp.check_replicas());
}

// fp8 layers under a group: each rank quantises its own activations (rank r's are (r + 1) times
// larger) and gradients; at the end of every step the amaxes are agreed on, so every rank's
// scales are those of the largest rank's values, on every rank alike.
void fp8_scales_agree_across_ranks() {
  replica rep(recipes::fp8());
  rep.amp.use_fp8_layers(1);
  rep.amp.use_process_group(std::make_shared<mpi_process_group>(MPI_COMM_WORLD));
  ops::fp8_training largest{recipes::fp8().fp8_policy(), 1};  // what the last rank alone would do
  std::vector<float8_e4m3fn> xq(64), wq(weights);
  std::vector<float8_e5m2> dyq(64);
  for (int t = 0; t < 4; ++t) {
    const auto values = [&](int r, float unit) {
      std::vector<float> v(64);
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = unit * static_cast<float>((r + 1) * (t + 1)) * static_cast<float>(i % 7);
      return v;
    };
    const std::vector<float> x = values(rank, 0.5f), dy = values(rank, 1e-3f);
    rep.amp.train_step(
        [&] {
          rep.amp.fp8().forward().quantize(0, x.data(), x.size(), xq.data());
          rep.amp.fp8().forward().quantize(1, rep.w.value().data<float>(), weights, wq.data());
          largest.forward().quantize(1, rep.w.value().data<float>(), weights, wq.data());  // before the update
          return 1.0f;
        },
        [&](const backward_context& c) {
          rep.amp.fp8().backward().quantize(0, dy.data(), dy.size(), dyq.data());
          rep.amp.accumulate_gradient(rep.w, gradient_of(rep.w, target_of(rank, t, weights), c.loss_gradient, 1.0f));
          rep.amp.accumulate_gradient(rep.b, gradient_of(rep.b, target_of(rank, t, biases), c.loss_gradient, 1.0f));
        });
    const std::vector<float> xl = values(world - 1, 0.5f), dyl = values(world - 1, 1e-3f);
    largest.forward().quantize(0, xl.data(), xl.size(), xq.data());
    largest.backward().quantize(0, dyl.data(), dyl.size(), dyq.data());
    largest.update();
    const float scales[3] = {rep.amp.fp8().forward().scale(0), rep.amp.fp8().forward().scale(1),
                             rep.amp.fp8().backward().scale(0)};
    expect(scales[0] == largest.forward().scale(0) && scales[1] == largest.forward().scale(1) &&
               scales[2] == largest.backward().scale(0),
           "fp8 step " + std::to_string(t) + ": the scales follow the largest rank's amaxes");
    float maxima[3], minima[3];
    MPI_Allreduce(scales, maxima, 3, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(scales, minima, 3, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
    expect(std::equal(maxima, maxima + 3, minima),
           "fp8 step " + std::to_string(t) + ": every rank has the same scales");
  }
  expect(rep.amp.fp8().forward().scale(0) < 448.0f, "the activations' amax moved the scale");
}

}  // namespace

int main(int argc, char** argv) {
  return run_under_mpi(argc, argv, "mpi_session_test", [] {
    float32_matches_the_single_process_sum();
    low_precision_replicas_stay_identical("bf16");
    low_precision_replicas_stay_identical("e4m3");
    an_overflow_on_one_rank_skips_everywhere();
    a_changed_parameter_is_named_on_every_rank();
    different_registrations_throw_everywhere();
    fp8_scales_agree_across_ranks();
  });
}
