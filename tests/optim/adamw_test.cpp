// optim/adamw.hpp: options out of range, wrong indices and sizes are invalid_argument naming the
// value and the limit; per-parameter step counts; a saved state resumes to the same bits and bad
// states (another optimizer's included) change nothing.  (Parity: optim_parity_test.cpp.)
#include <mixprec/optim/optim.hpp>

#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

#include "optim_test_support.hpp"

using namespace mixprec;
using optim_test::message_of;

TEST_CASE("adamw rejects options out of range, naming value and range", "[optim][adamw]") {
  const auto error_of = [](optim::adamw_options o) { return message_of([&] { optim::adamw a(o); }); };
  optim::adamw_options o;
  o.lr = -1e-3f;
  CHECK(error_of(o) == "mixprec::optim::adamw: lr is -0.001, allowed range is [0, inf) (finite)");
  o = {};
  o.beta1 = 1;
  CHECK(error_of(o) == "mixprec::optim::adamw: beta1 is 1, allowed range is [0, 1)");
  o = {};
  o.beta2 = -0.5f;
  CHECK(error_of(o) == "mixprec::optim::adamw: beta2 is -0.5, allowed range is [0, 1)");
  o = {};
  o.eps = -1e-8f;
  CHECK(error_of(o) == "mixprec::optim::adamw: eps is -1e-08, allowed range is [0, inf) (finite)");
  o = {};
  o.weight_decay = std::numeric_limits<float>::infinity();
  CHECK(error_of(o) == "mixprec::optim::adamw: weight_decay is inf, allowed range is [0, inf) (finite)");
  optim::adamw a;
  CHECK_THROWS_AS(a.set_lr(std::nanf("")), invalid_argument);
  CHECK(a.lr() == 1e-3f);
}

TEST_CASE("adamw step rejects unknown indices and other sizes, and counts steps per parameter", "[optim][adamw]") {
  optim::adamw a;
  a.add(5);
  a.add(2);
  CHECK(a.state_bytes() == std::size_t{2} * 7 * sizeof(float));
  std::vector<float> w(5, 1.0f), g(5, 0.5f);
  CHECK(message_of([&] { a.step(7, w.data(), g.data(), 5); }) ==
        "mixprec::optim::adamw: parameter index 7 is out of range, 2 parameters are registered");
  CHECK(message_of([&] { a.step(0, w.data(), g.data(), 4); }) ==
        "mixprec::optim::adamw: step of parameter 0 with 4 elements, it was registered with 5");
  a.step(0, w.data(), g.data(), 5);
  a.step(0, w.data(), g.data(), 5);
  CHECK(a.steps(0) == 2);
  CHECK(a.steps(1) == 0);
  // First step: m = 0.1 g, v = 0.001 g^2, bias-corrected to g and g^2: w - lr (1 + ...) ~ w - lr.
  optim::adamw_options o;
  o.weight_decay = 0;
  optim::adamw b(o);
  b.add(1);
  float x = 1;
  const float grad = 3;
  b.step(0, &x, &grad, 1);
  CHECK(x == Approx(1 - 1e-3).epsilon(1e-6));
}

TEST_CASE("adamw resumes from a saved state to the same bits", "[optim][adamw][state]") {
  optim_test::check_resume<optim::adamw>(optim::adamw_options{});
  optim::adamw_options o;
  o.lr = 3e-4f;
  o.beta1 = 0.8f;
  o.beta2 = 0.95f;
  o.weight_decay = 0.1f;
  optim_test::check_resume<optim::adamw>(o);
}

TEST_CASE("adamw rejects truncated, corrupt and mismatched states and changes nothing", "[optim][adamw][state]") {
  optim::adamw_options o, other;
  other.beta2 = 0.99f;
  optim_test::check_bad_states<optim::adamw>(o, other);
  optim::adamw a(o), b(other);
  a.add(3);
  b.add(3);
  const std::vector<std::uint8_t> saved = a.save_state();
  CHECK(message_of([&] { b.load_state(saved.data(), saved.size()); }) ==
        "scaler state: mixprec::optim::adamw: saved with beta2 = 0.999, this optimizer has 0.99");
  // Another optimizer's state, by its magic and by its payload.
  optim::sgd s;
  s.add(3);
  const std::vector<std::uint8_t> sgd_state = s.save_state();
  CHECK_THROWS_WITH(a.load_state(sgd_state.data(), sgd_state.size()), Catch::Contains("magic 'MXOPTADW'"));
  ::mixprec::detail::state_writer w;
  s.write(w);
  ::mixprec::detail::state_reader in(w.bytes.data(), w.bytes.size());
  CHECK_THROWS_WITH(a.decode(in), Catch::Contains("saved by optimizer 'sgd', this one is 'adamw'"));
  // decode then commit is load_state in two parts (how a session embeds the state).
  ::mixprec::detail::state_writer aw;
  a.write(aw);
  ::mixprec::detail::state_reader ain(aw.bytes.data(), aw.bytes.size());
  const optim::adamw::decoded d = a.decode(ain);
  CHECK(ain.remaining() == 0);
  a.add(4);
  CHECK_THROWS_WITH(a.commit(d), Catch::Contains("are registered now"));
}
