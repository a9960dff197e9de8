// mixprec against conversions nobody here wrote (CUDA's host code, Eigen, the FP16 library).
//
// A program registers cases with a runner:
//   from_float<T>(reference, mode, rounding, overflow, f)   f(float) -> code of T, compared with
//       mixprec::convert<T>(x, rounding, overflow) over every float on the stride grid
//       (u = 0, N, 2N, ... < 2^32) plus, when N > 1, the edge inputs of T (every value, its
//       float neighbours, every midpoint and its neighbours, the overflow threshold, zeros,
//       infinities, NaNs with several payloads);
//   to_float<T>(reference, f)                              f(code) -> float, compared with
//       static_cast<float>(T) over every code.
// Every disagreement is classified by what the input and the two results are (the classes of
// docs/decisions.md: NaN sign, NaN payload, infinity under saturation, e8m0 zero or negative
// input, ...).  A class is "documented" only if mixprec's side of it is exactly what
// docs/decisions.md prescribes; anything else (above all, any finite input on which the
// results differ) is a FAILURE and makes the program exit non-zero.
//
//   <program> [--stride N] [--threads N] [--only TEXT]
#pragma once

#include <mixprec/convert.hpp>
#include <mixprec/types.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sweep.hpp"

namespace mixprec_reference {

using mixprec::overflow;
using mixprec::rounding;

inline float float_of(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// One class of disagreement: how many inputs, the first example, and the distinct results
// each side gave (up to a few).
struct class_tally {
  std::uint64_t count = 0;
  std::uint32_t example_input = 0;  // float bits (from_float) or the code (to_float)
  std::uint32_t example_mixprec = 0, example_reference = 0;
  std::set<std::uint32_t> mixprec_results, reference_results;

  void add(std::uint32_t input, std::uint32_t mixprec_result, std::uint32_t reference_result) {
    if (count == 0 || input < example_input) {
      example_input = input;
      example_mixprec = mixprec_result;
      example_reference = reference_result;
    }
    ++count;
    if (mixprec_results.size() < 4) mixprec_results.insert(mixprec_result);
    if (reference_results.size() < 4) reference_results.insert(reference_result);
  }
  void merge(const class_tally& other) {
    if (other.count == 0) return;
    if (count == 0 || other.example_input < example_input) {
      example_input = other.example_input;
      example_mixprec = other.example_mixprec;
      example_reference = other.example_reference;
    }
    count += other.count;
    for (auto r : other.mixprec_results)
      if (mixprec_results.size() < 4) mixprec_results.insert(r);
    for (auto r : other.reference_results)
      if (reference_results.size() < 4) reference_results.insert(r);
  }
};

// A class name is a string literal: classifying must stay cheap, since whole halves of the
// input space can disagree (every negative float into e8m0).
struct verdict {
  const char* name;
  bool documented;
};

// The classes seen, in the order first seen (a handful at most).
class tally_map {
 public:
  class_tally& operator[](const char* name) {
    for (auto& entry : entries_)
      if (std::strcmp(entry.first, name) == 0) return entry.second;
    entries_.emplace_back(name, class_tally{});
    return entries_.back().second;
  }
  void merge(const tally_map& other) {
    for (const auto& entry : other.entries_) (*this)[entry.first].merge(entry.second);
  }
  std::vector<std::pair<const char*, class_tally>> sorted() const {
    auto copy = entries_;
    std::sort(copy.begin(), copy.end(), [](const auto& a, const auto& b) { return std::strcmp(a.first, b.first) < 0; });
    return copy;
  }

 private:
  std::vector<std::pair<const char*, class_tally>> entries_;
};

// ---------------------------------------------------------------------------------------------
// What docs/decisions.md prescribes, written out here from the document (not from detail/).

template <class T>
struct rules {
  using traits = mixprec::format_traits<typename T::format>;
  static constexpr std::uint32_t sign_mask = static_cast<std::uint32_t>(traits::sign_mask);
  static constexpr std::uint32_t magnitude_mask = static_cast<std::uint32_t>(traits::magnitude_mask);

  static std::uint32_t with_sign(bool negative, std::uint64_t magnitude) {
    return static_cast<std::uint32_t>(magnitude) | (negative ? sign_mask : 0u);
  }
  static std::uint32_t max_code(bool negative) { return with_sign(negative, traits::max_finite_magnitude); }
  // §1: NaN in, the canonical quiet NaN out with the input's sign where NaN is signed; +max for
  // formats without NaN.
  static std::uint32_t nan_code(bool negative) {
    if (!traits::has_nan) return max_code(false);
    return with_sign(negative && traits::has_signed_nan, traits::quiet_nan_code);
  }
  // §2: ±inf in.
  static std::uint32_t infinity_code(bool negative, overflow o) {
    if (negative && !traits::is_signed) return out_of_domain_code(o);
    if (o == overflow::saturate) return max_code(negative);
    if (traits::has_infinity) return with_sign(negative, traits::infinity_magnitude);
    return nan_code(negative);
  }
  // §4: zero and negative inputs into e8m0.
  static std::uint32_t out_of_domain_code(overflow o) {
    return o == overflow::saturate ? 0u : static_cast<std::uint32_t>(traits::quiet_nan_code);
  }
  // §1: a NaN code widened to float: IEEE-style formats keep the payload with the quiet bit set,
  // the others give float's canonical quiet NaN; the sign is kept.
  static std::uint32_t decoded_nan_bits(std::uint32_t code) {
    const std::uint32_t sign = traits::is_negative(code) ? 0x80000000u : 0u;
    if (traits::specials == mixprec::special_encoding::ieee) {
      const auto payload = static_cast<std::uint32_t>(code & traits::mantissa_mask) << (23 - traits::mantissa_bits);
      return sign | 0x7FC00000u | payload;
    }
    return sign | 0x7FC00000u;
  }
};

template <class T>
verdict classify_from_float(float x, rounding r, overflow o, std::uint32_t m, std::uint32_t c) {
  using R = rules<T>;
  using traits = typename R::traits;
  const bool negative = std::signbit(x);
  const bool m_nan = traits::is_nan(m), c_nan = traits::is_nan(c);
  // which: 0 a NaN input, 1 an infinity into a format without one, 2 an out-of-range result.
  auto nan_difference = [&](int which) -> verdict {
    static const char* const names[3][3] = {
        {"NaN sign", "NaN payload", "NaN sign and payload"},
        {"NaN sign (infinity into a format without infinity)", "NaN payload (infinity into a format without infinity)",
         "NaN sign and payload (infinity into a format without infinity)"},
        {"NaN sign (out-of-range result)", "NaN payload (out-of-range result)",
         "NaN sign and payload (out-of-range result)"}};
    const bool sign = (m & R::sign_mask) != (c & R::sign_mask);
    const bool payload = (m & R::magnitude_mask) != (c & R::magnitude_mask);
    return {names[which][sign && payload ? 2 : sign ? 0 : 1], true};
  };

  if (std::isnan(x)) {
    if (m != R::nan_code(negative)) return {"NaN input: mixprec breaks decisions.md §1", false};
    if (!traits::has_nan) return {"NaN into a format without NaN", true};
    if (!c_nan) return {"NaN input: the reference returns a number", false};
    return nan_difference(0);
  }
  if (!traits::is_signed && (negative || x == 0.0f)) {
    if (m != R::out_of_domain_code(o)) return {"e8m0 zero or negative input: mixprec breaks decisions.md §4", false};
    if (x == 0.0f) {
      if (c == 0) return {"e8m0 zero input (reference: 2^-127)", true};
      if (c_nan) return {"e8m0 zero input (reference: NaN)", true};
      return {"e8m0 zero input: the reference gives neither 2^-127 nor NaN", false};
    }
    // A reference that ignores the sign must give exactly what mixprec gives for |x| in the
    // same mode: that keeps the rounding of the whole negative half checked.
    if (c == mixprec::convert<T>(std::fabs(x), r, o).bits()) {
      return {std::isinf(x) ? "e8m0 negative input (-inf; reference: the value of +inf)"
                            : "e8m0 negative input (reference: the value of |x|)",
              true};
    }
    if (c_nan) return {"e8m0 negative input (reference: NaN)", true};
    return {"e8m0 negative input: the reference gives neither NaN nor mixprec's value of |x|", false};
  }
  if (std::isinf(x)) {
    if (m != R::infinity_code(negative, o)) return {"infinity input: mixprec breaks decisions.md §2", false};
    if (o == overflow::saturate && (c_nan || traits::is_infinity(c))) return {"inf under satfinite", true};
    if (o == overflow::non_finite && c == R::max_code(negative)) return {"inf saturated under non_finite", true};
    if (m_nan && c_nan) return nan_difference(1);
    return {"infinity input", false};
  }
  if (m_nan && c_nan) {
    // §2: a finite value past the range gives what ±inf gives under non_finite: NaN (signed) in
    // formats without infinity.
    if (m != R::nan_code(negative)) return {"out-of-range result: mixprec breaks decisions.md §2", false};
    return nan_difference(2);
  }
  return {"finite input", false};
}

template <class T>
verdict classify_to_float(std::uint32_t code, std::uint32_t m, std::uint32_t c) {
  using R = rules<T>;
  using traits = typename R::traits;
  if (!traits::is_nan(code)) return {"value of a non-NaN code", false};
  if (m != R::decoded_nan_bits(code)) return {"NaN code: mixprec breaks decisions.md §1", false};
  if (!std::isnan(float_of(c))) return {"NaN code: the reference returns a number", false};
  const std::uint32_t difference = m ^ c;
  if (difference == 0x00400000u) return {"NaN quiet bit (decode of a signalling NaN)", true};
  const bool sign = difference >> 31 != 0;
  const bool payload = (difference & 0x7FFFFFFFu) != 0;
  return {sign && payload ? "NaN sign and payload (decode)"
          : sign          ? "NaN sign (decode)"
                          : "NaN payload (decode)",
          true};
}

// ---------------------------------------------------------------------------------------------
// Inputs.

// The edge inputs of T, both signs: every value and its two float neighbours, every midpoint
// between neighbouring values and its two float neighbours, the same around the overflow
// threshold, the smallest and largest floats, zeros, infinities and NaNs with several payloads.
template <class T>
std::vector<std::uint32_t> edge_inputs() {
  using traits = mixprec::format_traits<typename T::format>;
  std::vector<double> values;
  for (std::uint64_t code = 0; code <= traits::magnitude_mask; ++code) {
    if (traits::is_nan(code) || traits::is_infinity(code)) continue;
    values.push_back(static_cast<double>(T::from_bits(static_cast<typename T::storage_type>(code))));
  }
  std::sort(values.begin(), values.end());
  const double largest = values.back();
  // The value the next code would have with an unbounded exponent: one top-binade step above
  // max (twice max for e8m0, whose steps are powers of two).
  const double beyond = traits::mantissa_bits == 0 ? 2 * largest : 2 * largest - values[values.size() - 2];
  values.push_back(beyond);
  std::vector<std::uint32_t> magnitudes{0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0x7F800000u,
                                        0x7F800001u, 0x7F802000u, 0x7FA00000u, 0x7FC00000u, 0x7FC00001u, 0x7FFFFFFFu};
  auto add_around = [&](double v) {
    const auto f = static_cast<float>(v);
    if (static_cast<double>(f) != v || !std::isfinite(f)) return;
    const std::uint32_t u = bits_of(f);
    magnitudes.push_back(u);
    if (u > 0) magnitudes.push_back(u - 1);
    if (u < 0x7F7FFFFFu) magnitudes.push_back(u + 1);
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    add_around(values[i]);
    if (i + 1 < values.size()) add_around((values[i] + values[i + 1]) / 2);
  }
  std::vector<std::uint32_t> inputs;
  for (std::uint32_t u : magnitudes) {
    inputs.push_back(u);
    inputs.push_back(u | 0x80000000u);
  }
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  return inputs;
}

// ---------------------------------------------------------------------------------------------

struct case_result {
  std::string reference, target, mode;
  std::uint64_t inputs = 0, agreements = 0;
  tally_map documented, failures;
  double seconds = 0;
};

class runner {
 public:
  runner(const char* program, int argc, char** argv) : program_(program) {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--stride" && i + 1 < argc) {
        stride_ = std::max<std::uint64_t>(1, std::stoull(argv[++i]));
      } else if (arg == "--threads" && i + 1 < argc) {
        threads_ = static_cast<unsigned>(std::stoul(argv[++i]));
      } else if (arg == "--only" && i + 1 < argc) {
        only_ = argv[++i];
      } else {
        std::fprintf(stderr, "usage: %s [--stride N] [--threads N] [--only TEXT]\n", program);
        usage_error_ = true;
      }
    }
    std::printf("%s: float inputs u = 0, %llu, 2*%llu, ... < 2^32%s; threads %u\n", program_,
                static_cast<unsigned long long>(stride_), static_cast<unsigned long long>(stride_),
                stride_ > 1 ? ", plus each format's edge inputs" : "",
                threads_ != 0 ? threads_ : std::max(1u, std::thread::hardware_concurrency()));
  }

  bool usage_error() const { return usage_error_; }

  // reference(float) -> the code of T that the reference library produces.
  template <class T, class Reference>
  void from_float(const std::string& reference, rounding r, overflow o, Reference reference_code) {
    const std::string target = mixprec::format_name<typename T::format>();
    const std::string mode = std::string(mixprec::to_string(r)) + ", " + mixprec::to_string(o);
    if (!selected(reference + " " + target)) return;
    case_result result{reference, target, mode, 0, 0, {}, {}, 0};
    std::mutex merge_mutex;
    mixprec_test::stopwatch clock;
    auto check_one = [&](std::uint32_t u, tally_map& documented, tally_map& failures) {
      const float x = float_of(u);
      const std::uint32_t m = mixprec::convert<T>(x, r, o).bits();
      const std::uint32_t c = reference_code(x);
      if (m == c) return false;
      const verdict v = classify_from_float<T>(x, r, o, m, c);
      (v.documented ? documented : failures)[v.name].add(u, m, c);
      return true;
    };
    auto run_range = [&](auto&& input_at, std::uint64_t count) {
      auto body = [&](std::uint64_t first, std::uint64_t last) {
        tally_map documented, failures;
        std::uint64_t differing = 0;
        for (std::uint64_t k = first; k < last; ++k) differing += check_one(input_at(k), documented, failures);
        std::lock_guard<std::mutex> lock(merge_mutex);
        result.inputs += last - first;
        result.agreements += (last - first) - differing;
        result.documented.merge(documented);
        result.failures.merge(failures);
      };
      mixprec_test::parallel_ranges(0, count, std::uint64_t{1} << 18, threads_, body);
    };
    const std::uint64_t grid = ((std::uint64_t{1} << 32) + stride_ - 1) / stride_;
    run_range([&](std::uint64_t k) { return static_cast<std::uint32_t>(k * stride_); }, grid);
    if (stride_ > 1) {
      const std::vector<std::uint32_t> edges = edge_inputs<T>();
      run_range([&](std::uint64_t k) { return edges[k]; }, edges.size());
    }
    result.seconds = clock.seconds();
    report(result, true);
  }

  // reference(code) -> the float the reference library decodes the code of T to.
  template <class T, class Reference>
  void to_float(const std::string& reference, Reference reference_float) {
    using traits = mixprec::format_traits<typename T::format>;
    const std::string target = mixprec::format_name<typename T::format>();
    if (!selected(reference + " " + target)) return;
    case_result result{reference, target, "decode", 0, 0, {}, {}, 0};
    mixprec_test::stopwatch clock;
    for (std::uint64_t code = 0; code <= traits::code_mask; ++code) {
      const auto c = static_cast<std::uint32_t>(code);
      const std::uint32_t m = bits_of(static_cast<float>(T::from_bits(static_cast<typename T::storage_type>(code))));
      const std::uint32_t r = bits_of(reference_float(static_cast<typename T::storage_type>(code)));
      ++result.inputs;
      if (m == r) {
        ++result.agreements;
        continue;
      }
      const verdict v = classify_to_float<T>(c, m, r);
      (v.documented ? result.documented : result.failures)[v.name].add(c, m, r);
    }
    result.seconds = clock.seconds();
    report(result, false);
  }

  // Prints the totals; the exit status: 0, or 1 if any disagreement is a FAILURE.
  int finish() const {
    std::printf(
        "%s: %zu cases, %llu comparisons, %llu agreements, %llu disagreements in documented classes, "
        "%llu FAILURES, %.1f s\n",
        program_, cases_, static_cast<unsigned long long>(comparisons_), static_cast<unsigned long long>(agreements_),
        static_cast<unsigned long long>(documented_), static_cast<unsigned long long>(failures_), clock_.seconds());
    if (cases_ == 0) std::printf("%s: no case matched --only\n", program_);
    return failures_ == 0 && cases_ > 0 ? 0 : 1;
  }

 private:
  bool selected(const std::string& name) const { return only_.empty() || name.find(only_) != std::string::npos; }

  static std::string hex(std::uint32_t v, bool is_float) {
    char text[16];
    std::snprintf(text, sizeof text, is_float ? "0x%08x" : "0x%02x", v);
    return text;
  }
  static std::string results(const std::set<std::uint32_t>& set, bool is_float) {
    std::string text;
    for (auto v : set) text += (text.empty() ? "" : " ") + hex(v, is_float);
    return text;
  }

  void report(const case_result& r, bool from_float) {
    ++cases_;
    comparisons_ += r.inputs;
    agreements_ += r.agreements;
    if (from_float) {
      std::printf("\n[float -> %s] %s as mixprec (%s)", r.target.c_str(), r.reference.c_str(), r.mode.c_str());
    } else {
      std::printf("\n[%s -> float] %s", r.target.c_str(), r.reference.c_str());
    }
    std::printf(": %llu inputs, %llu agree, %llu disagree (%.2f s)\n", static_cast<unsigned long long>(r.inputs),
                static_cast<unsigned long long>(r.agreements), static_cast<unsigned long long>(r.inputs - r.agreements),
                r.seconds);
    auto print = [&](const tally_map& map, const char* kind) {
      for (const auto& [name, t] : map.sorted()) {
        if (from_float) {
          const float x = float_of(t.example_input);
          std::printf("    %s %s: %llu inputs; e.g. x = %a (0x%08x): mixprec 0x%02x, reference 0x%02x", kind, name,
                      static_cast<unsigned long long>(t.count), static_cast<double>(x), t.example_input,
                      t.example_mixprec, t.example_reference);
        } else {
          std::printf("    %s %s: %llu codes; e.g. code 0x%02x: mixprec %s, reference %s", kind, name,
                      static_cast<unsigned long long>(t.count), t.example_input, hex(t.example_mixprec, true).c_str(),
                      hex(t.example_reference, true).c_str());
        }
        std::printf("; mixprec gives {%s}, reference {%s}\n", results(t.mixprec_results, !from_float).c_str(),
                    results(t.reference_results, !from_float).c_str());
      }
    };
    print(r.documented, "documented");
    print(r.failures, "FAILURE");
    for (const auto& entry : r.documented.sorted()) documented_ += entry.second.count;
    for (const auto& entry : r.failures.sorted()) failures_ += entry.second.count;
    std::fflush(stdout);
  }

  const char* program_;
  std::uint64_t stride_ = 1;
  unsigned threads_ = 0;
  std::string only_;
  bool usage_error_ = false;
  std::size_t cases_ = 0;
  std::uint64_t comparisons_ = 0, agreements_ = 0, documented_ = 0, failures_ = 0;
  mixprec_test::stopwatch clock_;
};

}  // namespace mixprec_reference
