// autocast/scope.hpp: scopes nest, restore on exit (exceptions included), are per thread, and
// decide each operation's result dtype by its category.
#include <mixprec/autocast/scope.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace mixprec;

TEST_CASE("outside every scope autocast is off and results promote like plain types", "[autocast]") {
  CHECK_FALSE(is_autocast_enabled());
  CHECK(autocast_result_dtype("matmul", {dtype::bfloat16, dtype::bfloat16}) == dtype::bfloat16);
  CHECK(autocast_result_dtype("matmul", {dtype::bfloat16, dtype::float32}) == dtype::float32);
  CHECK(autocast_result_dtype("softmax", {dtype::float16}) == dtype::float16);
}

TEST_CASE("inside a scope each category gets its dtype", "[autocast]") {
  autocast_scope<bfloat16> amp;
  CHECK(is_autocast_enabled());
  CHECK(current_autocast().lower_precision == dtype::bfloat16);
  // lower_precision: the scope's dtype, whatever the inputs
  CHECK(autocast_result_dtype("matmul", {dtype::float32, dtype::float32}) == dtype::bfloat16);
  CHECK(autocast_result_dtype("linear", {dtype::float16, dtype::float32}) == dtype::bfloat16);
  // fp32: float32, whatever the inputs
  CHECK(autocast_result_dtype("softmax", {dtype::bfloat16}) == dtype::float32);
  CHECK(autocast_result_dtype("layer_norm", {dtype::bfloat16}) == dtype::float32);
  CHECK(autocast_result_dtype("mse_loss", {dtype::bfloat16, dtype::bfloat16}) == dtype::float32);
  // promote: the widest input
  CHECK(autocast_result_dtype("add", {dtype::bfloat16, dtype::float32}) == dtype::float32);
  CHECK(autocast_result_dtype("cat", {dtype::bfloat16, dtype::bfloat16}) == dtype::bfloat16);
  // fallthrough: the input's own dtype
  CHECK(autocast_result_dtype("relu", {dtype::bfloat16}) == dtype::bfloat16);
  CHECK(autocast_result_dtype("relu", {dtype::float32}) == dtype::float32);
}

TEST_CASE("scopes nest, an inner float scope disables, and each exit restores what it found", "[autocast]") {
  {
    autocast_scope<float16> outer;
    CHECK(current_autocast().lower_precision == dtype::float16);
    {
      autocast_scope<bfloat16> inner;
      CHECK(current_autocast().lower_precision == dtype::bfloat16);
      {
        autocast_disabled off;
        CHECK_FALSE(is_autocast_enabled());
        CHECK(autocast_result_dtype("matmul", {dtype::float32, dtype::float32}) == dtype::float32);
        {
          autocast_options options;
          options.enabled = false;
          dynamic_autocast_scope also_off(dtype::float16, options);
          CHECK_FALSE(is_autocast_enabled());
        }
      }
      CHECK(current_autocast().lower_precision == dtype::bfloat16);
    }
    CHECK(is_autocast_enabled());
    CHECK(current_autocast().lower_precision == dtype::float16);
  }
  CHECK_FALSE(is_autocast_enabled());
}

TEST_CASE("an exception thrown inside scopes leaves the state as before them", "[autocast]") {
  try {
    autocast_scope<bfloat16> outer;
    autocast_scope<float16> inner;
    throw std::runtime_error("forward failed");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(is_autocast_enabled());
  CHECK(autocast_cache_statistics().entries == 0);
}

TEST_CASE("autocast to a dtype it cannot compute in is refused before anything changes", "[autocast]") {
  CHECK_THROWS_WITH(dynamic_autocast_scope(dtype::float8_e4m3fn),
                    Catch::Contains("float8_e4m3fn") && Catch::Contains("fp8 scaling recipes"));
  CHECK_THROWS_AS(dynamic_autocast_scope(dtype::float4_e2m1fn), invalid_argument);
  autocast_state bad;
  bad.enabled = true;
  bad.lower_precision = dtype::float32;
  CHECK_THROWS_AS(dynamic_autocast_scope(bad), invalid_argument);
  CHECK_FALSE(is_autocast_enabled());
}

TEST_CASE("a captured state is re-entered exactly (the backward pass of a forward under autocast)", "[autocast]") {
  autocast_state captured;
  {
    autocast_scope<float16> amp;
    captured = current_autocast();
  }
  CHECK_FALSE(is_autocast_enabled());
  dynamic_autocast_scope again(captured);
  CHECK(is_autocast_enabled());
  CHECK(autocast_result_dtype("mm", {dtype::float32, dtype::float32}) == dtype::float16);
}

TEST_CASE("a scope's policy applies inside it and its children; the default is standard()", "[autocast]") {
  auto custom = std::make_shared<autocast_policy>(*autocast_policy::standard());
  custom->set("my_attention", op_category::lower_precision);
  custom->set("softmax", op_category::fallthrough);
  autocast_options options;
  options.policy = custom;
  autocast_scope<bfloat16> amp(options);
  CHECK(autocast_result_dtype("my_attention", {dtype::float32}) == dtype::bfloat16);
  CHECK(autocast_result_dtype("softmax", {dtype::bfloat16}) == dtype::bfloat16);
  {
    autocast_scope<float16> inner;  // inherits the policy
    CHECK(autocast_result_dtype("my_attention", {dtype::float32}) == dtype::float16);
  }
}

TEST_CASE("eight threads with different scopes at once never see each other's state", "[autocast][threads]") {
  const dtype choices[] = {dtype::float16, dtype::bfloat16, dtype::float32};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2000; ++round) {
        const dtype mine = choices[(t + round) % 3];
        dynamic_autocast_scope scope(mine);
        const dtype expected = mine == dtype::float32 ? dtype::float32 : mine;
        if (autocast_result_dtype("matmul", {dtype::float32, dtype::float32}) != expected) ++wrong;
        if (is_autocast_enabled() != (mine != dtype::float32)) ++wrong;
        {
          autocast_disabled off;
          if (is_autocast_enabled()) ++wrong;
        }
        if (current_autocast().lower_precision != expected) ++wrong;
      }
      if (is_autocast_enabled()) ++wrong;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong.load() == 0);
}
