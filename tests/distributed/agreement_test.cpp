// distributed/agreement.hpp: the Agreement hook.  Threads stand in for processes: each has its
// own loss_scaler whose found_inf goes through function_agreement to an in-process "all-reduce"
// (a barrier with a logical OR), as an MPI, NCCL or Gloo communicator would plug in.  One thread
// at a time overflows; every thread must skip the same steps and keep the same state as one
// scaler that sees every overflow.
#include <mixprec/distributed/agreement.hpp>
#include <mixprec/scaling/scaling.hpp>

#include <catch2/catch.hpp>

#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace mixprec;

namespace {

// A logical-OR all-reduce among `n` threads: each call blocks until all n have called.
class thread_all_reduce {
 public:
  explicit thread_all_reduce(int n) : n_(n) {}
  bool any(bool x) {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t generation = generation_;
    accumulated_ = accumulated_ || x;
    if (++arrived_ == n_) {
      result_ = accumulated_;
      accumulated_ = false;
      arrived_ = 0;
      ++generation_;
      done_.notify_all();
      return result_;
    }
    done_.wait(lock, [&] { return generation_ != generation; });
    return result_;  // the next round cannot finish before this thread joins it
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  int n_, arrived_ = 0;
  bool accumulated_ = false, result_ = false;
  std::uint64_t generation_ = 0;
};

// Which thread overflows in iteration `it` (-1: none): the same on every thread.
int overflowing_thread(std::uint64_t seed, int it, int threads) {
  std::mt19937_64 rng(seed * 1000003u + static_cast<std::uint64_t>(it));
  if (rng() % 5 != 0) return -1;
  return static_cast<int>(rng() % static_cast<std::uint64_t>(threads));
}

template <class Policy>
void threads_agree(const Policy& policy, int threads, int iterations, std::uint64_t seed) {
  thread_all_reduce group(threads);
  std::vector<scale_state> final_states(static_cast<std::size_t>(threads));
  std::vector<long long> skips(static_cast<std::size_t>(threads)), mismatches(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      auto scaler = make_agreeing_scaler(policy, [&](bool local) { return group.any(local); });
      std::vector<float> g(257 + static_cast<std::size_t>(t));
      for (int it = 0; it < iterations; ++it) {
        const int bad = overflowing_thread(seed, it, threads);
        for (float& x : g) x = scaler.scale(0.5f);
        if (bad == t) g[static_cast<std::size_t>(it) % g.size()] = std::numeric_limits<float>::quiet_NaN();
        const bool finite = scaler.unscale(g.data(), g.size());
        if (finite != (bad < 0)) ++mismatches[static_cast<std::size_t>(t)];
        if (!scaler.step([] {})) ++skips[static_cast<std::size_t>(t)];
        scaler.update();
      }
      if (scaler.agreement().calls() != iterations) ++mismatches[static_cast<std::size_t>(t)];
      final_states[static_cast<std::size_t>(t)] = scaler.state();
    });
  }
  for (auto& w : workers) w.join();

  loss_scaler<Policy> reference(policy);
  long long reference_skips = 0;
  for (int it = 0; it < iterations; ++it) {
    const bool found = overflowing_thread(seed, it, threads) >= 0;
    reference.record_found_inf(found);
    reference_skips += found ? 1 : 0;
    reference.step([] {});
    reference.update();
  }
  for (int t = 0; t < threads; ++t) {
    INFO("thread " << t);
    CHECK(mismatches[static_cast<std::size_t>(t)] == 0);
    CHECK(skips[static_cast<std::size_t>(t)] == reference_skips);
    CHECK(final_states[static_cast<std::size_t>(t)] == reference.state());
  }
}

}  // namespace

TEST_CASE("threads sharing an all-reduce through function_agreement skip and back off together", "[agreement]") {
  dynamic_scaling d;
  d.growth_interval = 7;
  threads_agree(d, 4, 2000, 1);
  hysteresis_scaling ds;
  ds.rules = hysteresis_scaling::rule_set::deepspeed;
  ds.growth_interval = 5;
  threads_agree(ds, 3, 2000, 2);
  hysteresis_scaling mg;
  mg.growth_interval = 5;
  threads_agree(mg, 2, 2000, 3);
  threads_agree(no_scaling{}, 4, 500, 4);
}

TEST_CASE("one overflowing process makes every process skip and back off", "[agreement]") {
  bool remote_found_inf = true;  // "another process" overflowed
  auto scaler = make_agreeing_scaler(dynamic_scaling{}, [&](bool local) { return local || remote_found_inf; });
  std::vector<float> g(100, scaler.scale(1.f));
  CHECK_FALSE(scaler.unscale(g.data(), g.size()));  // locally finite, globally not
  CHECK(g[99] == 1.f);                              // still unscaled
  bool ran = false;
  CHECK_FALSE(scaler.step([&] { ran = true; }));
  CHECK_FALSE(ran);
  scaler.update();
  CHECK(scaler.get_scale() == 32768.f);
  CHECK(scaler.get_amp_stats().counters.skipped_steps == 1);
  remote_found_inf = false;
  CHECK(scaler.record_found_inf(false));
  CHECK(scaler.step([] {}));
  scaler.update();
  CHECK(scaler.agreement().calls() == 2);
}

TEST_CASE("a missing or failing agreement is a clear error", "[agreement]") {
  loss_scaler<dynamic_scaling, function_agreement> unhooked{dynamic_scaling{}};
  CHECK_THROWS_AS(unhooked.record_found_inf(false), agreement_error);

  auto failing = make_agreeing_scaler(dynamic_scaling{}, [](bool) -> bool { throw agreement_error("link down"); });
  std::vector<float> g(8, 1.f);
  CHECK_THROWS_AS(failing.unscale(g.data(), g.size()), agreement_error);
  // The check stays unrecorded: a second check of that optimizer, a step and update() are refused;
  // update(new_scale) closes the iteration.
  CHECK_THROWS_AS(failing.unscale(g.data(), g.size()), scaler_usage_error);
  CHECK_THROWS_AS(failing.step([] {}), scaler_usage_error);
  CHECK_THROWS_AS(failing.update(), scaler_usage_error);
  failing.update(1024.f);
  CHECK(failing.get_scale() == 1024.f);
  CHECK_FALSE(failing.iteration_in_progress());
}
