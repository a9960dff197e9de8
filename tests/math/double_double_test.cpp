// The machinery behind cmath.hpp's approximated functions (math/correct_rounding.hpp,
// math/double_double.hpp), checked on every input of every format:
//   - each double-double function stays within the relative error bound its comment states,
//     against Boost.Multiprecision at 200 bits;
//   - every input is decided by the C library's double value, an exact case or the
//     double-double value, never left unresolved (the path counts are printed by the
//     exhaustive build);
//   - the double-double value alone rounds every input as the library does, except the exact
//     cases (results on a rounding boundary), which the exact path must and does cover.  So the
//     answer does not depend on the C library beyond the 2^-44 relative error it is allowed.
//
// MIXPREC_MATH_EXHAUSTIVE=1 visits every input (every code, every pair of 8-bit codes, 2^20
// random 16-bit pairs); otherwise a strided subset.
#include <mixprec/cmath.hpp>
#include <mixprec/types.hpp>

#include <boost/multiprecision/cpp_bin_float.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "all_formats.hpp"
#include "reference_format.hpp"
#include "sweep.hpp"

#ifndef MIXPREC_MATH_EXHAUSTIVE
#define MIXPREC_MATH_EXHAUSTIVE 0
#endif

namespace {

namespace bmp = boost::multiprecision;
namespace detail = mixprec::detail;
using real = bmp::number<bmp::cpp_bin_float<200, bmp::digit_base_2>, bmp::et_off>;
using mixprec_test::code_class;

constexpr bool exhaustive = MIXPREC_MATH_EXHAUSTIVE != 0;
constexpr std::uint32_t unary_stride_16 = exhaustive ? 1 : 31;
constexpr std::uint32_t pair_stride_8 = exhaustive ? 1 : 29;
constexpr std::uint32_t random_pairs_16 = exhaustive ? (1u << 20) : (1u << 11);

real to_real(detail::double_double v) { return real(v.hi) + real(v.lo); }

// ---- Error bounds of the double-double functions ----------------------------------------------

// The finite values of every format, each once.
template <class... T>
std::vector<double> all_format_values() {
  std::set<double> values;
  auto add = [&](auto tag) {
    using U = decltype(tag);
    const auto p = mixprec_test::parameters_of<U>();
    const std::uint32_t n = mixprec_test::code_count<U>();
    const std::uint32_t stride = n > 256 ? unary_stride_16 : 1;
    for (std::uint32_t code = 0; code < n; code += stride) {
      if (mixprec_test::classify(p, code) == code_class::finite) values.insert(mixprec_test::textbook_value(p, code));
    }
  };
  (add(T{}), ...);
  return {values.begin(), values.end()};
}

struct bound_check {
  const char* name;
  std::function<bool(double)> in_domain;
  std::function<detail::double_double(double)> evaluate;
  std::function<real(const real&)> exact;
  double stated_bound;  // the relative error bound stated in math/double_double.hpp
};

}  // namespace

TEST_CASE("every double-double function stays within its stated error bound on every format value",
          "[math][double_double]") {
  const std::vector<double> values = all_format_values<MIXPREC_ALL_TYPES>();
  const real ln2 = bmp::log(real(2));
  const bound_check checks[] = {
      {"exp", [](double x) { return std::fabs(x) <= 590; },
       [](double x) {
         return detail::dd_exp(detail::double_double{x, 0.0});
       },
       [](const real& x) { return bmp::exp(x); }, 0x1p-103},
      {"exp2", [](double x) { return std::fabs(x) <= 850; }, [](double x) { return detail::dd_exp2(x); },
       [&](const real& x) { return bmp::exp(x * ln2); }, 0x1p-101},
      {"expm1", [](double x) { return x <= 590; }, [](double x) { return detail::dd_expm1(x); },
       [](const real& x) { return bmp::expm1(x); }, 0x1p-101},
      {"log", [](double x) { return x > 0; }, [](double x) { return detail::dd_log(x); },
       [](const real& x) { return bmp::log(x); }, 0x1p-101},
      {"log2", [](double x) { return x > 0; }, [](double x) { return detail::dd_log2(x); },
       [&](const real& x) { return bmp::log(x) / ln2; }, 0x1p-101},
      {"log10", [](double x) { return x > 0; }, [](double x) { return detail::dd_log10(x); },
       [](const real& x) { return bmp::log10(x); }, 0x1p-101},
      {"log1p", [](double x) { return x > -1; }, [](double x) { return detail::dd_log1p(x); },
       [](const real& x) { return bmp::log1p(x); }, 0x1p-101},
      {"tanh", [](double) { return true; }, [](double x) { return detail::dd_tanh(x); },
       [](const real& x) { return bmp::tanh(x); }, 0x1p-101},
      {"erf", [](double) { return true; }, [](double x) { return detail::dd_erf(x); },
       [](const real& x) { return bmp::erf(x); }, 0x1p-95},
  };
  for (const bound_check& check : checks) {
    std::vector<double> inputs;
    for (double x : values)
      if (check.in_domain(x) && x != 0) inputs.push_back(x);
    std::vector<double> errors(inputs.size());
    mixprec_test::parallel_for(inputs.size(), 16, [&](std::size_t i) {
      const real want = check.exact(real(inputs[i]));
      const real got = to_real(check.evaluate(inputs[i]));
      errors[i] = want == 0 ? 0.0 : real(bmp::abs(real(got - want)) / bmp::abs(want)).convert_to<double>();
    });
    const auto worst = std::max_element(errors.begin(), errors.end());
    const double worst_input = inputs[static_cast<std::size_t>(worst - errors.begin())];
    INFO(check.name << ": " << inputs.size() << " inputs, largest relative error 2^" << std::log2(*worst)
                    << " at x = " << worst_input << ", stated bound 2^" << std::log2(check.stated_bound));
    CHECK(*worst <= check.stated_bound);
    if (exhaustive)
      std::printf("dd_%-6s %7zu inputs, largest relative error 2^%.1f (bound 2^%.0f)\n", check.name, inputs.size(),
                  std::log2(*worst), std::log2(check.stated_bound));
  }
}

namespace {

struct code_pair {
  std::uint32_t x, y;
};

template <class T>
std::vector<code_pair> positive_base_pairs() {
  const std::uint32_t n = mixprec_test::code_count<T>();
  std::vector<code_pair> pairs;
  if (n <= 256) {
    for (std::uint32_t i = 0; i < n * n; i += pair_stride_8) pairs.push_back({i / n, i % n});
  } else {
    std::mt19937 random(20240524);
    std::uniform_int_distribution<std::uint32_t> code(0, n - 1);
    for (std::uint32_t i = 0; i < random_pairs_16; ++i) pairs.push_back({code(random), code(random)});
  }
  return pairs;
}

}  // namespace

TEMPLATE_TEST_CASE("double-double pow stays within (|y ln x| + 1) 2^-101 on pairs of format values",
                   "[math][double_double]", mixprec::float16, mixprec::bfloat16, mixprec::float8_e4m3fn,
                   mixprec::float8_e5m2, mixprec::float8_e8m0fnu) {
  const auto p = mixprec_test::parameters_of<TestType>();
  std::vector<std::pair<double, double>> inputs;
  for (const code_pair& c : positive_base_pairs<TestType>()) {
    if (mixprec_test::classify(p, c.x) != code_class::finite || mixprec_test::classify(p, c.y) != code_class::finite)
      continue;
    const double x = std::fabs(mixprec_test::textbook_value(p, c.x)), y = mixprec_test::textbook_value(p, c.y);
    if (x == 0 || std::fabs(y * std::log(x)) > 590) continue;  // results of at least 2^-860
    inputs.emplace_back(x, y);
  }
  std::vector<double> excess(inputs.size());  // error / bound
  mixprec_test::parallel_for(inputs.size(), 16, [&](std::size_t i) {
    const auto [x, y] = inputs[i];
    const real want = bmp::pow(real(x), real(y));
    double t = 0;
    const real got = to_real(detail::dd_pow(x, y, &t));
    const real error = bmp::abs(real(got - want)) / want;
    excess[i] = (error / real((t + 1) * 0x1p-101)).convert_to<double>();
  });
  const double worst = inputs.empty() ? 0.0 : *std::max_element(excess.begin(), excess.end());
  INFO(inputs.size() << " pairs; largest error / bound = " << worst);
  CHECK(worst <= 1.0);
  if (exhaustive)
    std::printf("dd_pow %-16s %8zu pairs, largest error / bound %.3g\n",
                mixprec::format_name<typename TestType::format>().c_str(), inputs.size(), worst);
}

// ---- Which path decides each input -------------------------------------------------------------

namespace {

struct path_counts {
  std::size_t direct = 0, exact = 0, refined = 0, unresolved = 0;
  // Inputs whose double-double value alone does not decide the rounding (they must be exact
  // cases), and inputs where it decides differently from the library (there must be none).
  std::size_t refined_undecided = 0, refined_undecided_not_exact = 0, refined_disagrees = 0;
  std::vector<std::string> examples;
};

// Runs one kernel as the library does and checks its double-double fallback.
template <class Format, class Kernel>
void analyse(const Kernel& kernel, typename mixprec::format_traits<Format>::storage_type library_code, bool negate,
             path_counts& counts, const std::string& input) {
  const detail::evaluation e = detail::evaluate<Format>(kernel);
  switch (e.path) {
    case detail::evaluation_path::direct:
      ++counts.direct;
      break;
    case detail::evaluation_path::exact:
      ++counts.exact;
      break;
    case detail::evaluation_path::refined:
      ++counts.refined;
      break;
    case detail::evaluation_path::unresolved:
      ++counts.unresolved;
      if (counts.examples.size() < 8) counts.examples.push_back("unresolved: " + input);
      break;
  }
  const detail::refined_value r = kernel.refine();
  if (!detail::rounds_as<Format>(r.value, r.relative_error)) {
    ++counts.refined_undecided;
    double ignored = 0;
    if (!kernel.exact(&ignored)) {
      ++counts.refined_undecided_not_exact;
      if (counts.examples.size() < 8) counts.examples.push_back("double-double undecided, not exact: " + input);
    }
    return;
  }
  const double representative = detail::round_to_odd(r.value.hi, r.value.lo);
  if (detail::nearest_code<Format>(negate ? -representative : representative) != library_code) {
    ++counts.refined_disagrees;
    if (counts.examples.size() < 8) counts.examples.push_back("double-double disagrees: " + input);
  }
}

void report(const std::string& what, const path_counts& c) {
  std::string examples;
  for (const auto& e : c.examples) examples += "\n  " + e;
  INFO(what << ": direct " << c.direct << ", exact " << c.exact << ", refined " << c.refined << ", unresolved "
            << c.unresolved << "; double-double alone undecided on " << c.refined_undecided << " (not exact: "
            << c.refined_undecided_not_exact << "), disagrees on " << c.refined_disagrees << examples);
  CHECK(c.unresolved == 0);
  CHECK(c.refined_undecided_not_exact == 0);
  CHECK(c.refined_disagrees == 0);
  if (exhaustive)
    std::printf("%-34s direct %9zu  exact %5zu  refined %3zu  unresolved %zu  | dd alone undecided %4zu\n",
                what.c_str(), c.direct, c.exact, c.refined, c.unresolved, c.refined_undecided);
}

template <class T>
T from_code(std::uint32_t code) {
  return T::from_bits(static_cast<typename T::storage_type>(code));
}

template <class T, class Kernel, class Library>
void unary_paths(const char* name, bool (*reaches_kernel)(double), Library library) {
  using Format = typename T::format;
  const auto p = mixprec_test::parameters_of<T>();
  path_counts counts;
  const std::uint32_t n = mixprec_test::code_count<T>();
  const std::uint32_t stride = n > 256 ? unary_stride_16 : 1;
  std::vector<std::uint32_t> codes;
  for (std::uint32_t code = 0; code < n; code += stride) {
    if (mixprec_test::classify(p, code) != code_class::finite) continue;
    if (reaches_kernel(mixprec_test::textbook_value(p, code))) codes.push_back(code);
  }
  std::vector<path_counts> per_code(codes.size());
  mixprec_test::parallel_for(codes.size(), 16, [&](std::size_t i) {
    const double x = mixprec_test::textbook_value(p, codes[i]);
    analyse<Format>(Kernel{x}, library(from_code<T>(codes[i])).bits(), false, per_code[i], std::to_string(x));
  });
  for (const auto& c : per_code) {
    counts.direct += c.direct;
    counts.exact += c.exact;
    counts.refined += c.refined;
    counts.unresolved += c.unresolved;
    counts.refined_undecided += c.refined_undecided;
    counts.refined_undecided_not_exact += c.refined_undecided_not_exact;
    counts.refined_disagrees += c.refined_disagrees;
    for (const auto& e : c.examples)
      if (counts.examples.size() < 8) counts.examples.push_back(e);
  }
  report(mixprec::format_name<Format>() + " " + name, counts);
}

bool any_finite(double) { return true; }
bool positive(double x) { return x > 0; }
bool above_minus_one(double x) { return x > -1; }

}  // namespace

TEMPLATE_TEST_CASE("every input of the unary functions is decided, and the double-double fallback agrees",
                   "[math][paths]", MIXPREC_ALL_TYPES) {
  unary_paths<TestType, detail::exp_kernel>("exp", any_finite, [](auto x) { return mixprec::exp(x); });
  unary_paths<TestType, detail::exp2_kernel>("exp2", any_finite, [](auto x) { return mixprec::exp2(x); });
  unary_paths<TestType, detail::expm1_kernel>("expm1", any_finite, [](auto x) { return mixprec::expm1(x); });
  unary_paths<TestType, detail::log_kernel>("log", positive, [](auto x) { return mixprec::log(x); });
  unary_paths<TestType, detail::log2_kernel>("log2", positive, [](auto x) { return mixprec::log2(x); });
  unary_paths<TestType, detail::log10_kernel>("log10", positive, [](auto x) { return mixprec::log10(x); });
  unary_paths<TestType, detail::log1p_kernel>("log1p", above_minus_one, [](auto x) { return mixprec::log1p(x); });
  unary_paths<TestType, detail::tanh_kernel>("tanh", any_finite, [](auto x) { return mixprec::tanh(x); });
  unary_paths<TestType, detail::erf_kernel>("erf", any_finite, [](auto x) { return mixprec::erf(x); });
}

namespace {

// The pairs on which pow reaches its kernel: finite x != 0, 1 and y != 0, and y integral when
// x < 0 (C17 F.10.4.4 decides the rest).
template <class T>
void pow_paths(const std::vector<code_pair>& pairs, const std::string& what) {
  using Format = typename T::format;
  const auto p = mixprec_test::parameters_of<T>();
  std::vector<code_pair> reaching;
  for (const code_pair& c : pairs) {
    if (mixprec_test::classify(p, c.x) != code_class::finite || mixprec_test::classify(p, c.y) != code_class::finite)
      continue;
    const double x = mixprec_test::textbook_value(p, c.x), y = mixprec_test::textbook_value(p, c.y);
    if (x == 0 || x == 1 || y == 0 || (x < 0 && std::floor(y) != y)) continue;
    reaching.push_back(c);
  }
  std::vector<path_counts> per_pair(reaching.size());
  mixprec_test::parallel_for(reaching.size(), 16, [&](std::size_t i) {
    const double x = mixprec_test::textbook_value(p, reaching[i].x), y = mixprec_test::textbook_value(p, reaching[i].y);
    const bool negate = x < 0 && std::fmod(y, 2.0) != 0;
    const auto library = mixprec::pow(from_code<T>(reaching[i].x), from_code<T>(reaching[i].y)).bits();
    analyse<Format>(detail::pow_kernel{std::fabs(x), y}, library, negate, per_pair[i],
                    "pow(" + std::to_string(x) + ", " + std::to_string(y) + ")");
  });
  path_counts counts;
  for (const auto& c : per_pair) {
    counts.direct += c.direct;
    counts.exact += c.exact;
    counts.refined += c.refined;
    counts.unresolved += c.unresolved;
    counts.refined_undecided += c.refined_undecided;
    counts.refined_undecided_not_exact += c.refined_undecided_not_exact;
    counts.refined_disagrees += c.refined_disagrees;
    for (const auto& e : c.examples)
      if (counts.examples.size() < 8) counts.examples.push_back(e);
  }
  report(mixprec::format_name<Format>() + " " + what, counts);
}

}  // namespace

TEMPLATE_TEST_CASE("every pair of pow is decided, and the double-double fallback agrees", "[math][paths]",
                   MIXPREC_ALL_TYPES) {
  pow_paths<TestType>(positive_base_pairs<TestType>(), mixprec_test::code_count<TestType>() > 256
                                                           ? "pow, random pairs"
                                                           : (exhaustive ? "pow, all pairs" : "pow, strided pairs"));
  if (mixprec_test::code_count<TestType>() > 256) {
    std::vector<code_pair> rows;
    const std::uint32_t stride = exhaustive ? 1 : 37;
    for (double y : {2.0, 3.0, 1.5, 0.5, -1.0, -2.0, 0.25, 2.5}) {
      const std::uint32_t y_code = TestType(y).bits();
      for (std::uint32_t x = 0; x < mixprec_test::code_count<TestType>(); x += stride) rows.push_back({x, y_code});
    }
    pow_paths<TestType>(rows, "pow, exact-prone exponents");
  }
}

// Every one of the 2^32 pairs of a 16-bit format, through pow's kernel as pow runs it: how many
// the C library's value decides, how many need the exact path or the double-double value, and
// that none is left unresolved.  Hidden (about a CPU-minute per format): the ctest label
// exhaustive_full runs it in slices; MIXPREC_POW_X_SLICE="i/n" takes the i-th of n slices of x.
TEMPLATE_TEST_CASE("every one of the 2^32 pow pairs of a 16-bit format is decided", "[.][pow_all_pairs]",
                   mixprec::float16, mixprec::bfloat16) {
  using Format = typename TestType::format;
  const auto p = mixprec_test::parameters_of<TestType>();
  std::uint32_t slice = 0, slices = 1;
  if (const char* text = std::getenv("MIXPREC_POW_X_SLICE")) {
    REQUIRE(std::sscanf(text, "%u/%u", &slice, &slices) == 2);
    REQUIRE(slice < slices);
  }
  const std::uint32_t n = mixprec_test::code_count<TestType>();
  const std::uint32_t first = n / slices * slice, last = slice + 1 == slices ? n : n / slices * (slice + 1);
  std::vector<double> value(n);
  std::vector<char> finite(n);
  for (std::uint32_t c = 0; c < n; ++c) {
    finite[c] = mixprec_test::classify(p, c) == code_class::finite;
    value[c] = finite[c] ? mixprec_test::textbook_value(p, c) : 0.0;
  }
  std::vector<std::array<std::size_t, 4>> counts(last - first);
  mixprec_test::parallel_for(last - first, 16, [&](std::size_t i) {
    const auto x_code = static_cast<std::uint32_t>(first + i);
    const double x = value[x_code];
    if (!finite[x_code] || x == 0 || x == 1) return;
    for (std::uint32_t y_code = 0; y_code < n; ++y_code) {
      const double y = value[y_code];
      if (!finite[y_code] || y == 0 || (x < 0 && std::floor(y) != y)) continue;
      const detail::evaluation e = detail::evaluate<Format>(detail::pow_kernel{std::fabs(x), y});
      ++counts[i][static_cast<std::size_t>(e.path)];
    }
  });
  std::array<std::size_t, 4> total{};
  for (const auto& c : counts)
    for (std::size_t k = 0; k < 4; ++k) total[k] += c[k];
  std::printf("%s pow, x codes [0x%04X, 0x%04X), all y: direct %zu  exact %zu  refined %zu  unresolved %zu\n",
              mixprec::format_name<Format>().c_str(), first, last, total[0], total[1], total[2], total[3]);
  CHECK(total[3] == 0);
}
