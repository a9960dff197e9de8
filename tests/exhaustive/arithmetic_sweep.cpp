// Arithmetic of every type against the exactly rounded result: + - × / (and the compound
// assignments, which must equal them), unary minus on every code, and the six comparisons.
//
//   types of at most 8 bits   every pair of codes, every operation;
//   float16, bfloat16         all pairs among edge codes (zeros, subnormals, min normal, max,
//                             inf, NaNs, values around 1 and 2, both signs) plus --random-pairs
//                             random pairs per operation (fixed seed; half of them with exponents
//                             close together, where additions cancel and ties happen);
//   comparisons               every pair for the small types; for the 16-bit ones the pairs
//                             above, or all 2^32 pairs with --comparisons all.
//
// The expected result never uses the library: each code is decoded by the textbook formula
// (reference_format.hpp's textbook_value), IEEE 754-2019 §6 and §7 decide the special cases
// (NaN operands, inf - inf, 0 × inf, x / 0, the sign of an exact zero per §6.3), and a finite
// result is computed exactly and rounded to nearest-even by the table oracle
// reference_format<V>, which also applies the format's rules for what it cannot hold
// (overflow, zero and negatives in e8m0, -0 in fnuz).  The exact value is held two ways:
//   exact_fraction  a fraction of Boost.Multiprecision integers (rational.hpp): exact by
//                   construction;
//   rounded_real    nearest double + sign of the rest (rounded_real.hpp): exact for comparisons
//                   with doubles, and fast.
// The small types use both on every pair (and fail if the two oracles ever disagree); the
// 16-bit types use rounded_real on every pair and exact_fraction on every pair of edge codes
// and on every --exact-every-th random pair.  A NaN result may carry either sign (IEEE
// 754-2019 §6.3 leaves the sign of a NaN result unspecified) but must be the format's
// canonical NaN code; fp6/fp4 have no NaN, and their conversion rule makes it +max.
//
//   arithmetic_sweep [--types all|a,b,...] [--random-pairs N] [--exact-every K]
//                    [--comparisons sampled|all] [--threads N]
//
// Prints, per type, what was checked and the time; exits non-zero on any mismatch.
#include <mixprec/types.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "all_formats.hpp"
#include "rational.hpp"
#include "reference_format.hpp"
#include "program_support.hpp"
#include "rounded_real.hpp"
#include "sweep.hpp"

namespace {

using namespace mixprec_test;

enum class operation { add, subtract, multiply, divide };
constexpr operation all_operations[] = {operation::add, operation::subtract, operation::multiply, operation::divide};
const char* symbol(operation op) {
  switch (op) {
    case operation::add:
      return "+";
    case operation::subtract:
      return "-";
    case operation::multiply:
      return "*";
    case operation::divide:
      return "/";
  }
  return "?";
}

struct options {
  std::uint64_t random_pairs = std::uint64_t{1} << 24;
  std::uint64_t exact_every = 64;
  bool all_comparison_pairs = false;
  unsigned threads = 0;
};

// A code read by the textbook formula.  value: the exact value for finite codes (signed, -0.0
// for the negative zero), ±inf for infinities; meaningless for NaN.
struct decoded {
  code_class kind;
  bool negative;
  double value;
  bool is_zero() const { return kind == code_class::finite && value == 0.0; }
};

decoded decode(const format_parameters& p, std::uint32_t code) {
  const bool negative = (code & p.sign_bit()) != 0;
  const code_class kind = classify(p, code);
  double value = 0.0;
  if (kind == code_class::finite) value = textbook_value(p, code);
  if (kind == code_class::infinity) value = negative ? -HUGE_VAL : HUGE_VAL;
  return {kind, negative, value};
}

// What IEEE 754-2019 says a op b is, before rounding into the format.
enum class outcome_kind { nan, infinity, zero, number };
struct outcome {
  outcome_kind kind;
  bool negative;
};

outcome ieee_outcome(operation op, decoded a, decoded b) {
  if (a.kind == code_class::nan || b.kind == code_class::nan) return {outcome_kind::nan, false};  // §6.2
  const bool a_inf = a.kind == code_class::infinity, b_inf = b.kind == code_class::infinity;
  const bool product_negative = a.negative != b.negative;  // sign of × and ÷ (§6.3)
  switch (op) {
    case operation::subtract:  // a - b = a + (-b) (§5.4.1)
      b.negative = !b.negative;
      b.value = -b.value;
      [[fallthrough]];
    case operation::add:
      if (a_inf && b_inf) return {a.negative == b.negative ? outcome_kind::infinity : outcome_kind::nan, a.negative};
      if (a_inf) return {outcome_kind::infinity, a.negative};  // §6.1
      if (b_inf) return {outcome_kind::infinity, b.negative};
      if (a.value == -b.value) {
        // §6.3: an exact zero sum is +0 under round-to-nearest, unless both addends are zeros
        // of the same sign (x + x keeps the sign of x).
        return {outcome_kind::zero, a.is_zero() && b.is_zero() && a.negative && b.negative};
      }
      return {outcome_kind::number, a.value + b.value < 0.0};  // rounding keeps the sign of a sum
    case operation::multiply:
      if ((a_inf && b.is_zero()) || (b_inf && a.is_zero())) return {outcome_kind::nan, false};  // §7.2
      if (a_inf || b_inf) return {outcome_kind::infinity, product_negative};
      if (a.is_zero() || b.is_zero()) return {outcome_kind::zero, product_negative};
      return {outcome_kind::number, product_negative};
    case operation::divide:
      if ((a_inf && b_inf) || (a.is_zero() && b.is_zero())) return {outcome_kind::nan, false};  // §7.2
      if (a_inf) return {outcome_kind::infinity, product_negative};
      if (b_inf) return {outcome_kind::zero, product_negative};
      if (b.is_zero()) return {outcome_kind::infinity, product_negative};  // §7.3 division by zero
      if (a.is_zero()) return {outcome_kind::zero, product_negative};
      return {outcome_kind::number, product_negative};
  }
  return {outcome_kind::nan, false};
}

// |a op b| for finite non-zero results, exactly.
rounded_real exact_magnitude(operation op, double a, double b, const rounded_real*) {
  switch (op) {
    case operation::add: {
      const rounded_real sum = exact_sum(a, b);
      return sum.nearest() < 0.0 ? -sum : sum;
    }
    case operation::subtract: {
      const rounded_real difference = exact_difference(a, b);
      return difference.nearest() < 0.0 ? -difference : difference;
    }
    case operation::multiply:
      return exact_product(std::fabs(a), std::fabs(b));
    case operation::divide:
      return exact_quotient(std::fabs(a), std::fabs(b));
  }
  return {};
}

exact_fraction exact_magnitude(operation op, double a, double b, const exact_fraction*) {
  const exact_fraction x(a), y(b);
  exact_fraction result;
  switch (op) {
    case operation::add:
      result = x + y;
      break;
    case operation::subtract:
      result = x - y;
      break;
    case operation::multiply:
      result = x * y;
      break;
    case operation::divide:
      result = x / y;
      break;
  }
  return result.negative() ? -result : result;
}

// The code(s) the library may return: one, or a NaN of either sign.
struct expected_codes {
  std::uint32_t code;
  std::uint32_t alternative;
  bool accepts(std::uint32_t c) const { return c == code || c == alternative; }
  bool operator!=(const expected_codes& other) const { return code != other.code || alternative != other.alternative; }
};

template <class V>
expected_codes expected_result(const reference_format<V>& oracle, operation op, const decoded& a, const decoded& b) {
  const outcome result = ieee_outcome(op, a, b);
  constexpr auto nearest = mixprec::rounding::nearest_even;
  constexpr auto non_finite = mixprec::overflow::non_finite;
  switch (result.kind) {
    case outcome_kind::nan:
      return {oracle.nan(false), oracle.nan(true)};
    case outcome_kind::infinity: {
      const std::uint32_t c = oracle.infinity(result.negative, non_finite);
      return {c, c};
    }
    case outcome_kind::zero: {
      const std::uint32_t c = oracle.zero(result.negative, non_finite);
      return {c, c};
    }
    case outcome_kind::number:
      break;
  }
  const V magnitude = exact_magnitude(op, a.value, b.value, static_cast<const V*>(nullptr));
  const std::uint32_t c = oracle.round(result.negative, locate(oracle, magnitude), nearest, non_finite);
  return {c, c};
}

template <class T>
T apply(operation op, T a, T b) {
  switch (op) {
    case operation::add:
      return a + b;
    case operation::subtract:
      return a - b;
    case operation::multiply:
      return a * b;
    case operation::divide:
      return a / b;
  }
  return a;
}

template <class T>
T apply_compound(operation op, T a, T b) {
  switch (op) {
    case operation::add:
      return a += b;
    case operation::subtract:
      return a -= b;
    case operation::multiply:
      return a *= b;
    case operation::divide:
      return a /= b;
  }
  return a;
}

// What one thread checked; added to the totals once per chunk of work.
struct tally {
  std::uint64_t arithmetic = 0, exact_checked = 0, compound = 0, comparisons = 0, negations = 0;
};

template <class T>
class type_sweep {
 public:
  explicit type_sweep(const options& opt)
      : opt_(opt),
        p_(parameters_of<T>()),
        fast_(p_),
        exact_(p_),
        name_(mixprec::format_name<typename T::format>()),
        code_count_(1u << p_.total_bits()) {
    for (std::uint32_t c = 0; c < code_count_; ++c) table_.push_back(decode(p_, c));
  }

  int run() {
    stopwatch clock;
    const bool small = p_.total_bits() <= 8;
    std::uint64_t pair_count = 0;
    if (small) {
      pair_count = std::uint64_t{code_count_} * code_count_;
      parallel_ranges(0, pair_count, code_count_, opt_.threads, [&](std::uint64_t first, std::uint64_t last) {
        tally t;
        for (std::uint64_t k = first; k < last; ++k) check_pair(pair_code(k), true, t);
        add(t);
      });
    } else {
      const std::vector<std::uint32_t> edges = edge_codes();
      const std::uint64_t edge_pairs = std::uint64_t{edges.size()} * edges.size();
      pair_count = edge_pairs + opt_.random_pairs;
      parallel_ranges(0, pair_count, 4096, opt_.threads, [&](std::uint64_t first, std::uint64_t last) {
        tally t;
        for (std::uint64_t k = first; k < last; ++k) {
          if (k < edge_pairs) {
            check_pair({edges[k / edges.size()], edges[k % edges.size()]}, true, t);
          } else {
            const std::uint64_t i = k - edge_pairs;
            check_pair(random_pair(i), opt_.exact_every != 0 && i % opt_.exact_every == 0, t);
          }
        }
        add(t);
      });
    }
    const bool all_comparisons = small || opt_.all_comparison_pairs;
    if (!small && opt_.all_comparison_pairs) {
      parallel_ranges(0, code_count_, 64, opt_.threads, [&](std::uint64_t first, std::uint64_t last) {
        tally t;
        for (std::uint64_t a = first; a < last; ++a)
          for (std::uint32_t b = 0; b < code_count_; ++b) check_comparisons(static_cast<std::uint32_t>(a), b, t);
        add(t);
      });
    }
    tally t;
    for (std::uint32_t c = 0; c < code_count_; ++c) check_negation(c, t);
    add(t);
    const double seconds = clock.seconds();
    auto count = [](std::uint64_t n) { return static_cast<unsigned long long>(n); };
    std::printf(
        "%-16s %s%llu pairs x 4 ops: %llu results (%llu also against exact fractions), %llu compound assignments; "
        "%llu comparisons (%s); %llu negations: %llu mismatches, %.1f s\n",
        name_.c_str(), small ? "all " : "", count(pair_count), count(totals_.arithmetic), count(totals_.exact_checked),
        count(totals_.compound), count(totals_.comparisons), all_comparisons ? "all pairs" : "the same pairs",
        count(totals_.negations), count(mismatches_.load()), seconds);
    return mismatches_ == 0 ? 0 : 1;
  }

 private:
  using storage = typename T::storage_type;
  struct code_pair {
    std::uint32_t a, b;
  };

  code_pair pair_code(std::uint64_t k) const {
    return {static_cast<std::uint32_t>(k / code_count_), static_cast<std::uint32_t>(k % code_count_)};
  }

  // Zeros, the smallest and largest subnormals, the smallest normal and its neighbour, values
  // around 1 and 2, 0.5, 1.5, the two largest finite values, infinity and three NaNs
  // (canonical quiet, signalling, all payload bits set), each with both signs.
  std::vector<std::uint32_t> edge_codes() const {
    const int m = p_.mantissa_bits;
    const std::uint32_t one = static_cast<std::uint32_t>(p_.bias) << m;
    const std::uint32_t mantissa_mask = (1u << m) - 1;
    const std::uint32_t infinity = ((1u << p_.exponent_bits) - 1) << m;
    const std::uint32_t max = infinity - 1;  // the formats swept here are IEEE-style
    std::vector<std::uint32_t> magnitudes{0,
                                          1,
                                          2,
                                          mantissa_mask - 1,
                                          mantissa_mask,
                                          1u << m,
                                          (1u << m) + 1,
                                          one - 2,
                                          one - 1,
                                          one,
                                          one + 1,
                                          one + 2,
                                          one | (1u << (m - 1)),
                                          one + (1u << m) - 1,
                                          one + (1u << m),
                                          one + (1u << m) + 1,
                                          one - (1u << m),
                                          max - 1,
                                          max,
                                          infinity,
                                          infinity | (1u << (m - 1)),
                                          infinity | 1u,
                                          infinity | mantissa_mask};
    std::vector<std::uint32_t> codes;
    for (std::uint32_t magnitude : magnitudes) {
      codes.push_back(magnitude);
      codes.push_back(magnitude | p_.sign_bit());
    }
    return codes;
  }

  code_pair random_pair(std::uint64_t i) const {
    const std::uint64_t r = splitmix64(0x6D69787072656331ull + i);
    const std::uint32_t mask = code_count_ - 1;
    const auto a = static_cast<std::uint32_t>(r) & mask;
    if ((r >> 63) != 0) return {a, static_cast<std::uint32_t>(r >> 20) & mask};
    // b within a few binades of a: the cancellations and ties of + and - live there.
    const int m = p_.mantissa_bits, field_max = (1 << p_.exponent_bits) - 1;
    const int spread = m + 3;
    const int a_field = static_cast<int>((a & p_.magnitude_mask()) >> m);
    const int offset = static_cast<int>((r >> 32) % static_cast<std::uint64_t>(2 * spread + 1)) - spread;
    const int b_field = std::clamp(a_field + offset, 0, field_max);
    const auto mantissa = static_cast<std::uint32_t>(r >> 40) & ((1u << m) - 1);
    const std::uint32_t sign = ((r >> 62) & 1) != 0 ? p_.sign_bit() : 0;
    return {a, sign | (static_cast<std::uint32_t>(b_field) << m) | mantissa};
  }

  void report(const char* what, std::uint32_t a, std::uint32_t b, std::uint32_t expected, std::uint32_t actual) {
    if (mismatches_.fetch_add(1) < 20) {
      std::lock_guard<std::mutex> lock(print_mutex_);
      std::printf("  MISMATCH %s: 0x%04x %s 0x%04x: expected 0x%04x, got 0x%04x\n", name_.c_str(), a, what, b, expected,
                  actual);
    }
  }

  void add(const tally& t) {
    std::lock_guard<std::mutex> lock(totals_mutex_);
    totals_.arithmetic += t.arithmetic;
    totals_.exact_checked += t.exact_checked;
    totals_.compound += t.compound;
    totals_.comparisons += t.comparisons;
    totals_.negations += t.negations;
  }

  void check_pair(code_pair pair, bool against_exact, tally& t) {
    const T a = T::from_bits(static_cast<storage>(pair.a)), b = T::from_bits(static_cast<storage>(pair.b));
    const decoded& da = table_[pair.a];
    const decoded& db = table_[pair.b];
    for (operation op : all_operations) {
      const expected_codes expected = expected_result(fast_, op, da, db);
      if (against_exact) {
        const expected_codes exact = expected_result(exact_, op, da, db);
        if (exact != expected) {
          std::string what = std::string(symbol(op)) + " (the two oracles disagree; exact_fraction says)";
          report(what.c_str(), pair.a, pair.b, exact.code, expected.code);
        }
        ++t.exact_checked;
      }
      const std::uint32_t actual = apply(op, a, b).bits();
      if (!expected.accepts(actual)) report(symbol(op), pair.a, pair.b, expected.code, actual);
      const std::uint32_t compound = apply_compound(op, a, b).bits();
      if (compound != actual) {
        std::string what = std::string(symbol(op)) + "= (against the binary operator)";
        report(what.c_str(), pair.a, pair.b, actual, compound);
      }
    }
    t.arithmetic += 4;
    t.compound += 4;
    check_comparisons(pair.a, pair.b, t);
  }

  // IEEE 754-2019 §5.11: NaN is unordered with everything, -0 == +0; otherwise the order of the
  // exact values (doubles here, ±inf included).
  void check_comparisons(std::uint32_t code_a, std::uint32_t code_b, tally& t) {
    const T a = T::from_bits(static_cast<storage>(code_a)), b = T::from_bits(static_cast<storage>(code_b));
    const decoded& da = table_[code_a];
    const decoded& db = table_[code_b];
    const bool unordered = da.kind == code_class::nan || db.kind == code_class::nan;
    const bool less = !unordered && da.value < db.value, equal = !unordered && da.value == db.value;
    const bool greater = !unordered && da.value > db.value;
    const bool expected[6] = {equal, !equal, less, less || equal, greater, greater || equal};
    const bool actual[6] = {a == b, a != b, a<b, a <= b, a> b, a >= b};
    static const char* const names[6] = {"==", "!=", "<", "<=", ">", ">="};
    for (int i = 0; i < 6; ++i) {
      if (actual[i] != expected[i]) report(names[i], code_a, code_b, expected[i], actual[i]);
    }
    t.comparisons += 6;
  }

  // -x is the value -x rounded into the format (exact, or not representable: NaN in e8m0, and
  // +0 for the -0 that fnuz lacks); a NaN keeps being NaN with its sign flipped where NaN is
  // signed (§5.5.1).
  void check_negation(std::uint32_t code, tally& t) {
    const T x = T::from_bits(static_cast<storage>(code));
    const decoded& d = table_[code];
    std::uint32_t expected = 0;
    constexpr auto nearest = mixprec::rounding::nearest_even;
    constexpr auto non_finite = mixprec::overflow::non_finite;
    switch (d.kind) {
      case code_class::nan:  // a sign-bit operation: the payload stays (§5.5.1)
        expected = p_.is_signed && p_.specials != mixprec::special_encoding::nan_negative_zero ? code ^ p_.sign_bit()
                                                                                               : fast_.nan(false);
        break;
      case code_class::infinity:
        expected = fast_.infinity(!d.negative, non_finite);
        break;
      case code_class::finite:
        expected = d.value == 0.0
                       ? fast_.zero(!d.negative, non_finite)
                       : fast_.round(!d.negative, locate(fast_, rounded_real(std::fabs(d.value))), nearest, non_finite);
        break;
    }
    if ((-x).bits() != expected) report("unary -", code, code, expected, (-x).bits());
    if ((+x).bits() != code) report("unary +", code, code, code, (+x).bits());
    ++t.negations;
  }

  const options& opt_;
  format_parameters p_;
  reference_format<rounded_real> fast_;
  reference_format<exact_fraction> exact_;
  std::string name_;
  std::uint32_t code_count_;
  std::vector<decoded> table_;
  tally totals_;
  std::atomic<std::uint64_t> mismatches_{0};
  std::mutex totals_mutex_, print_mutex_;
};

}  // namespace

int main(int argc, char** argv) {
  options opt;
  std::string types = "all";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--types" && i + 1 < argc) {
      types = argv[++i];
    } else if (arg == "--random-pairs" && i + 1 < argc) {
      opt.random_pairs = std::stoull(argv[++i]);
    } else if (arg == "--exact-every" && i + 1 < argc) {
      opt.exact_every = std::stoull(argv[++i]);
    } else if (arg == "--comparisons" && i + 1 < argc) {
      const std::string which = argv[++i];
      if (which != "all" && which != "sampled") {
        std::fprintf(stderr, "--comparisons takes all or sampled\n");
        return 2;
      }
      opt.all_comparison_pairs = which == "all";
    } else if (arg == "--threads" && i + 1 < argc) {
      opt.threads = static_cast<unsigned>(std::stoul(argv[++i]));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--types all|a,b,...] [--random-pairs N] [--exact-every K] "
                   "[--comparisons sampled|all] [--threads N]\n",
                   argv[0]);
      return 2;
    }
  }
  stopwatch clock;
  int status = 0;
  if (!for_each_named_type(type_names(types), [&](auto tag) { status |= type_sweep<decltype(tag)>(opt).run(); }))
    return 2;
  std::printf("arithmetic_sweep: %s in %.1f s\n", status == 0 ? "all results match" : "MISMATCHES", clock.seconds());
  return status;
}
