// optim/sgd.hpp: options out of range, wrong indices and sizes are invalid_argument naming the
// value and the limit; the momentum buffer starts as the first d_p; a saved state resumes to the
// same bits and bad states change nothing.  (Parity with PyTorch: optim_parity_test.cpp.)
#include <mixprec/optim/sgd.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "optim_test_support.hpp"

using namespace mixprec;
using optim_test::message_of;

TEST_CASE("sgd rejects options out of range, naming value and range", "[optim][sgd]") {
  const auto error_of = [](optim::sgd_options o) { return message_of([&] { optim::sgd s(o); }); };
  optim::sgd_options o;
  o.lr = -1;
  CHECK(error_of(o) == "mixprec::optim::sgd: lr is -1, allowed range is [0, inf) (finite)");
  o = {};
  o.lr = std::numeric_limits<float>::infinity();
  CHECK(error_of(o) == "mixprec::optim::sgd: lr is inf, allowed range is [0, inf) (finite)");
  o = {};
  o.momentum = 1;
  CHECK(error_of(o) == "mixprec::optim::sgd: momentum is 1, allowed range is [0, 1)");
  o = {};
  o.dampening = 1.5f;
  CHECK(error_of(o) == "mixprec::optim::sgd: dampening is 1.5, allowed range is [0, 1]");
  o = {};
  o.weight_decay = std::nanf("");
  CHECK(error_of(o) == "mixprec::optim::sgd: weight_decay is nan, allowed range is [0, inf) (finite)");
  o = {};
  o.nesterov = true;
  CHECK(error_of(o) ==
        "mixprec::optim::sgd: nesterov needs momentum > 0 and dampening = 0, got momentum 0 and "
        "dampening 0");
  o.momentum = 0.9f;
  o.dampening = 0.1f;
  CHECK_THROWS_AS(optim::sgd(o), invalid_argument);
  o.dampening = 0;
  CHECK_NOTHROW(optim::sgd(o));

  optim::sgd s;
  CHECK(message_of([&] { s.set_lr(-0.5f); }) == "mixprec::optim::sgd: lr is -0.5, allowed range is [0, inf) (finite)");
  s.set_lr(0.25f);
  CHECK(s.lr() == 0.25f);
  CHECK(s.options().lr == 0.25f);
}

TEST_CASE("sgd step rejects unknown indices, other sizes, null and overlapping arrays", "[optim][sgd]") {
  optim::sgd s;
  CHECK(s.add(4) == 0);
  CHECK(s.add(3) == 1);
  CHECK(s.size() == 2);
  std::vector<float> w(8, 1.0f), g(8, 1.0f);
  CHECK(message_of([&] { s.step(2, w.data(), g.data(), 4); }) ==
        "mixprec::optim::sgd: parameter index 2 is out of range, 2 parameters are registered");
  CHECK(message_of([&] { s.step(1, w.data(), g.data(), 4); }) ==
        "mixprec::optim::sgd: step of parameter 1 with 4 elements, it was registered with 3");
  CHECK_THROWS_AS(s.step(0, nullptr, g.data(), 4), invalid_argument);
  CHECK_THROWS_WITH(s.step(0, w.data(), w.data() + 2, 4), Catch::Contains("overlap"));
  CHECK_NOTHROW(s.step(0, w.data(), w.data() + 4, 4));
}

TEST_CASE("sgd momentum buffer starts as the first gradient, undamped", "[optim][sgd]") {
  optim::sgd_options o;
  o.lr = 1;
  o.momentum = 0.5f;
  o.dampening = 0.5f;
  optim::sgd s(o);
  s.add(1);
  CHECK(s.state_bytes() == 4);
  float w = 0;
  const float g = 1;
  s.step(0, &w, &g, 1);
  CHECK(w == -1.0f);  // buf = g, not (1 - dampening) g
  s.step(0, &w, &g, 1);
  CHECK(w == -2.0f);  // buf = 0.5 * 1 + 0.5 * 1
  optim::sgd plain;
  plain.add(10);
  CHECK(plain.state_bytes() == 0);
}

TEST_CASE("sgd resumes from a saved state to the same bits", "[optim][sgd][state]") {
  optim::sgd_options o;
  o.lr = 0.05f;
  optim_test::check_resume<optim::sgd>(o);
  o.momentum = 0.9f;
  o.dampening = 0.25f;
  o.weight_decay = 0.01f;
  optim_test::check_resume<optim::sgd>(o);
  o.dampening = 0;
  o.nesterov = true;
  optim_test::check_resume<optim::sgd>(o);
}

TEST_CASE("sgd rejects truncated, corrupt and mismatched states and changes nothing", "[optim][sgd][state]") {
  optim::sgd_options o, other;
  o.momentum = 0.9f;
  other.momentum = 0.8f;
  optim_test::check_bad_states<optim::sgd>(o, other);
  optim::sgd a(o), b(other);
  a.add(3);
  b.add(3);
  const std::vector<std::uint8_t> saved = a.save_state();
  CHECK(message_of([&] { b.load_state(saved.data(), saved.size()); }) ==
        "scaler state: mixprec::optim::sgd: saved with momentum = 0.9, this optimizer has 0.8");
}
