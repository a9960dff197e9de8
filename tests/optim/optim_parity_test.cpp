// optim/sgd.hpp, optim/adamw.hpp: 20 steps of each optimizer give PyTorch 1.13's weights and
// buffers bit for bit (torch_fixtures.inc, written by make_fixtures.py from torch.optim.SGD and
// torch.optim.AdamW with foreach=False), on every SIMD path this CPU has, for one parameter of
// the fixture's 37 elements and for the same inputs repeated past the 64-element blocks.
#include <mixprec/optim/optim.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "simd_paths.hpp"

using namespace mixprec;

namespace {

struct sgd_fixture {
  const char* name;
  int case_index;
  std::uint32_t lr, momentum, dampening;
  bool nesterov;
  std::uint32_t weight_decay;
  int lr_change_after;  // 0: no change; else lr becomes lr_after before step lr_change_after + 1
  std::uint32_t lr_after;
  std::uint32_t weights[5][37];
  std::uint32_t buffer[37];
};

struct adamw_fixture {
  const char* name;
  int case_index;
  std::uint32_t lr, beta1, beta2, eps, weight_decay;
  int lr_change_after;
  std::uint32_t lr_after;
  std::uint32_t weights[5][37];
  std::uint32_t exp_avg[37], exp_avg_sq[37];
};

#include "torch_fixtures.inc"

float from_bits(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

std::uint32_t to_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// make_fixtures.py's fixture_value: splitmix64's finaliser over (case, step, index), shaped into
// float32 bits (tiny, ordinary and large magnitudes, some zeros).
std::uint32_t fixture_value(std::uint64_t case_index, std::uint64_t step, std::uint64_t index) {
  std::uint64_t h = (case_index << 40) ^ (step << 20) ^ index;
  h += 0x9E37'79B9'7F4A'7C15u;
  h = (h ^ (h >> 30)) * 0xBF58'476D'1CE4'E5B9u;
  h = (h ^ (h >> 27)) * 0x94D0'49BB'1331'11EBu;
  h ^= h >> 31;
  if (step > 0 && index % 13 == 0 && step % 3 == 0) return 0;
  std::int64_t exponent = 0;
  if (index % 7 == 3) {
    exponent = -40 + static_cast<std::int64_t>((h >> 40) % 10);
  } else if (index % 11 == 5 && step > 0) {
    exponent = 20 + static_cast<std::int64_t>((h >> 40) % 10);
  } else {
    exponent = -8 + static_cast<std::int64_t>((h >> 40) % 12);
  }
  return static_cast<std::uint32_t>(((h >> 63) << 31) | (static_cast<std::uint64_t>(exponent + 127) << 23) |
                                    (h & 0x7F'FFFFu));
}

// The fixture's inputs for a case, `copies` times over (copies > 1: parameters longer than a block).
std::vector<float> inputs(int case_index, int step, std::size_t copies) {
  std::vector<float> v;
  for (std::size_t c = 0; c < copies; ++c) {
    for (std::size_t i = 0; i < fixture_elements; ++i)
      v.push_back(
          from_bits(fixture_value(static_cast<std::uint64_t>(case_index), static_cast<std::uint64_t>(step), i)));
  }
  return v;
}

// Every element of `got` (copies of 37) equals `expected`; reports the first difference.
void require_bits(const std::vector<float>& got, const std::uint32_t (&expected)[37], const std::string& what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (to_bits(got[i]) != expected[i % 37]) {
      FAIL(what << " element " << i << ": got 0x" << std::hex << to_bits(got[i]) << ", PyTorch 0x" << expected[i % 37]);
    }
  }
}

template <class Optimizer, class Fixture, class Check>
void replay(Optimizer& opt, const Fixture& f, std::size_t copies, Check check_buffers) {
  std::vector<float> w = inputs(f.case_index, 0, copies);
  const std::size_t index = opt.add(w.size());
  int checkpoint = 0;
  for (int step = 1; step <= static_cast<int>(fixture_steps); ++step) {
    if (f.lr_change_after != 0 && step == f.lr_change_after + 1) opt.set_lr(from_bits(f.lr_after));
    const std::vector<float> g = inputs(f.case_index, step, copies);
    opt.step(index, w.data(), g.data(), w.size());
    if (step == fixture_checkpoints[checkpoint]) {
      require_bits(w, f.weights[checkpoint], std::string(f.name) + " step " + std::to_string(step) + " weights");
      ++checkpoint;
    }
  }
  check_buffers(opt, index);
}

}  // namespace

TEST_CASE("sgd matches PyTorch 1.13 torch.optim.SGD bit for bit", "[optim][parity]") {
  on_every_path_and_thread_count([] {
    for (const sgd_fixture& f : sgd_fixtures) {
      for (const std::size_t copies : {std::size_t{1}, std::size_t{5}}) {
        INFO(f.name << ", " << copies * fixture_elements << " elements");
        optim::sgd_options o;
        o.lr = from_bits(f.lr);
        o.momentum = from_bits(f.momentum);
        o.dampening = from_bits(f.dampening);
        o.nesterov = f.nesterov;
        o.weight_decay = from_bits(f.weight_decay);
        optim::sgd opt(o);
        replay(opt, f, copies, [&](const optim::sgd& s, std::size_t) {
          // The momentum buffer, through the saved state (u8 exists, then the floats at its end).
          if (o.momentum == 0.0f) return;
          const std::vector<std::uint8_t> saved = s.save_state();
          const std::size_t n = copies * fixture_elements;
          std::vector<float> buffer(n);
          std::memcpy(buffer.data(), saved.data() + saved.size() - 4 - 4 * n, 4 * n);
          require_bits(buffer, f.buffer, std::string(f.name) + " momentum buffer");
        });
      }
    }
  });
}

TEST_CASE("adamw matches PyTorch 1.13 torch.optim.AdamW bit for bit", "[optim][parity]") {
  on_every_path_and_thread_count([] {
    for (const adamw_fixture& f : adamw_fixtures) {
      for (const std::size_t copies : {std::size_t{1}, std::size_t{5}}) {
        INFO(f.name << ", " << copies * fixture_elements << " elements");
        optim::adamw_options o;
        o.lr = from_bits(f.lr);
        o.beta1 = from_bits(f.beta1);
        o.beta2 = from_bits(f.beta2);
        o.eps = from_bits(f.eps);
        o.weight_decay = from_bits(f.weight_decay);
        optim::adamw opt(o);
        replay(opt, f, copies, [&](const optim::adamw& a, std::size_t index) {
          CHECK(a.steps(index) == static_cast<std::int64_t>(fixture_steps));
          const std::vector<std::uint8_t> saved = a.save_state();
          const std::size_t n = copies * fixture_elements;
          std::vector<float> m(n), v(n);
          std::memcpy(v.data(), saved.data() + saved.size() - 4 - 4 * n, 4 * n);
          std::memcpy(m.data(), saved.data() + saved.size() - 4 - 8 * n, 4 * n);
          require_bits(m, f.exp_avg, std::string(f.name) + " exp_avg");
          require_bits(v, f.exp_avg_sq, std::string(f.name) + " exp_avg_sq");
        });
      }
    }
  });
}
