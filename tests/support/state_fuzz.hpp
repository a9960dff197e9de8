// The generic part of the state fuzz drivers (tests/scaling/state_fuzz_driver.cpp,
// tests/fp8/state_fuzz_driver.cpp), for compilers without libFuzzer: valid states from the
// driver's seeds, mutated (bit flips, random and boundary bytes, boundary numbers written over
// 8-byte fields, truncations, extensions, repeated chunks), each fed to the fuzz target whole and,
// through the framing selector (bit 2 of the first byte), as a payload that the target frames
// with a correct header and checksum.
//
//   driver [iterations = 100000] [seed = 1] [--write-corpus DIR]
//
// --write-corpus writes the unmutated seeds as a libFuzzer corpus and exits.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <mixprec/scaling/state.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern std::uint64_t state_fuzz_accepted;

namespace state_fuzz {

using bytes_t = std::vector<std::uint8_t>;

// A whole state around `payload`: magic, version, size, payload, a correct CRC-32
// (scaling/state.hpp's frame), so that mutations reach the checks behind the checksum.
inline bytes_t framed(const char (&magic)[8], std::uint32_t version, const std::uint8_t* payload, std::size_t size) {
  bytes_t bytes(magic, magic + 8);
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(version >> (8 * i)));
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(size >> (8 * i)));
  bytes.insert(bytes.end(), payload, payload + size);
  const std::uint32_t crc = mixprec::detail::crc32(bytes.data(), bytes.size());
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(crc >> (8 * i)));
  return bytes;
}

// The payload of a whole state (selector byte kept): header and checksum dropped, framing bit set.
// A fuzz input as a state: after the selector byte, either the whole state (bit 2 of the
// selector clear) or a payload framed here with a correct header and checksum (bit 2 set).
// `size` is at least 1.
inline bytes_t state_from_input(const std::uint8_t* data, std::size_t size, const char (&magic)[8],
                                std::uint32_t version) {
  return (data[0] & 4u) ? framed(magic, version, data + 1, size - 1) : bytes_t(data + 1, data + size);
}

// The check of every fuzz target: `object` loads `bytes` all or nothing.  A refusal
// (scaler_state_error) must leave it as it was; an accepted state must save back to exactly
// `bytes` (no accepted garbage).  Anything else aborts.  Returns whether it was accepted.
template <class Stateful>
bool loads_all_or_nothing(Stateful& object, const bytes_t& bytes) {
  const bytes_t before = object.save_state();
  try {
    object.load_state(bytes);
  } catch (const mixprec::scaler_state_error&) {
    if (object.save_state() != before) std::abort();  // a refused state changed the object
    return false;
  }
  if (object.save_state() != bytes) std::abort();  // accepted, but not what it would have saved
  ++state_fuzz_accepted;
  return true;
}

inline bytes_t as_payload(const bytes_t& whole) {
  bytes_t p(whole.begin() + 16, whole.end() - 4);  // the last header byte makes room for the selector
  p[0] = static_cast<std::uint8_t>(whole[0] | 4u);
  return p;
}

inline void mutate(bytes_t& b, std::mt19937_64& random) {
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

// The driver: seeds(random) gives valid states, each with its selector byte in front.
inline int run_driver(int argc, char** argv, const std::function<std::vector<bytes_t>(std::mt19937_64&)>& seeds,
                      const char* label) {
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
  std::printf("%s: %llu mutated inputs in %.1f s, %llu accepted (valid states), the rest refused cleanly\n", label,
              static_cast<unsigned long long>(iterations), seconds,
              static_cast<unsigned long long>(state_fuzz_accepted - seeds_accepted));
  return 0;
}

}  // namespace state_fuzz
