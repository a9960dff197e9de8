// double -> T under every rounding and overflow mode (and stochastic rounding), on the doubles
// where a conversion can go wrong: around every value and every midpoint of each format, for
// every named type.  Around each such point P (and -P): P itself, the four doubles on either
// side of it, and P × (1 ± 2^-30), P × (1 ± 2^-45), which a double -> float -> T conversion
// would collapse onto P.  Plus special inputs: ±0, ±inf, NaNs with payloads (quiet and
// signalling), double subnormals, and values beyond float's range in both directions.
//
// The expected code comes from the table oracle of reference_format.hpp on the double itself
// (every double, value and midpoint is exact in double, so the oracle's comparisons are exact).
// For each input the program also asks the oracle what double -> float -> T would give and
// counts the inputs where that differs: these are the inputs on which an implementation that
// rounds a double twice would fail, and the count shows that the test would catch it.
// Stochastic rounding is checked exactly, as in float_to_format_sweep.cpp.
//
//   double_to_format_sweep [--types all|a,b,...] [--threads N]
//
// Prints, per type, the inputs and checks, the double-rounding count and the time; exits
// non-zero on any mismatch.
#include <mixprec/convert.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "all_formats.hpp"
#include "reference_format.hpp"
#include "program_support.hpp"
#include "sweep.hpp"

namespace {

using namespace mixprec_test;
using mixprec::overflow;
using mixprec::rounding;

double double_of(std::uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}
std::uint64_t bits_of(double d) {
  std::uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

std::uint32_t mix(std::uint64_t x) {  // a cheap hash for the stochastic random bits
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x);
}

// The magnitudes of the crafted inputs.
std::vector<double> neighbourhood(double point) {
  std::vector<double> inputs{point};
  double below = point, above = point;
  for (int k = 1; k <= 4; ++k) {
    below = std::nextafter(below, 0.0);
    above = std::nextafter(above, HUGE_VAL);
    inputs.push_back(below);
    inputs.push_back(above);
  }
  for (int e : {-30, -45}) {
    inputs.push_back(point * (1.0 - std::ldexp(1.0, e)));
    inputs.push_back(point * (1.0 + std::ldexp(1.0, e)));
  }
  return inputs;
}

// Inputs that are not around a value or midpoint: every kind of double a conversion must
// classify (signed zeros, infinities, NaN payloads, subnormals) and magnitudes outside float.
std::vector<double> special_inputs() {
  std::vector<std::uint64_t> patterns{
      0x0000000000000000ull,  // +0
      0x7FF0000000000000ull,  // inf
      0x7FF8000000000000ull,  // quiet NaN
      0x7FF8000000000001ull,  // quiet NaN, lowest payload bit
      0x7FFFFFFFFFFFFFFFull,  // quiet NaN, every payload bit
      0x7FF0000000000001ull,  // signalling NaN, lowest payload bit
      0x7FF4000000000000ull,  // signalling NaN, top payload bit
      0x7FF0000020000000ull,  // signalling NaN whose payload would survive a truncation to float
      0x7FF0040000000000ull,  // signalling NaN whose payload would survive a truncation to fp16
      0x0000000000000001ull,  // smallest subnormal, 2^-1074
      0x0000000000000003ull, 0x000F0F0F0F0F0F0Full,
      0x000FFFFFFFFFFFFFull,  // largest subnormal
      0x0010000000000000ull,  // smallest normal, 2^-1022
      0x7FEFFFFFFFFFFFFFull,  // DBL_MAX
  };
  std::vector<double> inputs;
  for (std::uint64_t p : patterns) inputs.push_back(double_of(p));
  // Beyond float's range at the top (float's max, the point past which RN(float) is inf, 2^128)
  // and at the bottom (float's smallest subnormal and half of it), with neighbours.
  const double flt_max = static_cast<double>(std::numeric_limits<float>::max());
  for (double p : {flt_max, flt_max + std::ldexp(1.0, 103), std::ldexp(1.0, 128), std::ldexp(1.0, -149),
                   std::ldexp(1.0, -150), std::ldexp(1.0, -126)}) {
    for (double x : neighbourhood(p)) inputs.push_back(x);
  }
  for (double x : {1e39, 1e100, 1e300, 1e-46, 1e-50, 1e-300, 1e-320}) inputs.push_back(x);
  return inputs;
}

struct mode_pair {
  rounding r;
  overflow o;
};

template <class T>
int sweep(unsigned threads) {
  using storage = typename T::storage_type;
  const reference_format<double> oracle(parameters_of<T>());
  const std::string name = mixprec::format_name<typename T::format>();

  // Points: every positive value, every midpoint (the one between max and the value max would
  // have next is where nearest rounding overflows), half the smallest value, and that next value.
  std::vector<double> points{oracle.positive_value(0) / 2};
  for (std::size_t i = 0; i < oracle.positive_count(); ++i) {
    points.push_back(oracle.positive_value(i));
    points.push_back((oracle.positive_value(i) + oracle.upper_value(static_cast<long>(i))) / 2);
  }
  points.push_back(oracle.upper_value(static_cast<long>(oracle.positive_count()) - 1));
  std::vector<std::vector<double>> groups;
  for (double p : points) groups.push_back(neighbourhood(p));
  groups.push_back(special_inputs());

  std::vector<mode_pair> modes;
  for (rounding r : all_roundings)
    for (overflow o : all_overflows) modes.push_back({r, o});

  std::atomic<std::uint64_t> inputs{0}, checks{0}, mismatches{0}, double_rounding_inputs{0};
  std::vector<std::atomic<std::uint64_t>> double_rounding_by_mode(modes.size());
  std::mutex print_mutex;
  auto report = [&](double x, const char* mode, const char* ovf, std::uint32_t expected, std::uint32_t actual) {
    if (mismatches.fetch_add(1) < 20) {
      std::lock_guard<std::mutex> lock(print_mutex);
      std::printf("  MISMATCH %s x=%a (0x%016llx) %s %s: expected 0x%02x, got 0x%02x\n", name.c_str(), x,
                  static_cast<unsigned long long>(bits_of(x)), mode, ovf, expected, actual);
    }
  };
  // The oracle's answer for a double (a float's value included).
  auto expected_code = [&](double x, mode_pair m) -> std::uint32_t {
    const bool negative = std::signbit(x);
    if (std::isnan(x)) return oracle.nan(negative);
    if (std::isinf(x)) return oracle.infinity(negative, m.o);
    if (x == 0.0) return oracle.zero(negative, m.o);
    return oracle.round(negative, locate(oracle, std::fabs(x)), m.r, m.o);
  };

  stopwatch clock;
  parallel_ranges(0, groups.size(), 64, threads, [&](std::uint64_t first, std::uint64_t last) {
    std::uint64_t local_inputs = 0, local_checks = 0, local_double_rounding = 0;
    std::vector<std::uint64_t> local_by_mode(modes.size(), 0);
    for (std::uint64_t g = first; g < last; ++g) {
      for (double magnitude : groups[g]) {
        for (double x : {magnitude, -magnitude}) {
          ++local_inputs;
          const auto through_float = static_cast<double>(static_cast<float>(x));
          bool would_differ = false;
          for (std::size_t k = 0; k < modes.size(); ++k) {
            const mode_pair m = modes[k];
            const std::uint32_t expected = expected_code(x, m);
            const storage actual = mixprec::convert<T>(x, m.r, m.o).bits();
            if (actual != expected) report(x, mixprec::to_string(m.r), mixprec::to_string(m.o), expected, actual);
            if (!std::isnan(x) && expected_code(through_float, m) != expected) {
              would_differ = true;
              ++local_by_mode[k];
            }
            ++local_checks;
          }
          const std::uint32_t nearest = expected_code(x, {rounding::nearest_even, overflow::non_finite});
          if (T(x).bits() != nearest) report(x, "T(double)", "", nearest, T(x).bits());
          ++local_checks;
          if (would_differ) ++local_double_rounding;

          // Stochastic: the words around the decision (program_support.hpp) and two hashes.
          const bool negative = std::signbit(x);
          const bool ordinary = std::isfinite(x) && x != 0.0;
          for (overflow o : all_overflows) {
            std::uint32_t toward_zero = 0, away = 0;
            std::uint64_t t = 0;  // floor(fraction × 2^32), capped at 2^32
            if (!ordinary) {
              toward_zero = away = expected_code(x, {rounding::nearest_even, o});
            } else {
              const auto pos = locate(oracle, std::fabs(x));
              if (negative && !oracle.parameters().is_signed) {
                toward_zero = away = oracle.round(true, pos, rounding::nearest_even, o);
              } else {
                const auto c = oracle.stochastic_candidates(negative, pos, o);
                toward_zero = c.toward_zero;
                away = c.away;
                if (!pos.exact) {
                  // Exact: lower <= |x| < upper <= 2 lower (or lower = 0), so |x| - lower is a
                  // double (Sterbenz), and the gap is a power of two.  Past max's successor the
                  // fraction is at least 1, and stays so through rounding.
                  const double lower = oracle.lower_value(pos.below);
                  const double gap = oracle.upper_value(pos.below) - lower;
                  const double scaled = std::floor(std::ldexp((std::fabs(x) - lower) / gap, 32));
                  t = scaled >= 4294967296.0 ? std::uint64_t{1} << 32 : static_cast<std::uint64_t>(scaled);
                  if (pos.below < 0 && !oracle.parameters().has_subnormals) t = std::uint64_t{1} << 32;
                }
              }
            }
            std::vector<std::uint32_t> words = boundary_words(t);
            words.push_back(mix(bits_of(x)));
            words.push_back(mix(~bits_of(x)));
            for (std::uint32_t random : words) {
              const std::uint32_t expected = t + random >= (std::uint64_t{1} << 32) ? away : toward_zero;
              const storage actual = mixprec::convert_stochastic<T>(x, random, o).bits();
              if (actual != expected) report(x, "stochastic", mixprec::to_string(o), expected, actual);
              ++local_checks;
            }
            // equal_probability: the threshold is 2^31 for every inexact input whose fraction is
            // below 1 (a fraction of 1 or more, or e8m0's stand-in, is always away), also when
            // the lost part lies below the 32-bit window (t == 0 for a tiny excess).
            const bool inexact = ordinary && toward_zero != away;
            const std::uint64_t equal_t = !inexact ? 0 : t == (std::uint64_t{1} << 32) ? t : std::uint64_t{1} << 31;
            for (std::uint32_t random : {0u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu, mix(bits_of(x))}) {
              const std::uint32_t expected = equal_t + random >= (std::uint64_t{1} << 32) ? away : toward_zero;
              const storage actual =
                  mixprec::convert_stochastic<T>(x, random, o, mixprec::stochastic_rule::equal_probability).bits();
              if (actual != expected) report(x, "stochastic_equal", mixprec::to_string(o), expected, actual);
              ++local_checks;
            }
          }
        }
      }
    }
    inputs += local_inputs;
    checks += local_checks;
    double_rounding_inputs += local_double_rounding;
    for (std::size_t k = 0; k < modes.size(); ++k) double_rounding_by_mode[k] += local_by_mode[k];
  });
  const double seconds = clock.seconds();
  std::printf(
      "%-16s %llu double inputs, %llu checks (14 modes, T(double), stochastic x 2 x up to 6 random words, "
      "equal-probability x 2 x 5): %llu mismatches, %.1f s\n",
      name.c_str(), static_cast<unsigned long long>(inputs.load()), static_cast<unsigned long long>(checks.load()),
      static_cast<unsigned long long>(mismatches.load()), seconds);
  std::printf("%-16s double -> float -> T would differ on %llu inputs; per mode (non_finite/saturate):", name.c_str(),
              static_cast<unsigned long long>(double_rounding_inputs.load()));
  for (std::size_t k = 0; k < modes.size(); k += 2) {
    std::printf(" %s %llu/%llu", mixprec::to_string(modes[k].r),
                static_cast<unsigned long long>(double_rounding_by_mode[k].load()),
                static_cast<unsigned long long>(double_rounding_by_mode[k + 1].load()));
  }
  std::printf("\n");
  if (double_rounding_inputs == 0) {
    std::printf("%-16s ERROR: no input tells a double rounding apart; the inputs are not doing their job\n",
                name.c_str());
    return 1;
  }
  return mismatches == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return mixprec_test::run_type_sweep(argc, argv, "double_to_format_sweep", "--types",
                                      [](auto tag, unsigned threads) { return sweep<decltype(tag)>(threads); });
}
