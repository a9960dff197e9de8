// The checks every interop mapping must pass, for every code of the format:
//   1. foreign -> mixprec -> foreign keeps the code bit for bit, and so does mixprec -> foreign
//      -> mixprec (the conversions are bit copies);
//   2. for every non-NaN code the mixprec value converts to the same float as the foreign
//      type's own float conversion (same bits: -0 stays -0); NaN codes give NaN in both.
#pragma once

#include <mixprec/types.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace mixprec_test {

struct interop_report {
  std::uint64_t codes = 0;
  std::uint64_t nan_codes = 0;
  std::vector<std::string> failures;  // the first few, in words

  void fail(const char* what, std::uint64_t code, std::uint64_t got) {
    if (failures.size() < 8) {
      char line[160];
      std::snprintf(line, sizeof line, "%s: code 0x%02llx gave 0x%llx", what, static_cast<unsigned long long>(code),
                    static_cast<unsigned long long>(got));
      failures.emplace_back(line);
    } else if (failures.size() == 8) {
      failures.emplace_back("...");
    }
  }
  std::string text() const {
    std::string all;
    for (const auto& f : failures) all += f + "\n";
    return all;
  }
};

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// make_native(code) builds the foreign value with that code by the foreign library's own means
// (its raw-code constructor or storage member); native_code(value) reads the code back the
// same way, so the check does not lean on the mapping under test.  to_native(T) is the
// mapping's way back from mixprec to the foreign type.
template <class T, class Native, class MakeNative, class NativeCode, class ToNative>
interop_report check_every_code(MakeNative make_native, NativeCode native_code, ToNative to_native) {
  using traits = mixprec::format_traits<typename T::format>;
  using storage = typename T::storage_type;
  interop_report report;
  for (std::uint64_t code = 0; code <= traits::code_mask; ++code) {
    const auto c = static_cast<storage>(code);
    const Native native = make_native(c);
    const T from_native(native);
    if (from_native.bits() != c) report.fail("foreign -> mixprec", code, from_native.bits());
    const T value = T::from_bits(c);
    const Native back = to_native(value);
    if (native_code(back) != c) report.fail("mixprec -> foreign", code, native_code(back));
    if (T(to_native(from_native)).bits() != c) report.fail("foreign -> mixprec -> foreign -> mixprec", code, 0);

    const float foreign_float = static_cast<float>(native);
    const auto mixprec_float = static_cast<float>(value);
    if (traits::is_nan(code)) {
      ++report.nan_codes;
      if (!std::isnan(foreign_float))
        report.fail("NaN code, foreign float is not NaN", code, float_bits(foreign_float));
      if (!std::isnan(mixprec_float))
        report.fail("NaN code, mixprec float is not NaN", code, float_bits(mixprec_float));
    } else if (float_bits(foreign_float) != float_bits(mixprec_float)) {
      report.fail("float value differs from the foreign type's (mixprec's float bits shown)", code,
                  float_bits(mixprec_float));
    }
    ++report.codes;
  }
  return report;
}

}  // namespace mixprec_test
