// scaling/clipping.hpp: the global L2 norm over many arrays (accumulated in double), clipping by
// float(max_norm / (norm + epsilon)) only above max_norm, and a non-finite norm reported with the
// gradients left alone.
#include <mixprec/scaling/clipping.hpp>
#include <mixprec/scaling/loss_scaler.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace mixprec;

TEST_CASE("the global norm is the L2 norm of all arrays together, in double", "[clipping]") {
  std::vector<float> a = {3.f, 0.f};
  std::vector<bfloat16> b = {bfloat16(4.f)};
  std::vector<float16> h = {float16(12.f)};
  const std::vector<gradient_view> v = {{a.data(), a.size()}, {b.data(), b.size()}, {h.data(), h.size()}};
  CHECK(global_norm(v.data(), v.size()) == 13.0);
  // Squares beyond float's range stay exact enough in double.
  std::vector<float> big(3, 3e30f);
  const gradient_view vb(big.data(), big.size());
  CHECK(global_norm(&vb, 1) == Approx(std::sqrt(3.0) * static_cast<double>(3e30f)).epsilon(1e-15));
}

TEST_CASE("clip_grad_norm scales by max_norm / norm only above max_norm", "[clipping]") {
  std::vector<float> g = {3.f, 4.f};
  clip_result r = clip_grad_norm({{g.data(), g.size()}}, 10.0);
  CHECK((r.norm == 5.0 && r.finite && !r.clipped && r.coefficient == 1.f));
  CHECK((g[0] == 3.f && g[1] == 4.f));
  r = clip_grad_norm({{g.data(), g.size()}}, 1.0);
  CHECK((r.norm == 5.0 && r.clipped && r.coefficient == 0.2f));
  CHECK(g[0] == 3.f * 0.2f);
  CHECK(g[1] == 4.f * 0.2f);

  std::vector<float> p = {3.f, 4.f};
  clip_options torch_like;
  torch_like.epsilon = 1e-6;  // torch.nn.utils.clip_grad_norm_'s coefficient
  r = clip_grad_norm({{p.data(), p.size()}}, 1.0, torch_like);
  CHECK(r.coefficient == static_cast<float>(1.0 / (5.0 + 1e-6)));
}

TEST_CASE("a non-finite norm is reported and the gradients are left alone", "[clipping]") {
  std::vector<float> g = {1.f, std::numeric_limits<float>::infinity(), 2.f};
  const clip_result r = clip_grad_norm({{g.data(), g.size()}}, 1.0);
  CHECK_FALSE(r.finite);
  CHECK_FALSE(r.clipped);
  CHECK(std::isinf(r.norm));
  CHECK(g[0] == 1.f);
  std::vector<float> n = {std::nanf("")};
  CHECK(std::isnan(clip_grad_norm({{n.data(), n.size()}}, 1.0).norm));
  CHECK_THROWS_WITH(clip_grad_norm({{g.data(), g.size()}}, 0.0), Catch::Contains("max_norm is 0"));
}

TEST_CASE("clipping between unscale and step, as PyTorch's recipe", "[clipping]") {
  loss_scaler<dynamic_scaling> scaler;
  std::vector<float> g = {scaler.scale(30.f), scaler.scale(40.f)};
  REQUIRE(scaler.unscale(g.data(), g.size()));
  const clip_result r = clip_grad_norm({{g.data(), g.size()}}, 5.0);
  CHECK(r.norm == 50.0);
  CHECK(g[0] == 30.f * 0.1f);
  CHECK(scaler.step([] {}));
  scaler.update();
}
