// What the programs in tests/exhaustive share besides the oracle: the list of type names, the
// parsing of comma-separated options, a seeded hash for reproducible pseudo-random inputs, and
// a binary-search lookup in the oracle's table.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "reference_format.hpp"
#include "sweep.hpp"

namespace mixprec_test {

// "all" or a comma-separated list of format names.
inline std::vector<std::string> type_names(const std::string& list) {
  if (list != "all") return split(list);
  return {"float16",         "bfloat16",      "float8_e4m3fn", "float8_e5m2",        "float8_e4m3fnuz",
          "float8_e5m2fnuz", "float6_e3m2fn", "float6_e2m3fn", "float4_e2m1fn",      "float8_e8m0fnu",
          "float8_ue4m3",    "float8_e4m3",   "float8_e3m4",   "float8_e4m3b11fnuz", "tfloat32"};
}

// Calls f(T{}) for each named type; false (after a message) if a name is unknown.
template <class F>
bool for_each_named_type(const std::vector<std::string>& names, F f) {
  for (const std::string& name : names) {
    if (!with_type_named(name, f)) {
      std::fprintf(stderr, "unknown type: %s\n", name.c_str());
      return false;
    }
  }
  return true;
}

// The main() of a sweep over formats: `<program> [<types_option> all|a,b,...] [--threads N]`
// runs sweep(tag, threads) for each named type (tag: a value of the type), prints the verdict and
// the time, and returns the exit status (2 for bad arguments).
template <class Sweep>
int run_type_sweep(int argc, char** argv, const char* program, const std::string& types_option, Sweep sweep) {
  std::string types = "all";
  unsigned threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == types_option && i + 1 < argc) {
      types = argv[++i];
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = static_cast<unsigned>(std::stoul(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [%s all|a,b,...] [--threads N]\n", argv[0], types_option.c_str());
      return 2;
    }
  }
  stopwatch clock;
  int status = 0;
  if (!for_each_named_type(type_names(types), [&](auto tag) { status |= sweep(tag, threads); })) return 2;
  std::printf("%s: %s in %.1f s\n", program, status == 0 ? "all results match" : "MISMATCHES", clock.seconds());
  return status;
}

// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): the i-th output of a seeded stream, so
// that input i is the same whatever the thread that checks it.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Random words for checking stochastic rounding against a threshold t = floor(fraction × 2^32)
// (capped at 2^32), where the rule is "away from zero iff t + random >= 2^32": the extremes 0
// and 2^32 - 1, and the two words on either side of the decision, 2^32 - t (away) and
// 2^32 - t - 1 (toward zero).  An off-by-one in a comparison shows on these, and almost never
// on hashed words.
inline std::vector<std::uint32_t> boundary_words(std::uint64_t t) {
  constexpr std::uint64_t two_to_32 = std::uint64_t{1} << 32;
  std::vector<std::uint32_t> words{0u, 0xFFFFFFFFu};
  if (t >= 1 && t <= two_to_32) words.push_back(static_cast<std::uint32_t>(two_to_32 - t));
  if (t <= 0xFFFFFFFFu) words.push_back(static_cast<std::uint32_t>(0xFFFFFFFFu - t));
  return words;
}

// Where a magnitude lies in the oracle's table, by bisection.  (locate()'s hint is where a
// linear walk starts; the last index as the hint makes it bisect the whole table.)
template <class V>
typename reference_format<V>::position locate(const reference_format<V>& oracle, const V& magnitude) {
  return oracle.locate(magnitude, static_cast<long>(oracle.positive_count()) - 1);
}

}  // namespace mixprec_test
