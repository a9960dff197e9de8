// Check of float -> T against the table oracle of reference_format.hpp, under the rounding and
// overflow modes asked for, on one of two input sets:
//
//   --inputs all        every one of the 2^32 floats (with --stride N: the magnitudes on the grid
//                       0, N, 2N, ..., both signs, plus every breakpoint below).  The magnitudes are
//                       cut into intervals on which the oracle's answer cannot change (between
//                       consecutive values of T and the midpoints between them, each of which is
//                       a float), the oracle is asked once per interval, and the library is run
//                       on every float of it.
//   --inputs sampled    the floats where rounding decides something: every value and every
//                       midpoint of T (and half the smallest value, and where max's successor
//                       would be), each with the four floats on either side, both signs; plus
//                       --random N random float bit patterns (a fixed seed; NaNs and infinities
//                       among them).  The oracle is asked for each input.  This is the check of
//                       the 16-bit formats under the modes that CI does not sweep exhaustively.
//
// Stochastic rounding is checked exactly per input: with random bits r the result must be the
// neighbour away from zero iff floor(fraction × 2^32) + r >= 2^32, fraction = (|x| - lower) / gap
// (stochastic_rule::proportional), iff 2^31 + r >= 2^32 for an inexact |x| (equal_probability).
// r is a hash of the input; on every sampled input and on the first input of each interval also
// the words on either side of the decision, 0 and 2^32 - 1.
//
// --subnormals flush (or both) checks subnormals::flush as well: below T's smallest normal the
// candidates are 0 and the smallest normal, the tie goes up under nearest_even and round-to-odd
// goes up (CPFloat's CPFLOAT_SUBN_RND), each decided here from |x| / min normal, an exact double.
//
//   float_to_format_sweep <type> [--modes all|<mode>,...] [--no-stochastic] [--stride N]
//                         [--inputs all|sampled] [--random N] [--threads N] [--subnormals keep|flush|both]
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
#include "program_support.hpp"
#include "reference_format.hpp"
#include "sweep.hpp"

namespace {

using namespace mixprec_test;
using mixprec::overflow;
using mixprec::rounding;

struct mode_pair {
  rounding r;
  overflow o;
  mixprec::subnormals s = mixprec::subnormals::keep;
};

// One way of rounding stochastically: the rule, and the subnormal policy.
struct stochastic_variant {
  mixprec::stochastic_rule rule;
  mixprec::subnormals s;
  const char* name;
};

struct options {
  std::string type;
  std::vector<mode_pair> modes;
  bool stochastic = true;
  std::vector<stochastic_variant> stochastic_variants;
  std::uint64_t stride = 1;
  bool sampled = false;                                  // --inputs sampled
  std::uint64_t random_inputs = std::uint64_t{1} << 28;  // with --inputs sampled
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

// The bit patterns of the positive float magnitudes where an answer can change: zero, half the
// smallest value of T, each value, each midpoint, and the value max's successor would have (those
// within float's range), sorted.
std::vector<std::uint32_t> breakpoints(const reference_format<double>& oracle) {
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
  return bits;
}

// Intervals of positive float magnitudes on which every deterministic answer is constant:
// each breakpoint, and the open stretches between them; then infinity, and the NaNs, which
// form their own intervals.
std::vector<interval> constant_intervals(const reference_format<double>& oracle) {
  const std::vector<std::uint32_t> bits = breakpoints(oracle);
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

// What stochastic rounding must give for the magnitudes of one interval of constant answer (or
// one input), under one overflow mode and one sign: the code toward zero and the code away from
// it, and how far |x| is from the lower neighbour, as the 32-bit threshold of the rule.
struct stochastic_rule {
  static constexpr std::uint64_t two_to_32 = std::uint64_t{1} << 32;
  std::uint32_t toward_zero = 0, away = 0;
  bool fixed = true;         // exact, special or out of the format's domain: always toward_zero
  bool always_away = false;  // e8m0 below its smallest value: that value stands in
  bool equal = false;        // equal_probability: 2^31 for every inexact magnitude
  double lower = 0, upper = 0, scale = 0;

  // floor(fraction × 2^32), capped at 2^32, with fraction = (m - lower) / gap, computed exactly:
  // lower <= m < upper <= 2 lower (or lower = 0), so m - lower is a double (Sterbenz), and
  // scale = 2^32 / gap is a power of two, so the product is exact too and below 2^32.  Past
  // max's successor (the last interval below infinity) the fraction is at least 1.
  std::uint64_t threshold(float magnitude) const {
    if (fixed) return 0;
    if (always_away || static_cast<double>(magnitude) >= upper) return two_to_32;
    if (equal) return two_to_32 / 2;
    return static_cast<std::uint64_t>((static_cast<double>(magnitude) - lower) * scale);
  }
  std::uint32_t expected(std::uint64_t threshold_value, std::uint32_t random) const {
    if (fixed) return toward_zero;
    return threshold_value + random >= two_to_32 ? away : toward_zero;
  }
  std::uint32_t expected(float magnitude, std::uint32_t random) const { return expected(threshold(magnitude), random); }
};

template <class T>
class float_sweep {
 public:
  explicit float_sweep(const options& opt)
      : opt_(opt), oracle_(parameters_of<T>()), name_(mixprec::format_name<typename T::format>()) {}

  int run() {
    stopwatch clock;
    if (opt_.sampled) {
      run_sampled();
    } else {
      run_all();
    }
    const double seconds = clock.seconds();
    const std::string what =
        opt_.sampled ? std::to_string(inputs_.load()) + " sampled float inputs (every value and midpoint +-4 ulps, " +
                           std::to_string(opt_.random_inputs) + " random)"
        : opt_.stride == 1
            ? std::string("every one of the 2^32 float inputs")
            : "2^32 float inputs / stride " + std::to_string(opt_.stride) + " and every value and midpoint";
    const std::string stochastic =
        opt_.stochastic ? " + " + std::to_string(opt_.stochastic_variants.size()) + " stochastic (2 overflow modes)"
                        : "";
    std::printf("%-16s %s, %zu deterministic mode triples%s: %llu checks, %llu mismatches, %.1f s\n", name_.c_str(),
                what.c_str(), opt_.modes.size(), stochastic.c_str(), static_cast<unsigned long long>(checks_.load()),
                static_cast<unsigned long long>(mismatches_.load()), seconds);
    return mismatches_ == 0 ? 0 : 1;
  }

 private:
  using storage = typename T::storage_type;
  using position = reference_format<double>::position;

  static std::string mode_name(const mode_pair& m) {
    return std::string(mixprec::to_string(m.r)) + (m.s == mixprec::subnormals::flush ? "/flush" : "");
  }
  void report(float x, const std::string& mode, const char* ovf, std::uint32_t expected, std::uint32_t actual) {
    report(x, mode.c_str(), ovf, expected, actual);
  }
  void report(float x, const char* mode, const char* ovf, std::uint32_t expected, std::uint32_t actual) {
    if (mismatches_.fetch_add(1) < 20) {
      std::lock_guard<std::mutex> lock(print_mutex_);
      std::printf("  MISMATCH %s x=%a (0x%08x) %s %s: expected 0x%02x, got 0x%02x\n", name_.c_str(),
                  static_cast<double>(x), bits_of(x), mode, ovf, expected, actual);
    }
  }

  // A magnitude's class and, for ordinary numbers, where the oracle puts it.
  struct located {
    bool is_nan = false, is_inf = false, is_zero = false, ordinary = false;
    double magnitude = 0;
    position pos{};
  };
  located locate_magnitude(float magnitude) const {
    located l;
    l.magnitude = static_cast<double>(magnitude);
    l.is_nan = std::isnan(magnitude);
    l.is_inf = std::isinf(magnitude);
    l.is_zero = magnitude == 0.0f;
    l.ordinary = !l.is_nan && !l.is_inf && !l.is_zero;
    if (l.ordinary) l.pos = locate(oracle_, static_cast<double>(magnitude));
    return l;
  }

  // subnormals::flush changes this magnitude's result: below T's smallest normal, in T's domain.
  bool flushed(const located& l, bool negative, mixprec::subnormals s) const {
    return s == mixprec::subnormals::flush && l.ordinary && oracle_.parameters().has_subnormals &&
           (!negative || oracle_.parameters().is_signed) && l.magnitude < min_normal_;
  }

  std::uint32_t expected_code(const located& l, bool negative, mode_pair m) const {
    if (flushed(l, negative, m.s)) {
      const double half = min_normal_ / 2;
      bool up = false;
      switch (m.r) {
        case rounding::nearest_even:  // the tie goes to the smallest normal (CPFloat)
        case rounding::nearest_away:
          up = l.magnitude >= half;
          break;
        case rounding::nearest_zero:
          up = l.magnitude > half;
          break;
        case rounding::toward_zero:
          up = false;
          break;
        case rounding::upward:
          up = !negative;
          break;
        case rounding::downward:
          up = negative;
          break;
        case rounding::to_odd:
          up = true;
          break;
      }
      return up ? min_normal_code(negative) : oracle_.zero(negative, m.o);
    }
    return l.is_nan    ? oracle_.nan(negative)
           : l.is_inf  ? oracle_.infinity(negative, m.o)
           : l.is_zero ? oracle_.zero(negative, m.o)
                       : oracle_.round(negative, l.pos, m.r, m.o);
  }

  // The code of ±(smallest normal), from the oracle's table.
  std::uint32_t min_normal_code(bool negative) const {
    return oracle_.round(negative, locate(oracle_, min_normal_), rounding::nearest_even, overflow::non_finite);
  }

  stochastic_rule stochastic_rule_for(const located& l, bool negative, overflow o, const stochastic_variant& v) const {
    stochastic_rule rule;
    rule.equal = v.rule == mixprec::stochastic_rule::equal_probability;
    if (flushed(l, negative, v.s)) {
      rule.fixed = false;
      rule.toward_zero = oracle_.zero(negative, o);
      rule.away = min_normal_code(negative);
      rule.lower = 0;
      rule.upper = min_normal_;
      rule.scale = 4294967296.0 / min_normal_;
      return rule;
    }
    if (!l.ordinary) {
      rule.toward_zero = expected_code(l, negative, {rounding::nearest_even, o});
      return rule;
    }
    if (negative && !oracle_.parameters().is_signed) {  // out of an unsigned format's domain
      rule.toward_zero = oracle_.round(true, l.pos, rounding::nearest_even, o);
      return rule;
    }
    const auto c = oracle_.stochastic_candidates(negative, l.pos, o);
    rule.toward_zero = c.toward_zero;
    rule.away = c.away;
    if (l.pos.exact) return rule;
    rule.fixed = false;
    rule.always_away = l.pos.below < 0 && !oracle_.parameters().has_subnormals;
    rule.lower = oracle_.lower_value(l.pos.below);
    rule.upper = oracle_.upper_value(l.pos.below);
    const double gap = rule.upper - rule.lower;
    int exponent = 0;
    if (std::frexp(gap, &exponent) != 0.5) throw std::logic_error("a gap between neighbours is not a power of two");
    rule.scale = 4294967296.0 / gap;
    return rule;
  }

  static std::uint32_t random_bits(std::uint32_t magnitude_bits, bool negative) {
    return mix(magnitude_bits * 2u + (negative ? 1u : 0u));
  }

  // --inputs all: every float on the stride grid, one oracle question per interval.
  void run_all() {
    const std::vector<interval> intervals = constant_intervals(oracle_);
    parallel_ranges(0, intervals.size(), 16, opt_.threads, [&](std::uint64_t first, std::uint64_t last) {
      std::uint64_t local_checks = 0;
      for (std::uint64_t k = first; k < last; ++k) local_checks += check_interval(intervals[k]);
      checks_ += local_checks;
    });
  }

  std::uint64_t check_interval(const interval iv) {
    // Inputs on the stride grid (the whole interval for stride 1), and always the one-float
    // intervals: the breakpoints (values, midpoints), where a wrong tie rule or an off-by-one
    // at a value shows and which a grid would almost always step over.
    const std::uint64_t stride = iv.first == iv.last ? 1 : opt_.stride;
    const std::uint64_t start = (iv.first + stride - 1) / stride * stride;
    if (start > iv.last) return 0;
    const std::uint64_t count = (iv.last - start) / stride + 1;
    const located l = locate_magnitude(float_of(static_cast<std::uint32_t>(start)));
    std::uint64_t checks = 0;
    for (int sign = 0; sign < 2; ++sign) {
      const bool negative = sign == 1;
      const std::uint32_t sign_bit = negative ? 0x80000000u : 0u;
      for (const mode_pair& m : opt_.modes) {
        const std::uint32_t expected = expected_code(l, negative, m);
        for (std::uint64_t u = start; u <= iv.last; u += stride) {
          const float x = float_of(static_cast<std::uint32_t>(u) | sign_bit);
          const storage actual = mixprec::convert<T>(x, m.r, m.o, m.s).bits();
          if (actual != expected) report(x, mode_name(m), mixprec::to_string(m.o), expected, actual);
        }
        checks += count;
      }
      if (!opt_.stochastic || !l.ordinary) continue;
      for (const stochastic_variant& v : opt_.stochastic_variants) {
        for (overflow o : all_overflows) {
          const stochastic_rule rule = stochastic_rule_for(l, negative, o, v);
          // The decision's edges, on the interval's first input.
          const float first_x = float_of(static_cast<std::uint32_t>(start) | sign_bit);
          const std::uint64_t t = rule.threshold(float_of(static_cast<std::uint32_t>(start)));
          for (std::uint32_t random : boundary_words(t)) {
            const std::uint32_t expected = rule.expected(t, random);
            const storage actual = mixprec::convert_stochastic<T>(first_x, random, o, v.rule, v.s).bits();
            if (actual != expected) report(first_x, v.name, mixprec::to_string(o), expected, actual);
            ++checks;
          }
          for (std::uint64_t u = start; u <= iv.last; u += stride) {
            const auto magnitude_bits = static_cast<std::uint32_t>(u);
            const float x = float_of(magnitude_bits | sign_bit);
            const std::uint32_t random = random_bits(magnitude_bits, negative);
            const std::uint32_t expected = rule.expected(float_of(magnitude_bits), random);
            const storage actual = mixprec::convert_stochastic<T>(x, random, o, v.rule, v.s).bits();
            if (actual != expected) report(x, v.name, mixprec::to_string(o), expected, actual);
          }
          checks += count;
        }
      }
    }
    return checks;
  }

  // One input, every mode asked for: the oracle is asked for this input alone.
  std::uint64_t check_input(std::uint32_t bits) {
    const bool negative = (bits >> 31) != 0;
    const std::uint32_t magnitude_bits = bits & 0x7FFFFFFFu;
    const float x = float_of(bits), magnitude = float_of(magnitude_bits);
    const located l = locate_magnitude(magnitude);
    std::uint64_t checks = 0;
    for (const mode_pair& m : opt_.modes) {
      const std::uint32_t expected = expected_code(l, negative, m);
      const storage actual = mixprec::convert<T>(x, m.r, m.o, m.s).bits();
      if (actual != expected) report(x, mode_name(m), mixprec::to_string(m.o), expected, actual);
      ++checks;
    }
    if (!opt_.stochastic) return checks;
    for (const stochastic_variant& v : opt_.stochastic_variants) {
      for (overflow o : all_overflows) {
        const stochastic_rule rule = stochastic_rule_for(l, negative, o, v);
        const std::uint64_t t = rule.threshold(magnitude);
        std::vector<std::uint32_t> words = boundary_words(t);
        words.push_back(random_bits(magnitude_bits, negative));
        for (std::uint32_t random : words) {
          const std::uint32_t expected = rule.expected(t, random);
          const storage actual = mixprec::convert_stochastic<T>(x, random, o, v.rule, v.s).bits();
          if (actual != expected) report(x, v.name, mixprec::to_string(o), expected, actual);
          ++checks;
        }
      }
    }
    return checks;
  }

  // --inputs sampled: the neighbourhoods of every breakpoint, then the random floats.
  void run_sampled() {
    std::vector<std::uint32_t> neighbourhoods;
    for (std::uint32_t p : breakpoints(oracle_)) {
      for (std::uint32_t d = 0; d <= 4; ++d) {
        if (p >= d) neighbourhoods.push_back(p - d);
        if (p + d <= 0x7F800000u) neighbourhoods.push_back(p + d);  // up to infinity
      }
    }
    std::sort(neighbourhoods.begin(), neighbourhoods.end());
    neighbourhoods.erase(std::unique(neighbourhoods.begin(), neighbourhoods.end()), neighbourhoods.end());
    const std::uint64_t fixed = neighbourhoods.size();
    parallel_ranges(0, fixed + opt_.random_inputs, 4096, opt_.threads, [&](std::uint64_t first, std::uint64_t last) {
      std::uint64_t local_checks = 0, local_inputs = 0;
      for (std::uint64_t k = first; k < last; ++k) {
        if (k < fixed) {
          local_checks += check_input(neighbourhoods[k]) + check_input(neighbourhoods[k] | 0x80000000u);
          local_inputs += 2;
        } else {
          local_checks += check_input(static_cast<std::uint32_t>(splitmix64(0x666C6F6174ull + (k - fixed))));
          ++local_inputs;
        }
      }
      checks_ += local_checks;
      inputs_ += local_inputs;
    });
  }

  const options& opt_;
  const reference_format<double> oracle_;
  const std::string name_;
  // T's smallest normal magnitude, 2^min_exponent, from the descriptor's fields (an oracle
  // parameter: the library's min_exponent is not read).
  const double min_normal_ = std::ldexp(1.0, (oracle_.parameters().has_subnormals ? 1 : 0) - oracle_.parameters().bias);
  std::atomic<std::uint64_t> checks_{0}, mismatches_{0}, inputs_{0};
  std::mutex print_mutex_;
};

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
    std::fprintf(stderr,
                 "usage: %s <type> [--modes all|<mode>,...] [--no-stochastic] [--stride N] "
                 "[--inputs all|sampled] [--random N] [--threads N] [--subnormals keep|flush|both]\n",
                 argv[0]);
    return 2;
  }
  options opt;
  opt.type = argv[1];
  std::string modes = "all";
  std::string subnormal_policies = "keep";
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
    } else if (arg == "--inputs" && i + 1 < argc) {
      const std::string inputs = argv[++i];
      if (inputs != "all" && inputs != "sampled") {
        std::fprintf(stderr, "--inputs takes all or sampled\n");
        return 2;
      }
      opt.sampled = inputs == "sampled";
    } else if (arg == "--random" && i + 1 < argc) {
      opt.random_inputs = std::stoull(argv[++i]);
    } else if (arg == "--subnormals" && i + 1 < argc) {
      subnormal_policies = argv[++i];
      if (subnormal_policies != "keep" && subnormal_policies != "flush" && subnormal_policies != "both") {
        std::fprintf(stderr, "--subnormals takes keep, flush or both\n");
        return 2;
      }
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
  std::vector<mixprec::subnormals> policies;
  if (subnormal_policies != "flush") policies.push_back(mixprec::subnormals::keep);
  if (subnormal_policies != "keep") policies.push_back(mixprec::subnormals::flush);
  for (mixprec::subnormals s : policies) {
    for (rounding r : roundings)
      for (overflow o : all_overflows) opt.modes.push_back({r, o, s});
    const bool flush = s == mixprec::subnormals::flush;
    opt.stochastic_variants.push_back(
        {mixprec::stochastic_rule::proportional, s, flush ? "stochastic/flush" : "stochastic"});
    opt.stochastic_variants.push_back(
        {mixprec::stochastic_rule::equal_probability, s, flush ? "stochastic_equal/flush" : "stochastic_equal"});
  }
  int status = 2;
  if (!with_type_named(opt.type, [&](auto tag) { status = float_sweep<decltype(tag)>(opt).run(); })) {
    std::fprintf(stderr, "unknown type: %s\n", opt.type.c_str());
  }
  return status;
}
