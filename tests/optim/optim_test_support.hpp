// Helpers of the optimizer tests: deterministic weights and gradients, the message of an
// exception, and the save / load checks that sgd_test and adamw_test share.
#pragma once

#include <mixprec/scaling/errors.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace optim_test {

// Values of mixed sign and magnitude, different for every (seed, i).
inline std::vector<float> values(std::uint32_t seed, std::size_t n) {
  std::vector<float> v(n);
  std::uint32_t x = seed * 2654435761u + 1u;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * static_cast<float>(1u << (x & 7u));
  }
  return v;
}

template <class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// Two parameters (100 and 37 elements) of `make()`, `steps` steps each, starting at step `from`.
template <class Optimizer>
void run(Optimizer& opt, std::vector<std::vector<float>>& w, int from, int steps) {
  for (int s = from; s < from + steps; ++s) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::vector<float> g = values(static_cast<std::uint32_t>(1000 * s + static_cast<int>(i)), w[i].size());
      opt.step(i, w[i].data(), g.data(), w[i].size());
    }
  }
}

inline bool same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(a[i].data(), b[i].data(), 4 * a[i].size()) != 0) return false;
  }
  return true;
}

// k steps, save, load into a fresh optimizer, 6 more steps: the same bits as 6 + k steps in one
// run, for k = 0 (nothing created yet), 1 and 5; and save_state round-trips byte for byte.
template <class Optimizer, class Options>
void check_resume(const Options& o) {
  for (const int k : {0, 1, 5}) {
    INFO("save after " << k << " steps");
    std::vector<std::vector<float>> whole{values(1, 100), values(2, 37)}, split = whole;
    Optimizer a(o);
    a.add(100);
    a.add(37);
    run(a, whole, 0, k + 6);
    Optimizer b(o);
    b.add(100);
    b.add(37);
    run(b, split, 0, k);
    const std::vector<std::uint8_t> saved = b.save_state();
    Optimizer c(o);
    c.set_lr(o.lr * 3);  // lr comes from the state
    c.add(100);
    c.add(37);
    c.load_state(saved.data(), saved.size());
    CHECK(c.lr() == o.lr);
    CHECK(c.save_state() == saved);
    run(c, split, k, 6);
    CHECK(same_bits(whole, split));
  }
}

// Every truncation, every flipped byte, and states from other configurations are
// scaler_state_errors that leave the optimizer as it was.
template <class Optimizer, class Options>
void check_bad_states(const Options& o, const Options& other) {
  Optimizer a(o);
  a.add(100);
  a.add(37);
  std::vector<std::vector<float>> w{values(1, 100), values(2, 37)};
  run(a, w, 0, 3);
  const std::vector<std::uint8_t> good = a.save_state();

  Optimizer target(o);
  target.add(100);
  target.add(37);
  std::vector<std::vector<float>> tw = w;
  run(target, tw, 0, 1);
  const std::vector<std::uint8_t> before = target.save_state();
  const auto unchanged = [&] { CHECK(target.save_state() == before); };

  for (std::size_t size = 0; size < good.size(); size += 7) {
    CHECK_THROWS_AS(target.load_state(good.data(), size), mixprec::scaler_state_error);
  }
  unchanged();
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::vector<std::uint8_t> bad = good;
    bad[i] ^= 0x40;
    CHECK_THROWS_AS(target.load_state(bad.data(), bad.size()), mixprec::scaler_state_error);
  }
  unchanged();

  Optimizer fewer(o);
  fewer.add(100);
  CHECK_THROWS_WITH(fewer.load_state(good.data(), good.size()), Catch::Contains("1 are registered"));
  Optimizer resized(o);
  resized.add(100);
  resized.add(38);
  CHECK_THROWS_WITH(resized.load_state(good.data(), good.size()), Catch::Contains("38 registered"));
  Optimizer different(other);
  different.add(100);
  different.add(37);
  CHECK_THROWS_AS(different.load_state(good.data(), good.size()), mixprec::scaler_state_error);
  unchanged();
}

}  // namespace optim_test
