// scaling/framework_state.hpp: PyTorch's five-key GradScaler state, DeepSpeed's DynamicLossScaler
// fields and Megatron-LM's DynamicGradScaler state go in and out exactly; a run imported
// mid-way continues as the framework would; states mixprec cannot reproduce are refused.
#include <mixprec/scaling/framework_state.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

using namespace mixprec;

namespace {
template <class Scaler>
void iterate(Scaler& scaler, bool overflow) {
  scaler.record_found_inf(overflow);
  scaler.update();
}
}  // namespace

TEST_CASE("PyTorch GradScaler state: export, import, and growth at the imported tracker", "[framework]") {
  loss_scaler<dynamic_scaling> scaler;
  for (int i = 0; i < 5; ++i) iterate(scaler, i == 1);
  const torch_grad_scaler_state out = export_torch_state(scaler);
  CHECK(out.scale == 32768.0);
  CHECK(out.growth_factor == 2.0);
  CHECK(out.backoff_factor == 0.5);
  CHECK(out.growth_interval == 2000);
  CHECK(out.growth_tracker == 3);

  torch_grad_scaler_state in;  // what torch.load(...)["scaler"] holds mid-run
  in.scale = 1024.0;
  in.growth_factor = 1.001;
  in.backoff_factor = 0.25;
  in.growth_interval = 10;
  in.growth_tracker = 9;
  import_torch_state(scaler, in);
  CHECK(scaler.policy().init_scale == 1024.f);  // GradScaler.load_state_dict sets _init_scale too
  CHECK(scaler.get_amp_stats().counters.steps == 0);
  iterate(scaler, false);  // the 10th clean update grows, with the double factor
  CHECK(scaler.state().scale == static_cast<double>(static_cast<float>(1024.0 * 1.001)));
  CHECK(scaler.state().growth_tracker == 0);

  in.scale = 0.1;  // a Python float: rounded to float32 as the scale tensor's fill_ does
  in.growth_tracker = 0;
  import_torch_state(scaler, in);
  CHECK(scaler.get_scale() == 0.1f);
}

TEST_CASE("PyTorch states mixprec cannot take are refused with the field named", "[framework]") {
  loss_scaler<dynamic_scaling> scaler;
  const scale_state before = scaler.state();
  torch_grad_scaler_state in;
  in.growth_tracker = 2000;
  CHECK_THROWS_WITH(import_torch_state(scaler, in),
                    Catch::Contains("growth_tracker 2000, not in [0, growth_interval 2000)"));
  in.growth_tracker = 0;
  in.scale = 0;
  CHECK_THROWS_WITH(import_torch_state(scaler, in), Catch::Contains("scale is 0"));
  in.scale = 1e39;
  CHECK_THROWS_AS(import_torch_state(scaler, in), scaler_state_error);
  in.scale = 8;
  in.growth_interval = std::int64_t{1} << 40;
  CHECK_THROWS_WITH(import_torch_state(scaler, in), Catch::Contains("growth_interval is 1099511627776"));
  in.growth_interval = 100;
  in.growth_factor = 0.5;
  CHECK_THROWS_WITH(import_torch_state(scaler, in), Catch::Contains("growth_factor is 0.5"));
  CHECK(scaler.state() == before);
}

TEST_CASE("DeepSpeed DynamicLossScaler fields: export, import, and growth timing after import", "[framework]") {
  hysteresis_scaling h;
  h.rules = hysteresis_scaling::rule_set::deepspeed;
  h.growth_interval = 4;
  h.hysteresis = 3;
  loss_scaler<hysteresis_scaling> scaler{h};
  for (int i = 0; i < 8; ++i) iterate(scaler, i == 2 || i == 3);
  const deepspeed_loss_scaler_state out = export_deepspeed_state(scaler);
  CHECK(out.cur_scale == 65536.0);  // two overflows absorbed by hysteresis; no growth yet
  CHECK(out.cur_iter == 8);
  CHECK(out.last_overflow_iter == 3);
  CHECK(out.cur_hysteresis == 1);
  CHECK(out.scale_factor == 2.0);
  CHECK(out.scale_window == 4);
  CHECK(out.delayed_shift == 3);

  deepspeed_loss_scaler_state in;
  in.cur_scale = 4294967296.0;  // 2^32: DeepSpeed's fused default
  in.cur_iter = 5000;
  in.last_overflow_iter = 4994;
  in.scale_window = 5;
  in.delayed_shift = 2;
  in.cur_hysteresis = 1;
  in.min_scale = 0.25;
  loss_scaler<hysteresis_scaling> imported;
  import_deepspeed_state(imported, in);
  CHECK(imported.policy().rules == hysteresis_scaling::rule_set::deepspeed);
  // stable_interval = cur_iter - last_overflow_iter - 1 = 5: a multiple of the window, grows now.
  iterate(imported, false);
  CHECK(imported.state().scale == 8589934592.0);
  CHECK(imported.state().hysteresis_tracker == 2);
  const deepspeed_loss_scaler_state back = export_deepspeed_state(imported);
  CHECK(back.cur_iter == 5001);
  CHECK(back.min_scale == 0.25);
}

TEST_CASE("DeepSpeed states mixprec cannot reproduce exactly are refused", "[framework]") {
  loss_scaler<hysteresis_scaling> scaler;
  deepspeed_loss_scaler_state in;
  in.scale_factor = 3;
  CHECK_THROWS_WITH(import_deepspeed_state(scaler, in), Catch::Contains("scale_factor is 3"));
  in.scale_factor = 2;
  in.min_scale = 0.1;
  CHECK_THROWS_WITH(import_deepspeed_state(scaler, in), Catch::Contains("min_scale is 0.1, not a float32 value"));
  in.min_scale = 1;
  in.cur_hysteresis = 0;
  CHECK_THROWS_WITH(import_deepspeed_state(scaler, in), Catch::Contains("hysteresis_tracker 0, below 1"));
  in.cur_hysteresis = 2;
  in.last_overflow_iter = 0;
  CHECK_THROWS_WITH(import_deepspeed_state(scaler, in),
                    Catch::Contains("last_overflow_iter is 0, not in [-1, cur_iter 0)"));
  in.last_overflow_iter = -1;
  in.cur_scale = 0.5;
  CHECK_THROWS_WITH(import_deepspeed_state(scaler, in), Catch::Contains("cur_scale 0.5 is below min_scale 1"));
  CHECK(scaler.policy().rules == hysteresis_scaling::rule_set::megatron);  // unchanged

  hysteresis_scaling odd;
  odd.rules = hysteresis_scaling::rule_set::deepspeed;
  odd.backoff_factor = 0.25f;
  CHECK_THROWS_WITH(export_deepspeed_state(loss_scaler<hysteresis_scaling>{odd}),
                    Catch::Contains("backoff_factor 0.25 is not 1 / growth_factor 2"));
  CHECK_THROWS_AS(export_deepspeed_state(loss_scaler<hysteresis_scaling>{}), scaler_state_error);
}

TEST_CASE("Megatron-LM DynamicGradScaler state: export, import, refusals", "[framework]") {
  hysteresis_scaling h;
  h.growth_interval = 3;
  loss_scaler<hysteresis_scaling> scaler{h};
  for (int i = 0; i < 4; ++i) iterate(scaler, i == 0);
  const megatron_grad_scaler_state out = export_megatron_state(scaler);
  CHECK(out.scale == 131072.0);  // the overflow used up hysteresis; the third clean update grew
  CHECK(out.growth_tracker == 0);
  CHECK(out.hysteresis_tracker == 2);

  megatron_grad_scaler_state in{512.0, 2, -3};  // three overflows past hysteresis since the last growth
  import_megatron_state(scaler, in);
  iterate(scaler, true);  // still out of hysteresis: backs off at once
  CHECK(scaler.get_scale() == 256.f);
  CHECK(scaler.state().hysteresis_tracker == -4);
  iterate(scaler, false);
  iterate(scaler, false);
  iterate(scaler, false);
  CHECK(scaler.get_scale() == 512.f);
  CHECK(scaler.state().hysteresis_tracker == 2);  // refilled by growth

  in.scale = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(import_megatron_state(scaler, in), Catch::Contains("grew past float32"));
  in.scale = 0.5;
  CHECK_THROWS_WITH(import_megatron_state(scaler, in), Catch::Contains("below min_scale 1"));
  in.scale = 2;
  in.growth_tracker = 3;
  CHECK_THROWS_AS(import_megatron_state(scaler, in), scaler_state_error);
  hysteresis_scaling ds;
  ds.rules = hysteresis_scaling::rule_set::deepspeed;
  loss_scaler<hysteresis_scaling> wrong{ds};
  CHECK_THROWS_WITH(import_megatron_state(wrong, megatron_grad_scaler_state{}),
                    Catch::Contains("set rules = megatron"));
  CHECK_THROWS_AS(export_megatron_state(wrong), scaler_state_error);
}

TEST_CASE("imported counters and scales are range-checked before any arithmetic on them", "[framework]") {
  // Regression: cur_iter - last_overflow_iter - 1 was computed before the range check, a signed
  // overflow (undefined behaviour) for cur_iter = INT64_MAX, last_overflow_iter = -1.
  hysteresis_scaling p;
  p.rules = hysteresis_scaling::rule_set::deepspeed;
  loss_scaler<hysteresis_scaling> scaler{p};
  const scale_state before = scaler.state();
  deepspeed_loss_scaler_state s;
  s.cur_iter = std::numeric_limits<std::int64_t>::max();
  s.last_overflow_iter = -1;
  CHECK_THROWS_WITH(import_deepspeed_state(scaler, s), Catch::Contains("cur_iter is 9223372036854775807"));
  s.cur_iter = 10;
  s.last_overflow_iter = std::numeric_limits<std::int64_t>::min();
  CHECK_THROWS_WITH(import_deepspeed_state(scaler, s), Catch::Contains("last_overflow_iter is"));
  s.last_overflow_iter = 10;  // must be below cur_iter
  CHECK_THROWS_AS(import_deepspeed_state(scaler, s), scaler_state_error);
  s.cur_iter = -1;
  s.last_overflow_iter = -1;
  CHECK_THROWS_WITH(import_deepspeed_state(scaler, s), Catch::Contains("cur_iter is -1"));
  CHECK(scaler.state() == before);

  // Doubles beyond float's range are refused without converting them (the conversion is undefined).
  s.cur_iter = 5;
  s.cur_scale = 1e300;
  CHECK_THROWS_WITH(import_deepspeed_state(scaler, s), Catch::Contains("cur_scale is 1e+300"));
  s.cur_scale = 0x1p128;  // DeepSpeed's double scale grown past float32
  CHECK_THROWS_AS(import_deepspeed_state(scaler, s), scaler_state_error);
  loss_scaler<dynamic_scaling> torch;
  torch_grad_scaler_state t;
  t.scale = -1e300;
  CHECK_THROWS_WITH(import_torch_state(torch, t), Catch::Contains("scale is -1e+300"));
  t.scale = 1e-300;  // rounds to float32 zero
  CHECK_THROWS_AS(import_torch_state(torch, t), scaler_state_error);
  t.scale = 1e-40;  // a float32 value whose inverse is not finite: no usable scale
  CHECK_THROWS_WITH(import_torch_state(torch, t), Catch::Contains("inverse"));
  CHECK(torch.get_scale() == 65536.f);
}
