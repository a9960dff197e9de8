// Runs the scaler-state fuzz target (state_fuzz_target.cpp) on generated inputs, for compilers
// without libFuzzer: valid states of random scalers, mutated (bit flips, random and boundary
// bytes, boundary numbers written over 8-byte fields, truncations, extensions, repeated chunks),
// each fed whole and, through the framing selector, as a payload with a correct checksum.
//
//   state_fuzz_driver [iterations = 100000] [seed = 1] [--write-corpus DIR]
//
// --write-corpus writes the unmutated seeds as a libFuzzer corpus and exits.
#include <mixprec/scaling/loss_scaler.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern std::uint64_t state_fuzz_accepted;

namespace {

using namespace mixprec;
using bytes_t = std::vector<std::uint8_t>;

// A state of a scaler of the given policy after a random run with random options.
template <class Policy>
bytes_t random_state(const Policy& policy, std::mt19937_64& random) {
  scaler_options o;
  if (random() % 2) o.min_scale = 1.f;
  if (random() % 2) o.max_scale = 1e9f;
  o.at_floor = static_cast<floor_action>(random() % 2);  // clamp or throw_error
  o.max_consecutive_skips = static_cast<std::int64_t>(random() % 3) * 20;
  o.history_capacity = random() % 10;
  loss_scaler<Policy> scaler{policy, o};
  const auto steps = random() % 300;
  for (std::uint64_t i = 0; i < steps; ++i) {
    scaler.record_found_inf(random() % 5 == 0);
    try {
      scaler.update();
    } catch (const mixprec::error&) {
      scaler.update(o.min_scale > 0 ? o.min_scale : 1.f);
    }
  }
  return scaler.save_state();
}

std::vector<bytes_t> seeds(std::mt19937_64& random) {
  std::vector<bytes_t> out;
  for (int i = 0; i < 40; ++i) {
    dynamic_scaling d;
    d.growth_interval = 1 + static_cast<int>(random() % 20);
    bytes_t b = random_state(d, random);
    b.insert(b.begin(), 0);  // selector: dynamic_scaling, whole state
    out.push_back(b);
    hysteresis_scaling h;
    h.rules = random() % 2 ? hysteresis_scaling::rule_set::deepspeed : hysteresis_scaling::rule_set::megatron;
    h.growth_interval = 1 + static_cast<int>(random() % 20);
    h.consecutive_hysteresis = random() % 2;
    b = random_state(h, random);
    b.insert(b.begin(), 1);
    out.push_back(b);
  }
  bytes_t s = random_state(static_scaling{}, random);
  s.insert(s.begin(), 2);
  out.push_back(s);
  bytes_t n = random_state(no_scaling{}, random);
  n.insert(n.begin(), 3);
  out.push_back(n);
  return out;
}

// The payload of a whole state (selector byte kept): header and checksum dropped, framing bit set.
bytes_t as_payload(const bytes_t& whole) {
  bytes_t p(whole.begin() + 16, whole.end() - 4);  // the last header byte makes room for the selector
  p[0] = static_cast<std::uint8_t>(whole[0] | 4u);
  return p;
}

void mutate(bytes_t& b, std::mt19937_64& random) {
  static const double numbers[] = {0.0, -0.0, 1.0, -1.0, 1e300, 5e-324, 3.4028234663852886e38};
  const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  const std::size_t count = 1 + pick(4);
  for (std::size_t k = 0; k < count && b.size() > 1; ++k) {
    const std::size_t at = 1 + pick(b.size() - 1);  // the selector byte stays
    switch (random() % 8) {
      case 0:
        b[at] = static_cast<std::uint8_t>(b[at] ^ (1u << pick(8)));
        break;
      case 1:
        b[at] = static_cast<std::uint8_t>(random());
        break;
      case 2: {
        static const std::uint8_t boundary[] = {0x00, 0x01, 0x02, 0x7F, 0x80, 0xFE, 0xFF};
        b[at] = boundary[pick(sizeof boundary)];
        break;
      }
      case 3: {
        double x = numbers[pick(sizeof numbers / sizeof numbers[0])];
        if (random() % 4 == 0) x = std::nan("");
        if (random() % 4 == 0) x = random() % 2 ? INFINITY : -INFINITY;
        std::uint64_t u;
        std::memcpy(&u, &x, 8);
        if (random() % 3 == 0) u = random() % 2 ? (std::uint64_t{1} << 62) : ~std::uint64_t{0};
        for (std::size_t i = 0; i < 8 && at + i < b.size(); ++i) b[at + i] = static_cast<std::uint8_t>(u >> (8 * i));
        break;
      }
      case 4:
        b.resize(at);
        break;
      case 5:
        for (std::size_t i = pick(16) + 1; i > 0; --i) b.push_back(static_cast<std::uint8_t>(random()));
        break;
      case 6: {
        const std::size_t from = 1 + pick(b.size() - 1), length = 1 + pick(std::min<std::size_t>(32, b.size() - from));
        const bytes_t chunk(b.begin() + static_cast<std::ptrdiff_t>(from),
                            b.begin() + static_cast<std::ptrdiff_t>(from + length));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), chunk.begin(), chunk.end());
        break;
      }
      default:
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at));
        break;
    }
  }
  if (random() % 8 == 0) b[0] = static_cast<std::uint8_t>(random());  // another policy or framing
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t iterations = 100000, seed = 1;
  std::string corpus;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--write-corpus" && i + 1 < argc) {
      corpus = argv[++i];
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() > 0) iterations = std::strtoull(positional[0].c_str(), nullptr, 10);
  if (positional.size() > 1) seed = std::strtoull(positional[1].c_str(), nullptr, 10);

  std::mt19937_64 random(seed);
  const std::vector<bytes_t> valid = seeds(random);
  if (!corpus.empty()) {
    for (std::size_t i = 0; i < valid.size(); ++i) {
      for (const bytes_t& b : {valid[i], as_payload(valid[i])}) {
        const std::string path = corpus + "/seed" + std::to_string(i) + (b[0] & 4u ? "p" : "w");
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr || std::fwrite(b.data(), 1, b.size(), f) != b.size() || std::fclose(f) != 0) {
          std::fprintf(stderr, "cannot write %s\n", path.c_str());
          return 1;
        }
      }
    }
    std::printf("wrote %zu seeds to %s\n", 2 * valid.size(), corpus.c_str());
    return 0;
  }

  const auto start = std::chrono::steady_clock::now();
  for (const bytes_t& b : valid) {  // every seed is accepted, whole and framed
    const std::uint64_t before = state_fuzz_accepted;
    LLVMFuzzerTestOneInput(b.data(), b.size());
    const bytes_t p = as_payload(b);
    LLVMFuzzerTestOneInput(p.data(), p.size());
    if (state_fuzz_accepted != before + 2) {
      std::fprintf(stderr, "a valid seed state was refused\n");
      return 1;
    }
  }
  const std::uint64_t seeds_accepted = state_fuzz_accepted;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    const bytes_t& base = valid[static_cast<std::size_t>(random() % valid.size())];
    bytes_t input = random() % 2 ? as_payload(base) : base;
    mutate(input, random);
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("state fuzz: %llu mutated inputs in %.1f s, %llu accepted (valid states), the rest refused cleanly\n",
              static_cast<unsigned long long>(iterations), seconds,
              static_cast<unsigned long long>(state_fuzz_accepted - seeds_accepted));
  return 0;
}
