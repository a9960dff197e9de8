// scaling/state.hpp through loss_scaler: a saved state loads back to the same scaler and encodes
// to the same bytes; truncated, corrupt, wrong-version, wrong-policy and out-of-range states are
// clear errors that leave the scaler unchanged; files work; and the fuzz property of the issue:
// 10^6 random steps with bounds never give a scale of 0, inf or NaN, and saving and loading at
// random points reproduces the uninterrupted trajectory exactly.
#include <mixprec/scaling/loss_scaler.hpp>
#include <mixprec/scaling/state.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace mixprec;

namespace {

template <class Scaler>
void iterate(Scaler& scaler, bool overflow) {
  float g[2] = {scaler.scale(0.25f), 1.f};
  if (overflow) g[0] = std::numeric_limits<float>::infinity();
  scaler.unscale(g, 2);
  scaler.step([] {});
  scaler.update();
}

// A scaler with some history: a few overflows and growths.
loss_scaler<hysteresis_scaling> busy_scaler() {
  hysteresis_scaling h;
  h.rules = hysteresis_scaling::rule_set::deepspeed;
  h.growth_interval = 3;
  h.consecutive_hysteresis = true;
  scaler_options o;
  o.max_scale = 1e6f;
  o.min_scale = 2.f;
  o.max_consecutive_skips = 50;
  o.history_capacity = 5;
  loss_scaler<hysteresis_scaling> s{h, o};
  for (int i = 0; i < 40; ++i) iterate(s, i % 7 == 2 || i % 11 == 0);
  return s;
}

template <class Scaler>
bool same(const Scaler& a, const Scaler& b) {
  const auto sa = a.get_amp_stats(), sb = b.get_amp_stats();
  return a.state() == b.state() && sa.counters == sb.counters && sa.history == sb.history;
}

std::vector<std::uint8_t> with_checksum(std::vector<std::uint8_t> bytes) {
  const std::uint32_t crc = detail::crc32(bytes.data(), bytes.size() - 4);
  for (int i = 0; i < 4; ++i)
    bytes[bytes.size() - 4 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(crc >> (8 * i));
  return bytes;
}

}  // namespace

TEST_CASE("a saved state loads back to the same scaler and re-encodes to the same bytes", "[state]") {
  const loss_scaler<hysteresis_scaling> saved = busy_scaler();
  const std::vector<std::uint8_t> bytes = saved.save_state();
  loss_scaler<hysteresis_scaling> loaded;  // default options and policy: all restored from the bytes
  loaded.load_state(bytes);
  CHECK(same(saved, loaded));
  CHECK(loaded.policy().rules == hysteresis_scaling::rule_set::deepspeed);
  CHECK(loaded.options().max_scale == 1e6f);
  CHECK(loaded.options().history_capacity == 5);
  CHECK(loaded.save_state() == bytes);
  loss_scaler<hysteresis_scaling> a = saved, b = loaded;
  for (int i = 0; i < 100; ++i) {
    iterate(a, i % 13 == 0);
    iterate(b, i % 13 == 0);
  }
  CHECK(same(a, b));

  loss_scaler<dynamic_scaling> d;
  iterate(d, true);
  loss_scaler<dynamic_scaling> d2;
  d2.load_state(d.save_state());
  CHECK(same(d, d2));
  loss_scaler<no_scaling> n;
  loss_scaler<no_scaling> n2;
  iterate(n, true);
  n2.load_state(n.save_state());
  CHECK(same(n, n2));
}

TEST_CASE("every truncation and every bit flip is an error that leaves the scaler unchanged", "[state]") {
  const std::vector<std::uint8_t> bytes = busy_scaler().save_state();
  loss_scaler<hysteresis_scaling> target;
  iterate(target, true);
  const loss_scaler<hysteresis_scaling> before = target;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    REQUIRE_THROWS_AS(target.load_state(bytes.data(), n), scaler_state_error);
  }
  for (std::size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::vector<std::uint8_t> flipped = bytes;
    flipped[bit / 8] = static_cast<std::uint8_t>(flipped[bit / 8] ^ (1u << (bit % 8)));
    REQUIRE_THROWS_AS(target.load_state(flipped), scaler_state_error);
  }
  std::vector<std::uint8_t> longer = bytes;
  longer.push_back(0);
  CHECK_THROWS_WITH(target.load_state(longer), Catch::Contains("trailing bytes"));
  CHECK(same(target, before));
  CHECK(target.save_state() == before.save_state());
}

TEST_CASE("errors name what is wrong: magic, version, size, checksum, policy", "[state]") {
  std::vector<std::uint8_t> bytes = busy_scaler().save_state();
  loss_scaler<hysteresis_scaling> target;
  CHECK_THROWS_WITH(target.load_state(bytes.data(), 10), Catch::Contains("10 bytes, shorter than the 20-byte frame"));
  std::vector<std::uint8_t> v = bytes;
  v[8] = 3;
  CHECK_THROWS_WITH(target.load_state(v), Catch::Equals("scaler state is version 3, this build reads up to 1"));
  v = bytes;
  v[0] = 'X';
  CHECK_THROWS_WITH(target.load_state(v), Catch::Contains("magic"));
  v = bytes;
  v[40] ^= 1;
  CHECK_THROWS_WITH(target.load_state(v), Catch::Contains("checksum mismatch") && Catch::Contains("corrupt"));
  CHECK_THROWS_WITH(target.load_state(std::vector<std::uint8_t>(bytes.begin(), bytes.end() - 7)),
                    Catch::Contains("truncated"));
  loss_scaler<dynamic_scaling> other;
  CHECK_THROWS_WITH(other.load_state(bytes),
                    Catch::Contains("saved by policy 'hysteresis_scaling', this scaler runs 'dynamic_scaling'"));
  CHECK_THROWS_AS(target.load_state(nullptr, 5), scaler_state_error);
}

namespace {
// Same name as dynamic_scaling, other options: a state from another build of a policy.
struct renamed_options {
  static constexpr const char* name = "dynamic_scaling";
  float init_scale = 65536;
  double growth = 2;
  scale_state initial_state() const {
    scale_state s;
    s.scale = init_scale;
    return s;
  }
  void update(scale_state&, bool) const {}
  template <class F>
  void visit_options(F&& f) {
    f("init_scale", init_scale);
    f("growth", growth);
  }
};
}  // namespace

TEST_CASE("well-formed states with wrong options or impossible values are refused", "[state]") {
  loss_scaler<dynamic_scaling> target;
  const auto before = target.save_state();
  CHECK_THROWS_WITH(target.load_state(loss_scaler<renamed_options>{}.save_state()),
                    Catch::Contains("2 policy options, dynamic_scaling has 4"));

  scaler_snapshot<dynamic_scaling> snap;
  snap.state = snap.policy.initial_state();
  snap.state.growth_tracker = 2000;
  CHECK_THROWS_WITH(target.load_state(encode_scaler_state(snap)), Catch::Contains("growth_tracker 2000, not in [0"));
  snap.state.growth_tracker = 0;
  snap.state.scale = 1.0 / 3.0;
  CHECK_THROWS_WITH(target.load_state(encode_scaler_state(snap)), Catch::Contains("not a finite float"));
  snap.state.scale = 65536;
  snap.policy.backoff_factor = 2;
  CHECK_THROWS_WITH(target.load_state(encode_scaler_state(snap)), Catch::Contains("backoff_factor is 2"));
  snap.policy.backoff_factor = 0.5;
  snap.counters.skipped_steps = 5;
  CHECK_THROWS_WITH(target.load_state(encode_scaler_state(snap)),
                    Catch::Contains("skipped_steps 5 not in [0, steps 0]"));
  snap.counters = {};
  snap.options.max_scale = 100.f;
  CHECK_THROWS_WITH(target.load_state(encode_scaler_state(snap)),
                    Catch::Contains("outside [min_scale 0, max_scale 100]"));
  snap.options.max_scale = std::numeric_limits<float>::infinity();
  snap.options.at_floor = floor_action::call_handler;
  snap.options.floor_handler = [](const floor_event&) { return 1.f; };
  const auto needs_handler = encode_scaler_state(snap);
  CHECK_THROWS_WITH(target.load_state(needs_handler), Catch::Contains("floor_handler is empty"));
  scaler_options with_handler;
  with_handler.floor_handler = [](const floor_event&) { return 2.f; };
  loss_scaler<dynamic_scaling> handled{dynamic_scaling{}, with_handler};
  handled.load_state(needs_handler);  // the handler is this scaler's
  CHECK(handled.options().at_floor == floor_action::call_handler);
  CHECK(handled.options().floor_handler);

  std::vector<std::uint8_t> bad_bool = loss_scaler<hysteresis_scaling>{}.save_state();
  // The last option, raise_at_min_scale (one byte), comes just before the scale_state (40 bytes),
  // the scaler options (22), the counters (48), the history count (4) and the checksum (4).
  const std::size_t bool_at = bad_bool.size() - 4 - 4 - 48 - 22 - 40 - 1;
  REQUIRE(bad_bool[bool_at] == 0);
  bad_bool[bool_at] = 2;
  loss_scaler<hysteresis_scaling> h;
  CHECK_THROWS_WITH(h.load_state(with_checksum(bad_bool)), Catch::Contains("is byte 2, not 0 or 1"));
  CHECK(target.save_state() == before);
}

TEST_CASE("states go to files and back; saving or loading mid-iteration is refused", "[state]") {
  const loss_scaler<hysteresis_scaling> saved = busy_scaler();
  const std::string path = "state_test_scaler.bin";
  saved.save_state_file(path);
  loss_scaler<hysteresis_scaling> loaded;
  loaded.load_state_file(path);
  CHECK(same(saved, loaded));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(loaded.load_state_file(path), Catch::Contains("cannot open 'state_test_scaler.bin'"));
  CHECK_THROWS_AS(saved.save_state_file("/nonexistent-directory/x.bin"), scaling_error);

  float g = 1.f;
  loaded.unscale(&g, 1);
  CHECK_THROWS_WITH(loaded.save_state(), Catch::Contains("save_state() in the middle of an iteration"));
  CHECK_THROWS_WITH(loaded.load_state(saved.save_state()), Catch::Contains("load_state() in the middle"));
}

namespace {

// The fuzz property, on one policy: random overflow patterns (long runs of overflows that
// reach the floor, long clean runs that reach the cap), bounds set; the scaler saved and loaded
// into a fresh object at random points must follow its uninterrupted twin exactly.
template <class Policy>
void fuzz_bounded_steps(const Policy& policy, std::uint64_t steps, std::uint64_t seed, std::uint64_t& reloads) {
  bool reached_cap = false;
  std::mt19937_64 random(seed);
  scaler_options o;
  o.min_scale = 1.f;
  o.max_scale = 16777216.f;
  loss_scaler<Policy> twin{policy, o}, reloaded{policy, o};
  std::uint64_t run = 0;
  bool overflowing = false;
  for (std::uint64_t i = 0; i < steps; ++i) {
    if (run == 0) {
      overflowing = random() % 3 == 0;
      run = 1 + random() % (overflowing ? 80 : 400);
    }
    --run;
    const bool overflow = overflowing ? random() % 8 != 0 : random() % 50 == 0;
    twin.record_found_inf(overflow);
    twin.update();
    reloaded.record_found_inf(overflow);
    reloaded.update();
    const double s = reloaded.state().scale;
    if (!(std::isfinite(s) && s >= 1 && s <= 16777216)) FAIL("step " << i << ": scale " << s);
    reached_cap = reached_cap || s == 16777216;
    if (random() % 1000 == 0) {
      loss_scaler<Policy> fresh{policy, o};
      fresh.load_state(reloaded.save_state());
      reloaded = fresh;
      ++reloads;
    }
    if (!same(twin, reloaded)) FAIL("step " << i << ": the reloaded scaler left the trajectory");
  }
  CHECK(reached_cap);
  CHECK(twin.get_amp_stats().counters.floor_hits > 100);  // overflows at the floor, held there
}

}  // namespace

TEST_CASE("10^6 random bounded steps: never 0, inf or NaN; save/load keeps the trajectory", "[state][fuzz]") {
  std::uint64_t reloads = 0;
  dynamic_scaling d;
  d.growth_interval = 7;
  fuzz_bounded_steps(d, 250'000, 1, reloads);
  d.growth_factor = 1e3;
  d.backoff_factor = 1e-3;
  d.growth_interval = 2;
  fuzz_bounded_steps(d, 250'000, 2, reloads);
  hysteresis_scaling h;
  h.growth_interval = 5;
  h.min_scale = 0.001f;
  h.backoff_factor = 0.125f;
  fuzz_bounded_steps(h, 250'000, 3, reloads);
  h.rules = hysteresis_scaling::rule_set::deepspeed;
  h.growth_factor = 8.f;
  h.consecutive_hysteresis = true;
  fuzz_bounded_steps(h, 250'000, 4, reloads);
  CHECK(reloads > 500);
  WARN("10^6 bounded steps, " << reloads << " save/load round trips");
}

namespace {
// The names in a directory other than "." and "..".
std::vector<std::string> directory_entries(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) names.push_back(entry.path().filename());
  return names;
}
}  // namespace

TEST_CASE("two writers and a reader on one path: never a torn file, never a failed save", "[state][threads]") {
  // Regression: every save wrote "<path>.tmp" and renamed it, so two writers shared the temporary
  // file: readers saw torn states under the real name and saves failed with "cannot rename".
  const std::string directory = "state_test_concurrent_saves";
  std::filesystem::remove_all(directory);
  std::filesystem::create_directory(directory);
  const std::string path = directory + "/scaler.bin";
  loss_scaler<hysteresis_scaling> first = busy_scaler();
  loss_scaler<hysteresis_scaling> second;  // a different state: the fresh one
  const std::vector<std::uint8_t> first_bytes = first.save_state(), second_bytes = second.save_state();
  REQUIRE(first_bytes != second_bytes);
  first.save_state_file(path);

  constexpr int saves = 300;
  std::atomic<int> failed_saves{0}, torn_reads{0}, reads{0};
  std::atomic<bool> writing{true};
  const auto writer = [&](const loss_scaler<hysteresis_scaling>& scaler) {
    for (int i = 0; i < saves; ++i) {
      try {
        scaler.save_state_file(path);
      } catch (const std::exception&) {
        ++failed_saves;
      }
    }
  };
  std::thread reader([&] {
    while (writing.load()) {
      std::ifstream in(path, std::ios::binary);
      const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (bytes != first_bytes && bytes != second_bytes) ++torn_reads;
      ++reads;
    }
  });
  std::thread a(writer, std::cref(first)), b(writer, std::cref(second));
  a.join();
  b.join();
  writing = false;
  reader.join();
  CHECK(failed_saves == 0);
  CHECK(torn_reads == 0);
  CHECK(reads > 0);
  // Only the target is left: no temporary file of either writer.
  CHECK(directory_entries(directory) == std::vector<std::string>{"scaler.bin"});
  std::filesystem::remove_all(directory);
}

TEST_CASE("a save through a symbolic link replaces the file it names; a dangling link is an error", "[state]") {
  const std::string directory = "state_test_links";
  std::filesystem::remove_all(directory);
  std::filesystem::create_directory(directory);
  const loss_scaler<hysteresis_scaling> saved = busy_scaler();
  std::filesystem::create_symlink("real.bin", directory + "/link.bin");
  CHECK_THROWS_WITH(saved.save_state_file(directory + "/link.bin"), Catch::Contains("symbolic link to no file"));
  { std::ofstream(directory + "/real.bin") << "old"; }
  saved.save_state_file(directory + "/link.bin");
  CHECK(std::filesystem::is_symlink(directory + "/link.bin"));
  loss_scaler<hysteresis_scaling> loaded;
  loaded.load_state_file(directory + "/real.bin");
  CHECK(same(saved, loaded));
  std::filesystem::remove_all(directory);
}
