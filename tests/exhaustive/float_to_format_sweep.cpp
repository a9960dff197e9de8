// Exhaustive check of float -> T: every one of the 2^32 float inputs, under the rounding and
// overflow modes asked for, against the table oracle of reference_format.hpp.
//
// The magnitudes are cut into intervals on which the oracle's answer cannot change (between
// consecutive values of T and the midpoints between them, each of which is a float), the
// oracle is asked once per interval, and the library is run on every float of it.  Stochastic
// rounding is checked exactly per input: with random bits r the result must be the neighbour
// away from zero iff floor(fraction × 2^32) + r >= 2^32, fraction = (|x| - lower) / gap.
//
//   float_to_format_sweep <type> [--modes all|<mode>,...] [--no-stochastic] [--stride N] [--threads N]
//
// Prints the number of inputs and checks, the mismatches (the first few in full) and the time;
// exits non-zero on any mismatch.
#include <mixprec/convert.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "all_formats.hpp"
#include "reference_format.hpp"
#include "sweep.hpp"

namespace {

using namespace mixprec_test;
using mixprec::overflow;
using mixprec::rounding;

struct mode_pair {
  rounding r;
  overflow o;
};

struct options {
  std::string type;
  std::vector<mode_pair> modes;
  bool stochastic = true;
  std::uint64_t stride = 1;
  unsigned threads = 0;
};

std::uint32_t mix(std::uint32_t x) {  // a cheap hash for the stochastic random bits
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

float float_of(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

struct interval {
  std::uint32_t first, last;  // magnitude bit patterns, inclusive
};

// Intervals of positive float magnitudes on which every deterministic answer is constant:
// each value of T, each midpoint, and the open stretches between them; then infinity and the
// NaNs one pattern at a time is not needed: they form their own intervals.
template <class V>
std::vector<interval> constant_intervals(const reference_format<V>& oracle) {
  std::vector<double> points{0.0, oracle.positive_value(0) / 2};
  for (std::size_t i = 0; i < oracle.positive_count(); ++i) {
    points.push_back(oracle.positive_value(i));
    const double upper = oracle.upper_value(static_cast<long>(i));
    points.push_back((oracle.positive_value(i) + upper) / 2);
    if (i + 1 == oracle.positive_count()) points.push_back(upper);
  }
  std::vector<std::uint32_t> bits;
  for (double p : points) {
    if (p > static_cast<double>(std::numeric_limits<float>::max())) continue;
    const auto f = static_cast<float>(p);
    if (static_cast<double>(f) != p) throw std::logic_error("a breakpoint is not a float");
    bits.push_back(bits_of(f));
  }
  std::sort(bits.begin(), bits.end());
  bits.erase(std::unique(bits.begin(), bits.end()), bits.end());
  std::vector<interval> result;
  constexpr std::uint32_t piece = 1u << 20;  // split long stretches so threads share the work
  auto add = [&](std::uint32_t first, std::uint32_t last) {
    for (std::uint32_t start = first;; start += piece) {
      const std::uint32_t end = last - start < piece ? last : start + piece - 1;
      result.push_back({start, end});
      if (end == last) break;
    }
  };
  for (std::size_t k = 0; k < bits.size(); ++k) {
    result.push_back({bits[k], bits[k]});
    const std::uint32_t next = k + 1 < bits.size() ? bits[k + 1] : 0x7F800000u;
    if (next > bits[k] + 1) add(bits[k] + 1, next - 1);
  }
  result.push_back({0x7F800000u, 0x7F800000u});  // infinity
  add(0x7F800001u, 0x7FFFFFFFu);                 // NaNs
  return result;
}

template <class T>
int sweep(const options& opt) {
  using storage = typename T::storage_type;
  const reference_format<double> oracle(parameters_of<T>());
  const std::vector<interval> intervals = constant_intervals(oracle);
  std::atomic<std::uint64_t> checks{0}, mismatches{0};
  std::mutex print_mutex;
  const std::string name = mixprec::format_name<typename T::format>();
  auto report = [&](float x, const char* mode, const char* ovf, std::uint32_t expected, std::uint32_t actual) {
    if (mismatches.fetch_add(1) < 20) {
      std::lock_guard<std::mutex> lock(print_mutex);
      std::printf("  MISMATCH %s x=%a (0x%08x) %s %s: expected 0x%02x, got 0x%02x\n", name.c_str(),
                  static_cast<double>(x), bits_of(x), mode, ovf, expected, actual);
    }
  };

  stopwatch clock;
  parallel_ranges(0, intervals.size(), 16, opt.threads, [&](std::uint64_t first_interval, std::uint64_t last_interval) {
    std::uint64_t local_checks = 0;
    for (std::uint64_t k = first_interval; k < last_interval; ++k) {
      const interval iv = intervals[k];
      // Inputs on the stride grid (the whole interval for stride 1).
      const std::uint64_t start = (iv.first + opt.stride - 1) / opt.stride * opt.stride;
      if (start > iv.last) continue;
      const float representative = float_of(static_cast<std::uint32_t>(start));
      const bool is_nan = std::isnan(representative), is_inf = std::isinf(representative);
      const bool is_zero = representative == 0.0f, ordinary = !is_nan && !is_inf && !is_zero;
      reference_format<double>::position pos{};
      if (ordinary) pos = oracle.locate(static_cast<double>(representative));
      for (int sign = 0; sign < 2; ++sign) {
        const bool negative = sign == 1;
        const std::uint32_t sign_bit = negative ? 0x80000000u : 0u;
        for (const mode_pair& m : opt.modes) {
          const std::uint32_t expected = is_nan    ? oracle.nan(negative)
                                         : is_inf  ? oracle.infinity(negative, m.o)
                                         : is_zero ? oracle.zero(negative, m.o)
                                                   : oracle.round(negative, pos, m.r, m.o);
          for (std::uint64_t u = start; u <= iv.last; u += opt.stride) {
            const float x = float_of(static_cast<std::uint32_t>(u) | sign_bit);
            const storage actual = mixprec::convert<T>(x, m.r, m.o).bits();
            if (actual != expected) report(x, mixprec::to_string(m.r), mixprec::to_string(m.o), expected, actual);
          }
          local_checks += (iv.last - start) / opt.stride + 1;
        }
        if (!opt.stochastic || !ordinary) continue;
        const double lower = oracle.lower_value(pos.below);
        const double gap = oracle.upper_value(pos.below) - lower;
        for (overflow o : all_overflows) {
          const bool out_of_domain = negative && !oracle.parameters().is_signed;
          const auto c = oracle.stochastic_candidates(negative, pos, o);
          const std::uint32_t domain_code = oracle.round(true, pos, rounding::nearest_even, o);
          for (std::uint64_t u = start; u <= iv.last; u += opt.stride) {
            const auto magnitude_bits = static_cast<std::uint32_t>(u);
            const float x = float_of(magnitude_bits | sign_bit);
            const std::uint32_t random = mix(magnitude_bits * 2u + static_cast<std::uint32_t>(sign));
            bool away = false;
            if (!pos.exact) {
              // Exact: |x| - lower is a double, gap is a power of two.
              const double fraction = (static_cast<double>(float_of(magnitude_bits)) - lower) / gap;
              away = std::floor(std::ldexp(fraction, 32)) + random >= 4294967296.0;
              if (pos.below < 0 && !oracle.parameters().has_subnormals) away = true;  // e8m0: smallest stands in
            }
            const std::uint32_t expected = out_of_domain ? domain_code : (away ? c.away : c.toward_zero);
            const storage actual = mixprec::convert_stochastic<T>(x, random, o).bits();
            if (actual != expected) report(x, "stochastic", mixprec::to_string(o), expected, actual);
          }
          local_checks += (iv.last - start) / opt.stride + 1;
        }
      }
    }
    checks += local_checks;
  });
  const double seconds = clock.seconds();
  std::printf(
      "%-16s 2^32 float inputs / stride %llu, %zu deterministic mode pairs%s: %llu checks, %llu mismatches, %.1f s\n",
      name.c_str(), static_cast<unsigned long long>(opt.stride), opt.modes.size(),
      opt.stochastic ? " + stochastic (2 overflow modes)" : "", static_cast<unsigned long long>(checks.load()),
      static_cast<unsigned long long>(mismatches.load()), seconds);
  return mismatches == 0 ? 0 : 1;
}

bool parse_mode(const std::string& name, rounding& r) {
  for (rounding candidate : all_roundings) {
    if (name == mixprec::to_string(candidate)) {
      r = candidate;
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <type> [--modes all|<mode>,...] [--no-stochastic] [--stride N] [--threads N]\n",
                 argv[0]);
    return 2;
  }
  options opt;
  opt.type = argv[1];
  std::string modes = "all";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--modes" && i + 1 < argc) {
      modes = argv[++i];
    } else if (arg == "--stride" && i + 1 < argc) {
      opt.stride = std::max(1ull, std::stoull(argv[++i]));
    } else if (arg == "--threads" && i + 1 < argc) {
      opt.threads = static_cast<unsigned>(std::stoul(argv[++i]));
    } else if (arg == "--no-stochastic") {
      opt.stochastic = false;
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", arg.c_str());
      return 2;
    }
  }
  std::vector<rounding> roundings;
  if (modes == "all") {
    roundings.assign(std::begin(all_roundings), std::end(all_roundings));
  } else {
    for (std::size_t start = 0;;) {
      const std::size_t comma = modes.find(',', start);
      const std::string mode = modes.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      rounding r;
      if (!parse_mode(mode, r)) {
        std::fprintf(stderr, "unknown rounding mode: %s\n", mode.c_str());
        return 2;
      }
      roundings.push_back(r);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  for (rounding r : roundings)
    for (overflow o : all_overflows) opt.modes.push_back({r, o});
  int status = 2;
  if (!with_type_named(opt.type, [&](auto tag) { status = sweep<decltype(tag)>(opt); })) {
    std::fprintf(stderr, "unknown type: %s\n", opt.type.c_str());
  }
  return status;
}
