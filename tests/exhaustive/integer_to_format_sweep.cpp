// Integer -> T under every rounding mode and both overflow modes, for every type, and the
// T(integer) constructor:
//   every std::int64_t in [-2^20, 2^20] and every std::uint64_t in [0, 2^20];
//   around every power of two 2^k (k = 0..63) and around every value and every midpoint of T
//   that is an integer below 2^64: the point and the four integers on either side, as uint64
//   and (where they fit) as int64 of both signs;
//   INT64_MIN, INT64_MIN + 1, INT64_MAX, UINT64_MAX, UINT64_MAX - 1;
//   every value of the 8- and 16-bit integer types, and 32-bit integers around every power of
//   two and at their extremes (the conversion is a template over the integer type).
//
// The expected code is the table oracle's rounding of the integer's exact value: the oracle on
// doubles up to 2^53 (integers there are doubles), on exact fractions of Boost.Multiprecision
// integers (rational.hpp) above.
//
//   integer_to_format_sweep [--types all|a,b,...] [--threads N]
//
// Prints, per type, the inputs and checks and the time; exits non-zero on any mismatch.
#include <mixprec/convert.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "all_formats.hpp"
#include "program_support.hpp"
#include "rational.hpp"
#include "reference_format.hpp"
#include "sweep.hpp"

namespace {

using namespace mixprec_test;
using mixprec::overflow;
using mixprec::rounding;

constexpr std::uint64_t two_to_53 = std::uint64_t{1} << 53;

// The magnitudes, beyond [0, 2^20], whose neighbourhoods are swept.
template <class V>
std::vector<std::uint64_t> interesting_magnitudes(const reference_format<V>& oracle) {
  std::vector<std::uint64_t> points;
  for (int k = 0; k < 64; ++k) points.push_back(std::uint64_t{1} << k);
  for (std::size_t i = 0; i < oracle.positive_count(); ++i) {
    const double value = static_cast<double>(oracle.positive_value(i));
    const double midpoint = (value + static_cast<double>(oracle.upper_value(static_cast<long>(i)))) / 2;
    for (double p : {value, midpoint}) {
      if (p >= 1 << 20 && p < 18446744073709551616.0 && p == std::floor(p))
        points.push_back(static_cast<std::uint64_t>(p));
    }
  }
  std::vector<std::uint64_t> magnitudes;
  for (std::uint64_t p : points) {
    for (std::uint64_t d = 0; d <= 4; ++d) {
      if (p >= d) magnitudes.push_back(p - d);
      if (p <= std::numeric_limits<std::uint64_t>::max() - d) magnitudes.push_back(p + d);
    }
  }
  magnitudes.push_back(std::numeric_limits<std::uint64_t>::max());
  magnitudes.push_back(std::numeric_limits<std::uint64_t>::max() - 1);
  return magnitudes;
}

template <class T>
class integer_sweep {
 public:
  explicit integer_sweep(unsigned threads)
      : threads_(threads),
        oracle_(parameters_of<T>()),
        wide_oracle_(parameters_of<T>()),
        name_(mixprec::format_name<typename T::format>()) {}

  int run() {
    stopwatch clock;
    // Every integer of magnitude up to 2^20, both signs, as int64 and uint64.
    parallel_ranges(0, (std::uint64_t{1} << 20) + 1, 4096, threads_, [&](std::uint64_t first, std::uint64_t last) {
      std::uint64_t local = 0;
      for (std::uint64_t m = first; m < last; ++m) {
        local += check(static_cast<std::int64_t>(m));
        if (m != 0) local += check(-static_cast<std::int64_t>(m));
        local += check(m);
      }
      add(local);
    });
    // Neighbourhoods of powers of two and of T's values and midpoints.
    const std::vector<std::uint64_t> magnitudes = interesting_magnitudes(oracle_);
    parallel_ranges(0, magnitudes.size(), 256, threads_, [&](std::uint64_t first, std::uint64_t last) {
      std::uint64_t local = 0;
      for (std::uint64_t k = first; k < last; ++k) {
        const std::uint64_t m = magnitudes[k];
        local += check(m);
        if (m <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          local += check(static_cast<std::int64_t>(m));
          local += check(-static_cast<std::int64_t>(m));
        }
      }
      add(local);
    });
    std::uint64_t local = 0;
    const std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
    for (std::int64_t i : {int64_min, int64_min + 1, std::numeric_limits<std::int64_t>::max()}) local += check(i);
    // The other integer types: all 8- and 16-bit values; 32-bit around powers of two and extremes.
    for (int i = -128; i <= 127; ++i) local += check(static_cast<std::int8_t>(i));
    for (int i = 0; i <= 255; ++i) local += check(static_cast<std::uint8_t>(i));
    for (int i = -32768; i <= 32767; ++i) local += check(static_cast<std::int16_t>(i));
    for (int i = 0; i <= 65535; ++i) local += check(static_cast<std::uint16_t>(i));
    for (int k = 0; k < 32; ++k) {
      for (std::int64_t d = -4; d <= 4; ++d) {
        const std::int64_t p = (std::int64_t{1} << k) + d;
        if (p >= 0 && p <= std::numeric_limits<std::uint32_t>::max()) local += check(static_cast<std::uint32_t>(p));
        if (p >= 0 && p <= std::numeric_limits<std::int32_t>::max()) {
          local += check(static_cast<std::int32_t>(p));
          local += check(static_cast<std::int32_t>(-p));
        }
      }
    }
    for (std::int32_t i : {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()})
      local += check(i);
    local += check(std::numeric_limits<std::uint32_t>::max());
    add(local);

    std::printf("%-16s %llu integer inputs, %llu checks (14 modes + constructor): %llu mismatches, %.1f s\n",
                name_.c_str(), static_cast<unsigned long long>(inputs_.load()),
                static_cast<unsigned long long>(checks_.load()), static_cast<unsigned long long>(mismatches_.load()),
                clock.seconds());
    return mismatches_ == 0 ? 0 : 1;
  }

 private:
  void add(std::uint64_t checks) { checks_ += checks; }

  // Checks one integer in every mode; returns the number of checks.
  template <class Integer>
  std::uint64_t check(Integer i) {
    ++inputs_;
    bool negative = false;
    std::uint64_t magnitude = static_cast<std::uint64_t>(i);
    if constexpr (std::is_signed<Integer>::value) {
      negative = i < 0;
      if (negative) magnitude = std::uint64_t{0} - static_cast<std::uint64_t>(static_cast<std::int64_t>(i));
    }
    std::uint64_t count = 0;
    if (magnitude != 0 && magnitude <= two_to_53) {
      count = check_modes(i, negative, &oracle_, locate(oracle_, static_cast<double>(magnitude)));
    } else if (magnitude != 0) {
      count =
          check_modes(i, negative, &wide_oracle_, locate(wide_oracle_, exact_fraction::from_integer(magnitude, false)));
    } else {
      count = check_modes(i, false, &oracle_, {});
    }
    return count;
  }

  template <class Integer, class V>
  std::uint64_t check_modes(Integer i, bool negative, const reference_format<V>* oracle,
                            typename reference_format<V>::position pos) {
    std::uint64_t count = 0;
    for (rounding r : all_roundings) {
      for (overflow o : all_overflows) {
        const std::uint32_t expected = i == 0 ? oracle->zero(false, o) : oracle->round(negative, pos, r, o);
        const std::uint32_t actual = mixprec::convert<T>(i, r, o).bits();
        if (actual != expected) report(i, mixprec::to_string(r), mixprec::to_string(o), expected, actual);
        ++count;
        if (r == rounding::nearest_even && o == overflow::non_finite) {
          const std::uint32_t constructed = T(i).bits();
          if (constructed != expected) report(i, "T(integer)", "", expected, constructed);
          ++count;
        }
      }
    }
    return count;
  }

  template <class Integer>
  void report(Integer i, const char* mode, const char* ovf, std::uint32_t expected, std::uint32_t actual) {
    if (mismatches_.fetch_add(1) < 20) {
      std::lock_guard<std::mutex> lock(print_mutex_);
      const std::string text = std::numeric_limits<Integer>::is_signed
                                   ? std::to_string(static_cast<long long>(i))
                                   : std::to_string(static_cast<unsigned long long>(i));
      std::printf("  MISMATCH %s i=%s (%d-bit %s) %s %s: expected 0x%02x, got 0x%02x\n", name_.c_str(), text.c_str(),
                  static_cast<int>(8 * sizeof(Integer)),
                  std::numeric_limits<Integer>::is_signed ? "signed" : "unsigned", mode, ovf, expected, actual);
    }
  }

  unsigned threads_;
  reference_format<double> oracle_;
  reference_format<exact_fraction> wide_oracle_;
  std::string name_;
  std::atomic<std::uint64_t> inputs_{0}, checks_{0}, mismatches_{0};
  std::mutex print_mutex_;
};

}  // namespace

int main(int argc, char** argv) {
  return mixprec_test::run_type_sweep(argc, argv, "integer_to_format_sweep", "--types", [](auto tag, unsigned threads) {
    return integer_sweep<decltype(tag)>(threads).run();
  });
}
