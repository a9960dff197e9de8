// distributed/mpi.hpp under mpirun (-np 2, -np 4 --oversubscribe; tests/distributed/CMakeLists.txt):
// one rank at a time overflows (at a random position: first element, last, inside the vector tail,
// NaN or inf, in one of several arrays), and every rank must skip the same steps and end every
// update with the same scale and trackers -- the same as one process that saw every overflow
// (a loss_scaler with local_agreement fed the global overflow pattern).  Also: several optimizers
// per iteration, record_found_inf, sub-communicators, the state helpers (mpi_states_agree,
// mpi_require_same_state, mpi_broadcast_state), every rank naming the same overflow culprit (the
// smallest (array, element, rank) of the ranks' own; first_culprit), and, as a control, that
// ranks with local_agreement do drift apart (so the comparison would catch a missing agreement).
//
// Each rank counts its failures; the counts are summed over MPI_COMM_WORLD and every rank exits
// with status 1 if any rank failed.
#include <mixprec/distributed/mpi.hpp>
#include <mixprec/scaling/scaling.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mpi_checks.hpp"

using namespace mixprec;
using namespace mpi_checks;

namespace {

// The same pseudo-random overflow pattern on every rank (same seed), so every rank also knows
// which rank overflows in each iteration and can check the outcome locally.
struct overflow_event {
  int rank = -1;  // -1: no rank overflows this iteration
  int array = 0;  // which of the rank's arrays
  int where = 0;  // 0 first element, 1 last, 2 inside the vector tail, 3 middle
  bool nan = false;
};

overflow_event draw_event(std::mt19937_64& rng, int ranks, double overflow_probability) {
  overflow_event e;
  std::uniform_real_distribution<double> u(0, 1);
  if (u(rng) < overflow_probability) {
    e.rank = static_cast<int>(rng() % static_cast<std::uint64_t>(ranks));
    e.array = static_cast<int>(rng() % 3);
    e.where = static_cast<int>(rng() % 4);
    e.nan = (rng() & 1) != 0;
  }
  return e;
}

// This rank's gradients: three arrays of sizes that differ per rank (with tails that are not a
// multiple of any vector width), filled with scaled values.
struct gradients {
  std::vector<float> a, b, c;
  explicit gradients(int r) : a(1000 + 37 * static_cast<std::size_t>(r)), b(67 + static_cast<std::size_t>(r)), c(5) {}
  std::vector<float>& array(int i) { return i == 0 ? a : (i == 1 ? b : c); }
  void fill(float scale, std::uint64_t seed) {
    std::mt19937 g(static_cast<std::mt19937::result_type>(seed));
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (int i = 0; i < 3; ++i) {
      for (float& x : array(i)) x = d(g) * scale;
    }
  }
  void poison(const overflow_event& e) {
    std::vector<float>& v = array(e.array);
    std::size_t at = 0;
    switch (e.where) {
      case 0:
        at = 0;
        break;
      case 1:
        at = v.size() - 1;
        break;
      case 2:
        at = v.size() - 1 - (v.size() % 16) / 2;  // inside the last partial vector
        break;
      default:
        at = v.size() / 2;
    }
    v[at] = e.nan ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::infinity();
  }
};

template <class Policy>
void trajectory(const char* label, const Policy& policy, const scaler_options& options, int iterations,
                double overflow_probability, std::uint64_t seed) {
  loss_scaler<Policy, mpi_agreement> scaler(policy, options, mpi_agreement(MPI_COMM_WORLD));
  loss_scaler<Policy> reference(policy, options);  // one process that sees every overflow
  std::mt19937_64 rng(seed);
  gradients g(rank);
  long long skipped = 0, changes = 0;
  for (int it = 0; it < iterations; ++it) {  // never stop early: every call is collective
    const overflow_event e = draw_event(rng, world, overflow_probability);
    const float scale = scaler.get_scale();
    g.fill(scale, seed + static_cast<std::uint64_t>(it));
    const std::vector<float> before = g.a;
    if (e.rank == rank) g.poison(e);
    const bool finite = scaler.unscale({gradient_view(g.a.data(), g.a.size()), gradient_view(g.b.data(), g.b.size()),
                                        gradient_view(g.c.data(), g.c.size())});
    const std::string at = std::string(label) + " iteration " + std::to_string(it);
    expect(finite == (e.rank < 0), at + ": unscale() returned " + (finite ? "finite" : "found inf") +
                                       " but the overflowing rank is " + std::to_string(e.rank));
    if (e.rank != rank || e.array != 0) {
      const float inv = static_cast<float>(1.0 / static_cast<double>(scale));
      bool exact = true;
      for (std::size_t i = 0; i < g.a.size(); ++i) exact = exact && g.a[i] == before[i] * inv;
      expect(exact, at + ": the finite gradients are not g * float(1/double(scale))");
    }
    bool ran = false;
    const bool stepped = scaler.step([&] { ran = true; });
    expect(stepped == ran && ran == (e.rank < 0), at + ": step() ran on one rank and not on another");
    scaler.update();
    skipped += ran ? 0 : 1;

    reference.record_found_inf(e.rank >= 0);
    reference.step([] {});
    reference.update();
    expect(scaler.state() == reference.state(), at + ": scale " + std::to_string(scaler.get_scale()) +
                                                    " growth tracker " + std::to_string(scaler.state().growth_tracker) +
                                                    " but a single process gets scale " +
                                                    std::to_string(reference.get_scale()) + " growth tracker " +
                                                    std::to_string(reference.state().growth_tracker));
    if (scaler.get_scale() != scale) ++changes;
    if (it % 97 == 0) expect(mpi_states_agree(scaler), at + ": the states differ across ranks");
  }
  expect(mpi_states_agree(scaler), std::string(label) + ": the final states differ across ranks");
  const scaler_statistics s = scaler.get_amp_stats(), r = reference.get_amp_stats();
  expect(s.counters.skipped_steps == r.counters.skipped_steps && s.counters.steps == r.counters.steps &&
             s.counters.overflow_count == r.counters.overflow_count,
         std::string(label) + ": the statistics differ from a single process's");
  if (rank == 0) {
    std::printf("%-28s %d iterations on %d ranks: %lld skipped, %lld scale changes, final scale %g\n", label,
                iterations, world, skipped, changes, static_cast<double>(scaler.get_scale()));
  }
}

// One rank overflows once: every rank skips and backs off identically (the scenario,
// spelled out for each rank in turn as the overflowing one).
void each_rank_overflows_once() {
  for (int bad = 0; bad < world; ++bad) {
    loss_scaler<dynamic_scaling, mpi_agreement> scaler{dynamic_scaling{}};
    std::vector<float> g(4096 + 3, scaler.scale(0.25f));
    if (rank == bad) g.back() = std::numeric_limits<float>::infinity();
    const bool finite = scaler.unscale(g.data(), g.size());
    bool ran = false;
    scaler.step([&] { ran = true; });
    scaler.update();
    const std::string at = "rank " + std::to_string(bad) + " overflows";
    expect(!finite && !ran, at + ": this rank did not skip");
    expect(scaler.get_scale() == 32768.f && scaler.state().growth_tracker == 0,
           at + ": the scale is " + std::to_string(scaler.get_scale()) + ", not 32768");
    expect(scaler.get_amp_stats().counters.skipped_steps == 1, at + ": skipped_steps is not 1");
    mpi_require_same_state(scaler);
  }
}

// Overflows on several ranks at once: every rank names the same culprit, the smallest (array,
// element, rank) over the ranks, with that rank; a check made elsewhere names none anywhere.
void culprits_agree() {
  loss_scaler<dynamic_scaling, mpi_agreement> scaler{dynamic_scaling{}};
  const auto iterate = [&](int array, std::size_t element, float value, bool poison) {
    std::vector<float> a(100, scaler.scale(0.5f)), b(50, scaler.scale(0.5f));
    if (poison) (array == 0 ? a : b)[element] = value;
    scaler.unscale({gradient_view(a.data(), a.size()), gradient_view(b.data(), b.size())});
    scaler.step([] {});
    scaler.update();
  };
  const auto expect_culprit = [&](const overflow_culprit& expected, const std::string& at) {
    const scaler_statistics s = scaler.get_amp_stats();
    expect(!s.culprits.empty() && s.culprits.back() == expected,
           at + ": the culprit is not array " + std::to_string(expected.element.view) + ", element " +
               std::to_string(expected.element.element) + " on rank " + std::to_string(expected.rank));
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // Rank 0 in array 1; rank r > 0 in array 0 at element world - r: the last rank's element 1 wins.
  iterate(rank == 0 ? 1 : 0, rank == 0 ? 2 : static_cast<std::size_t>(world - rank), rank % 2 != 0 ? nan : -inf, true);
  expect_culprit(
      overflow_culprit{
          0, 0, nonfinite_element{0, 1, (world - 1) % 2 != 0 ? nonfinite_kind::nan : nonfinite_kind::negative_infinity},
          world - 1},
      "several ranks overflow");
  // Every rank at the same place: the tie goes to rank 0.
  iterate(1, 7, inf, true);
  expect_culprit(overflow_culprit{1, 0, nonfinite_element{1, 7, nonfinite_kind::positive_infinity}, 0}, "a tie");
  // Only the last rank: every rank names it.
  iterate(0, 99, nan, rank == world - 1);
  expect_culprit(overflow_culprit{2, 0, nonfinite_element{0, 99, nonfinite_kind::nan}, world - 1}, "one rank");
  // A check made elsewhere (record_found_inf on rank 0): skipped everywhere, no culprit anywhere.
  const std::size_t kept = scaler.get_amp_stats().culprits.size();
  scaler.record_found_inf(rank == 0);
  scaler.step([] {});
  scaler.update();
  expect(scaler.get_amp_stats().culprits.size() == kept && scaler.get_amp_stats().counters.skipped_steps == 4,
         "record_found_inf: a culprit was named, or the step was not skipped");
  mpi_require_same_state(scaler);
}

// Two optimizers per iteration; record_found_inf for the second.  An overflow in optimizer 1 on
// one rank skips optimizer 1 everywhere, optimizer 0 steps everywhere, and update() backs off.
void several_optimizers() {
  hysteresis_scaling h;
  h.hysteresis = 1;
  loss_scaler<hysteresis_scaling, mpi_agreement> scaler{h};
  std::vector<float> g0(100, 1.f);
  expect(scaler.unscale(g0.data(), g0.size(), 0), "optimizer 0 is finite everywhere");
  const bool second = scaler.record_found_inf(rank == world - 1, 1);
  expect(!second, "optimizer 1 found inf on the last rank, so on every rank");
  int ran0 = 0, ran1 = 0;
  scaler.step([&] { ++ran0; }, 0);
  scaler.step([&] { ++ran1; }, 1);
  expect(ran0 == 1 && ran1 == 0, "optimizer 0 steps and optimizer 1 skips on every rank");
  scaler.update();
  expect(scaler.get_scale() == 32768.f, "megatron rule with hysteresis 1 backs off to 32768");
  mpi_require_same_state(scaler);
}

// Agreement within a sub-communicator only: two groups (even and odd ranks); an overflow in the
// even group leaves the odd group's scalers alone.
void sub_communicators() {
  MPI_Comm group;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &group);
  loss_scaler<dynamic_scaling, mpi_agreement> scaler{dynamic_scaling{}, {}, mpi_agreement(group)};
  const bool finite = scaler.record_found_inf(rank == 0);
  scaler.step([] {});
  scaler.update();
  const bool even = rank % 2 == 0;
  expect(finite == !even, "sub-communicator: only the even group sees rank 0's overflow");
  expect(scaler.get_scale() == (even ? 32768.f : 65536.f), "sub-communicator: the scale of each group");
  expect(mpi_states_agree(scaler, group), "sub-communicator: states agree within each group");
  expect(mpi_states_agree(scaler, MPI_COMM_WORLD) == (world == 1), "sub-communicator: the groups differ");
  MPI_Comm_free(&group);
}

// The control: without agreement the ranks drift apart, and the helpers say so.
void local_agreement_diverges() {
  if (world < 2) return;
  loss_scaler<dynamic_scaling> scaler{dynamic_scaling{}};
  scaler.record_found_inf(rank == 1);
  scaler.step([] {});
  scaler.update();
  expect(!mpi_states_agree(scaler), "control: ranks with local_agreement differ after rank 1 overflows alone");
  bool threw = false;
  try {
    mpi_require_same_state(scaler);
  } catch (const agreement_error& e) {
    threw = std::string(e.what()).find("scale") != std::string::npos;
  }
  expect(threw, "control: mpi_require_same_state names the differing scale");
}

// Resuming: rank 0 has the checkpointed state; mpi_broadcast_state gives it to every rank, and
// the trajectories from there on are identical.
void broadcast_on_resume() {
  dynamic_scaling d;
  d.growth_interval = 3;
  loss_scaler<dynamic_scaling, mpi_agreement> scaler{d};
  if (rank == 0) {  // rank 0 alone advances a local scaler, then loads its state into `scaler`
    loss_scaler<dynamic_scaling> solo{d};
    for (int i = 0; i < 11; ++i) {
      solo.record_found_inf(i % 4 == 1);
      solo.step([] {});
      solo.update();
    }
    scaler.load_state(solo.save_state());
  }
  mpi_broadcast_state(scaler, 0);
  mpi_require_same_state(scaler);
  expect(scaler.get_amp_stats().counters.steps == 11, "broadcast: the counters came along");
  for (int i = 0; i < 50; ++i) {
    scaler.record_found_inf(rank == i % world && i % 5 == 0);
    scaler.step([] {});
    scaler.update();
  }
  mpi_require_same_state(scaler);
  // A root that cannot save (mid-iteration) makes every rank throw, none hangs.
  scaler.record_found_inf(false);  // collective: every rank is now mid-iteration
  bool threw = false;
  try {
    mpi_broadcast_state(scaler, 0);
  } catch (const agreement_error&) {
    threw = true;
  }
  expect(threw, "broadcast: a root that cannot save makes every rank throw agreement_error");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);

  each_rank_overflows_once();
  culprits_agree();
  several_optimizers();
  sub_communicators();
  local_agreement_diverges();
  broadcast_on_resume();

  // Capped so that the scaled gradients stay finite (the DeepSpeed rule grows to inf uncapped).
  scaler_options capped;
  capped.max_scale = 0x1p40f;
  dynamic_scaling dyn;
  dyn.growth_interval = 5;
  trajectory("dynamic_scaling", dyn, capped, 3000, 0.1, 11);
  hysteresis_scaling ds;
  ds.rules = hysteresis_scaling::rule_set::deepspeed;
  ds.growth_interval = 4;
  ds.hysteresis = 3;
  trajectory("hysteresis_scaling/deepspeed", ds, capped, 3000, 0.15, 12);
  ds.consecutive_hysteresis = true;
  trajectory("  with consecutive_hysteresis", ds, capped, 3000, 0.15, 13);
  hysteresis_scaling mg;
  mg.growth_interval = 6;
  trajectory("hysteresis_scaling/megatron", mg, capped, 3000, 0.15, 14);
  scaler_options bounded;
  bounded.min_scale = 1;
  bounded.max_scale = 1 << 20;
  trajectory("dynamic_scaling, bounded", dyn, bounded, 3000, 0.5, 15);  // reaches the floor
  trajectory("no_scaling", no_scaling{}, {}, 1000, 0.2, 16);
  static_scaling st;
  st.scale = 128;
  trajectory("static_scaling", st, {}, 1000, 0.2, 17);

  int total = total_failures();
  if (rank == 0)
    std::printf("mpi agreement on %d ranks: %s (%d failures)\n", world, total == 0 ? "OK" : "FAILED", total);
  MPI_Finalize();

  // After MPI_Finalize the agreement refuses clearly instead of calling into MPI.
  bool threw = false;
  try {
    mpi_agreement().any(false);
  } catch (const agreement_error& e) {
    threw = std::string(e.what()).find("finalized") != std::string::npos;
  }
  if (!threw) {
    std::printf("rank %d: FAILED: mpi_agreement::any after MPI_Finalize did not throw agreement_error\n", rank);
    total += 1;
  }
  return total == 0 ? 0 : 1;
}
