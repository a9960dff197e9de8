// scaling/fp8/state.hpp: the saved state of delayed scaling round-trips exactly, and every kind
// of damage is refused with a message naming it, leaving the scaler unchanged.
#include <mixprec/scaling/fp8/delayed_scaler.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace mixprec;
using bytes_t = std::vector<std::uint8_t>;

// A scaler after a few steps with varied amaxes (unused tensors, inf, NaN included).
delayed_scaler trained_scaler(const delayed_scaling& recipe, fp8_pass pass, std::size_t tensors, int steps) {
  delayed_scaler s(recipe, pass, tensors);
  std::mt19937 random(3);
  for (int step = 0; step < steps; ++step) {
    for (std::size_t t = 0; t < tensors; ++t) {
      const unsigned kind = random() % 8;
      if (kind == 0) continue;
      const float amax = kind == 1   ? std::numeric_limits<float>::infinity()
                         : kind == 2 ? std::numeric_limits<float>::quiet_NaN()
                                     : std::ldexp(1.0f + static_cast<float>(random() % 100) / 100.0f,
                                                  static_cast<int>(random() % 40) - 20);
      s.record_amax(t, amax);
    }
    s.update();
  }
  return s;
}

// Rewrites the checksum after an edit of the payload, so that the field checks are reached.
void fix_checksum(bytes_t& b) {
  const std::uint32_t crc = detail::crc32(b.data(), b.size() - 4);
  for (int i = 0; i < 4; ++i) b[b.size() - 4 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(crc >> (8 * i));
}

void put_f32(bytes_t& b, std::size_t at, float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(u >> (8 * i));
}

// Offset of the first scale in a state of the default recipe: header, name, options, pass,
// tensor count, iteration.
std::size_t scales_offset(const bytes_t& b, std::size_t tensors, std::size_t history) {
  return b.size() - 4 - tensors * (history + 1) * 4;
}

}  // namespace

TEST_CASE("a saved delayed-scaling state loads into an identical scaler and saves to the same bytes", "[fp8_state]") {
  delayed_scaling recipe;
  recipe.amax_history_len = 16;
  recipe.margin = 1;
  const delayed_scaler source = trained_scaler(recipe, fp8_pass::backward, 5, 40);
  const bytes_t bytes = source.save_state();
  CHECK(bytes.size() == 16 + 2 + 15 + 2 + (2 + 6 + 1 + 4) + (2 + 6 + 1 + 4) + (2 + 16 + 1 + 4) + (2 + 17 + 1 + 4) + 1 +
                            4 + 8 + 5 * 17 * 4 + 4);
  delayed_scaler target(delayed_scaling{}, fp8_pass::backward, 5);  // other options: replaced by the state's
  target.load_state(bytes);
  CHECK(target.save_state() == bytes);
  CHECK(target.recipe().margin == 1);
  CHECK(target.history_length() == 16);
  CHECK(target.iteration() == 40);
  for (std::size_t t = 0; t < 5; ++t) {
    CHECK(target.scale(t) == source.scale(t));
    CHECK(target.scale_inv(t) == source.scale_inv(t));
  }
  // Both go on identically.
  delayed_scaler a = source;
  for (delayed_scaler* s : {&a, &target}) {
    s->record_amax(2, 3.0f);
    s->update();
  }
  CHECK(a.save_state() == target.save_state());
}

TEST_CASE("state files are written whole and read back", "[fp8_state]") {
  const delayed_scaler source = trained_scaler(delayed_scaling{}, fp8_pass::forward, 3, 5);
  const std::string path = "fp8_state_test_state.bin";
  source.save_state_file(path);
  delayed_scaler target(delayed_scaling{}, fp8_pass::forward, 3);
  target.load_state_file(path);
  CHECK(target.save_state() == source.save_state());
  std::remove(path.c_str());
  CHECK_THROWS_AS(target.load_state_file(path), scaler_state_error);
}

TEST_CASE("damaged fp8 states are refused with the damage named, and the scaler is unchanged", "[fp8_state]") {
  delayed_scaling recipe;
  recipe.amax_history_len = 4;
  const delayed_scaler source = trained_scaler(recipe, fp8_pass::forward, 2, 10);
  const bytes_t good = source.save_state();
  delayed_scaler target(recipe, fp8_pass::forward, 2);
  const bytes_t before = target.save_state();
  const auto refused = [&](const bytes_t& b, const std::string& text) {
    INFO(text);
    CHECK_THROWS_WITH(target.load_state(b), Catch::Contains(text) && Catch::StartsWith("fp8 delayed scaling state"));
    CHECK(target.save_state() == before);
  };
  refused(bytes_t(good.begin(), good.begin() + 10), "shorter than the 20-byte frame");
  bytes_t b = good;
  b[0] = 'Z';
  refused(b, "magic 'MXFP8DLY'");
  b = good;
  b[8] = 2;
  refused(b, "is version 2, this build reads up to 1");
  refused(bytes_t(good.begin(), good.end() - 1), "truncated");
  b = good;
  b.push_back(0);
  refused(b, "trailing bytes");
  b = good;
  b[b.size() / 2] ^= 0x10;
  refused(b, "checksum mismatch");
  // Behind a correct checksum: wrong pass, tensor count, options, values.
  b = good;
  const std::size_t scales = scales_offset(b, 2, 4);
  b[scales - 13] = 1;  // the pass byte
  fix_checksum(b);
  refused(b, "saved for the backward pass");
  b = good;
  b[scales - 12] = 3;  // tensor count
  fix_checksum(b);
  refused(b, "holds 3 tensors, this scaler has 2");
  b = good;
  put_f32(b, scales, 0.0f);
  fix_checksum(b);
  refused(b, "scale of tensor 0 is 0");
  b = good;
  put_f32(b, scales + 4, std::numeric_limits<float>::infinity());
  fix_checksum(b);
  refused(b, "scale of tensor 1 is inf");
  b = good;
  put_f32(b, scales, 1e-40f);  // a finite scale whose inverse overflows
  fix_checksum(b);
  refused(b, "finite inverse");
  b = good;
  put_f32(b, scales + 8 + 4 * 5, -1.0f);  // tensor 1, slot 1
  fix_checksum(b);
  refused(b, "tensor 1, slot 1 is -1");
  b = good;
  b[16 + 2 + 15 + 2 + 2 + 6 + 1] = 9;  // margin 9: beyond 6 with e4m3
  fix_checksum(b);
  refused(b, "margin is 9");
  b = good;
  b[16 + 2 + 15 + 2 + 13 + 13 + 2 + 16 + 1] = 8;  // amax_history_len 8: the sizes no longer match
  fix_checksum(b);
  refused(b, "need");
  b = good;
  b[16 + 2 + 15 + 2 + 2] = 'x';  // the first option's key
  fix_checksum(b);
  refused(b, "option 0 is 'xargin', delayed_scaling expects 'margin'");
}

TEST_CASE("a state saved with a custom amax algorithm needs an amax function to load", "[fp8_state]") {
  delayed_scaling custom;
  custom.amax_compute_algo = amax_algorithm::custom;
  custom.amax_function = [](const float* history, std::size_t) { return history[0]; };
  const delayed_scaler source = trained_scaler(custom, fp8_pass::forward, 1, 3);
  delayed_scaler without(delayed_scaling{}, fp8_pass::forward, 1);
  CHECK_THROWS_WITH(without.load_state(source.save_state()), Catch::Contains("amax_function is empty"));
  delayed_scaler with(custom, fp8_pass::forward, 1);
  with.load_state(source.save_state());
  CHECK(with.save_state() == source.save_state());
}
