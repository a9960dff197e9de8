// Conversion between formats: convert<To>(minifloat<From>) for every ordered pair of the
// library's fifteen types (the diagonal included), every code of From (all 65536 for the 16-bit
// formats, 2^19 for tfloat32), every rounding mode and both overflow modes, plus the To(From)
// constructor; and From -> float /
// double (convert under every mode, static_cast), which must be exact.
//
// The source code is decoded independently by the textbook formula (reference_format.hpp's
// classify and textbook_value; every value of every format is a double), and the expected code
// is the table oracle's rounding of that exact value into To.  NaN follows the library's rule:
// the target's canonical quiet NaN with the sign bit of the source code where the target's NaN
// is signed, except that between IEEE-style formats that do not lose mantissa bits the payload
// is kept and the quiet bit set (IEEE 754-2019 §6.2.3); +max in fp6 / fp4, which have no NaN.
//
//   format_to_format_sweep [--from all|a,b,...] [--threads N]
//
// Prints, per source type, the codes and checks and the time; exits non-zero on any mismatch.
#include <mixprec/convert.hpp>

#include <atomic>
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

struct counts {
  std::atomic<std::uint64_t> checks{0}, mismatches{0};
  std::mutex print_mutex;
  void report(const std::string& what, std::uint32_t code, std::uint64_t expected, std::uint64_t actual) {
    if (mismatches.fetch_add(1) < 20) {
      std::lock_guard<std::mutex> lock(print_mutex);
      std::printf("  MISMATCH %s, code 0x%04x: expected 0x%llx, got 0x%llx\n", what.c_str(), code,
                  static_cast<unsigned long long>(expected), static_cast<unsigned long long>(actual));
    }
  }
};

// The NaN that converting the NaN `code` of `from` must produce in `to`, given the target's
// canonical quiet NaN codes of either sign.
std::uint64_t expected_nan(const format_parameters& from, std::uint32_t code, const format_parameters& to,
                           std::uint64_t canonical_positive, std::uint64_t canonical_negative) {
  const bool negative = (code & from.sign_bit()) != 0;
  const bool ieee_to_ieee = from.specials == mixprec::special_encoding::ieee &&
                            to.specials == mixprec::special_encoding::ieee && to.mantissa_bits >= from.mantissa_bits;
  if (!ieee_to_ieee) return negative ? canonical_negative : canonical_positive;
  const std::uint64_t payload = std::uint64_t{code & ((1u << from.mantissa_bits) - 1)}
                                << (to.mantissa_bits - from.mantissa_bits);
  return canonical_positive | payload | (negative ? std::uint64_t{1} << (to.exponent_bits + to.mantissa_bits) : 0);
}

template <class From, class To>
void check_pair(const reference_format<double>& from_oracle, unsigned threads, counts& c) {
  using from_storage = typename From::storage_type;
  const format_parameters from = from_oracle.parameters();
  const reference_format<double> oracle(parameters_of<To>());
  const format_parameters to = oracle.parameters();
  const std::string what =
      mixprec::format_name<typename From::format>() + " -> " + mixprec::format_name<typename To::format>();
  const std::uint32_t code_count = 1u << from.total_bits();
  parallel_ranges(0, code_count, 1024, threads, [&](std::uint64_t first, std::uint64_t last) {
    std::uint64_t local_checks = 0;
    for (std::uint64_t u = first; u < last; ++u) {
      const auto code = static_cast<std::uint32_t>(u);
      const From x = From::from_bits(static_cast<from_storage>(code));
      const bool negative = (code & from.sign_bit()) != 0;
      const code_class kind = classify(from, code);
      const double value = kind == code_class::finite ? textbook_value(from, code) : 0.0;
      reference_format<double>::position pos{};
      if (kind == code_class::finite && value != 0.0) pos = locate(oracle, std::fabs(value));
      for (rounding r : all_roundings) {
        for (overflow o : all_overflows) {
          std::uint64_t expected = 0;
          switch (kind) {
            case code_class::nan:
              expected = expected_nan(from, code, to, oracle.nan(false), oracle.nan(true));
              break;
            case code_class::infinity:
              expected = oracle.infinity(negative, o);
              break;
            case code_class::finite:
              expected = value == 0.0 ? oracle.zero(negative, o) : oracle.round(negative, pos, r, o);
              break;
          }
          const std::uint64_t actual = mixprec::convert<To>(x, r, o).bits();
          if (actual != expected)
            c.report(what + " " + mixprec::to_string(r) + " " + mixprec::to_string(o), code, expected, actual);
          ++local_checks;
          if (r == rounding::nearest_even && o == overflow::non_finite) {
            if constexpr (!std::is_same<From, To>::value) {
              const std::uint64_t constructed = To(x).bits();
              if (constructed != expected) c.report(what + " constructor", code, expected, constructed);
              ++local_checks;
            }
          }
        }
      }
    }
    c.checks += local_checks;
  });
}

// From -> float and From -> double: the exact value, ±inf (±max under saturate, the overflow
// rule of every conversion), or NaN by the rule above; the mode cannot matter otherwise.
template <class Wide, class Bits, class From>
void check_widening(const format_parameters& from, const format_parameters& wide, std::uint32_t code, From x,
                    const char* wide_name, counts& c, std::uint64_t& local_checks) {
  const bool negative = (code & from.sign_bit()) != 0;
  const Bits sign = negative ? Bits{1} << (sizeof(Bits) * 8 - 1) : Bits{0};
  const Bits infinity = static_cast<Bits>(((Bits{1} << wide.exponent_bits) - 1) << wide.mantissa_bits);
  const Bits quiet = static_cast<Bits>(infinity | (Bits{1} << (wide.mantissa_bits - 1)));
  const code_class kind = classify(from, code);
  Bits exact = 0;
  switch (kind) {
    case code_class::nan:
      exact = static_cast<Bits>(expected_nan(from, code, wide, quiet, sign | quiet));
      break;
    case code_class::infinity:
      exact = sign | infinity;
      break;
    case code_class::finite: {
      const double value = textbook_value(from, code);
      const auto narrow = static_cast<Wide>(value);
      if (static_cast<double>(narrow) != value) throw std::logic_error("a format value is not a float");
      std::memcpy(&exact, &narrow, sizeof(Bits));
      break;
    }
  }
  const std::string what = mixprec::format_name<typename From::format>() + " -> " + wide_name;
  auto bits = [](Wide w) {
    Bits b;
    std::memcpy(&b, &w, sizeof(Bits));
    return b;
  };
  for (rounding r : all_roundings) {
    for (overflow o : all_overflows) {
      const Bits expected =
          kind == code_class::infinity && o == overflow::saturate ? static_cast<Bits>(sign | (infinity - 1)) : exact;
      const Bits actual = bits(mixprec::convert<Wide>(x, r, o));
      if (actual != expected)
        c.report(what + " " + mixprec::to_string(r) + " " + mixprec::to_string(o), code, expected, actual);
      ++local_checks;
    }
  }
  const Bits cast = bits(static_cast<Wide>(x));
  if (cast != exact) c.report(what + " static_cast", code, exact, cast);
  ++local_checks;
}

template <class From>
int sweep_from(unsigned threads) {
  using from_storage = typename From::storage_type;
  stopwatch clock;
  counts c;
  const reference_format<double> from_oracle(parameters_of<From>());
  check_pair<From, mixprec::float16>(from_oracle, threads, c);
  check_pair<From, mixprec::bfloat16>(from_oracle, threads, c);
  check_pair<From, mixprec::float8_e4m3fn>(from_oracle, threads, c);
  check_pair<From, mixprec::float8_e5m2>(from_oracle, threads, c);
  check_pair<From, mixprec::float8_e4m3fnuz>(from_oracle, threads, c);
  check_pair<From, mixprec::float8_e5m2fnuz>(from_oracle, threads, c);
  check_pair<From, mixprec::float6_e3m2fn>(from_oracle, threads, c);
  check_pair<From, mixprec::float6_e2m3fn>(from_oracle, threads, c);
  check_pair<From, mixprec::float4_e2m1fn>(from_oracle, threads, c);
  check_pair<From, mixprec::float8_e8m0fnu>(from_oracle, threads, c);
  check_pair<From, mixprec::float8_ue4m3>(from_oracle, threads, c);
  check_pair<From, mixprec::float8_e4m3>(from_oracle, threads, c);
  check_pair<From, mixprec::float8_e3m4>(from_oracle, threads, c);
  check_pair<From, mixprec::float8_e4m3b11fnuz>(from_oracle, threads, c);
  check_pair<From, mixprec::tfloat32>(from_oracle, threads, c);
  const format_parameters from = from_oracle.parameters();
  const format_parameters binary32{8, 23, 127, true, true, mixprec::special_encoding::ieee};
  const format_parameters binary64{11, 52, 1023, true, true, mixprec::special_encoding::ieee};
  std::uint64_t widening_checks = 0;
  for (std::uint32_t code = 0; code < (1u << from.total_bits()); ++code) {
    const From x = From::from_bits(static_cast<from_storage>(code));
    check_widening<float, std::uint32_t>(from, binary32, code, x, "float", c, widening_checks);
    check_widening<double, std::uint64_t>(from, binary64, code, x, "double", c, widening_checks);
  }
  c.checks += widening_checks;
  std::printf(
      "%-18s -> 15 formats (14 modes + constructor), float and double (14 modes + static_cast): %u codes, "
      "%llu checks, %llu mismatches, %.1f s\n",
      mixprec::format_name<typename From::format>().c_str(), 1u << from.total_bits(),
      static_cast<unsigned long long>(c.checks.load()), static_cast<unsigned long long>(c.mismatches.load()),
      clock.seconds());
  return c.mismatches == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return mixprec_test::run_type_sweep(argc, argv, "format_to_format_sweep", "--from",
                                      [](auto tag, unsigned threads) { return sweep_from<decltype(tag)>(threads); });
}
