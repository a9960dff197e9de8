// The formats format_comparison compares, in the order its tables list them, and how a command
// line names them: float, the library's floating-point formats, then ml_dtypes' narrow integers.
//
//   for_each_format(selection, [](auto tag, const format_name& name) {
//     using T = typename decltype(tag)::type;   // float32, mixprec::float16, ...
//   });
#pragma once

#include <mixprec/intn.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/minifloat.hpp>
#include <mixprec/types.hpp>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "../common/command_line.hpp"

namespace mixprec_example {

// float described like the library's formats, so that every measurement is one template: it
// converts, rounds and computes exactly as float does (IEEE 754 binary32).
using float32 = mixprec::minifloat<mixprec::ieee_binary32>;

template <class T>
struct format_tag {
  using type = T;
};

struct format_name {
  const char* type;   // the C++ name: "float8_e4m3fn"
  const char* alias;  // the short name: "e4m3fn"
};

// The narrow integers int4 ... uint1 (mixprec/intn.hpp): their rows show what an integer grid
// without a scale keeps, and, with an MX block scale, what int4 and int2 keep beside fp4.
template <class T>
constexpr bool is_narrow_integer = mixprec::describe<T>().is_integer;

// The formats the measurements of values use: those with a sign.  float8_e8m0fnu holds powers of
// two from 2^-127 to 2^127 and nothing else (no zero, no sign): it is the shared scale of the OCP
// MX block formats, not a format for values; float8_ue4m3 (no sign) is NVFP4's block scale; the
// unsigned integers would turn every negative sample into 0.  The range and throughput tables list
// them all; block scaling uses e8m0 as the scale.
template <class T>
constexpr bool holds_values = mixprec::describe<T>().lowest < 0;

// The element types of the OCP Microscaling Formats v1.0 (section 5.3): the formats that block
// scaling with a float8_e8m0fnu scale applies to.
template <class T>
constexpr bool is_mx_element =
    std::is_same<T, mixprec::float8_e4m3fn>::value || std::is_same<T, mixprec::float8_e5m2>::value ||
    std::is_same<T, mixprec::float6_e3m2fn>::value || std::is_same<T, mixprec::float6_e2m3fn>::value ||
    std::is_same<T, mixprec::float4_e2m1fn>::value;

// The formats the block-scaling table measures: the MX elements, and the signed integers with a
// positive maximum (int4, int2; int1 holds only -1 and 0), block-scaled by the rule OCP MX v1.0
// gives its integer element MXINT8.
template <class T>
constexpr bool is_block_scaled_element = is_mx_element<T> ||
                                         (is_narrow_integer<T> && mixprec::describe<T>().is_signed &&
                                          mixprec::describe<T>().max >= 1);

// The exponent of T's largest value, floor(log2(max)): the emax of the OCP MX shared-scale rule
// (section 6.3).  For an integer that is the emax of the same values read as fixed point: MXINT8's
// elements are int8 codes times 2^-6 (emax 0), so in integer units its emax is 6 = floor(log2 127).
template <class T>
int element_emax() {
  return std::ilogb(mixprec::describe<T>().max);
}

// Arithmetic in the format itself means something for the floats; the integers' wraps modulo
// 2^bits (ml_dtypes' rule), so the accumulation table leaves them out.
template <class T>
constexpr bool accumulates_in_own_arithmetic = holds_values<T> && !is_narrow_integer<T>;

// Which formats to show; all of them unless the command line picks some.
class format_selection {
 public:
  format_selection() = default;

  // A comma-separated list of names or aliases ("fp16,e4m3fn"); throws usage_error on a name
  // that is not a format.
  static format_selection parse(const std::string& list);

  bool includes(const format_name& name) const {
    if (chosen_.empty()) return true;
    for (const std::string& c : chosen_) {
      if (c == name.type) return true;
    }
    return false;
  }

 private:
  std::vector<std::string> chosen_;  // type names; empty: every format
};

template <class F>
void for_each_format(const format_selection& selection, F&& f) {
  const auto visit = [&](auto tag, format_name name) {
    if (selection.includes(name)) f(tag, name);
  };
  visit(format_tag<float32>{}, {"float32", "fp32"});
  visit(format_tag<mixprec::float16>{}, {"float16", "fp16"});
  visit(format_tag<mixprec::bfloat16>{}, {"bfloat16", "bf16"});
  visit(format_tag<mixprec::tfloat32>{}, {"tfloat32", "tf32"});
  visit(format_tag<mixprec::float8_e4m3fn>{}, {"float8_e4m3fn", "e4m3fn"});
  visit(format_tag<mixprec::float8_e5m2>{}, {"float8_e5m2", "e5m2"});
  visit(format_tag<mixprec::float8_e4m3fnuz>{}, {"float8_e4m3fnuz", "e4m3fnuz"});
  visit(format_tag<mixprec::float8_e5m2fnuz>{}, {"float8_e5m2fnuz", "e5m2fnuz"});
  visit(format_tag<mixprec::float8_e4m3>{}, {"float8_e4m3", "e4m3"});
  visit(format_tag<mixprec::float8_e3m4>{}, {"float8_e3m4", "e3m4"});
  visit(format_tag<mixprec::float8_e4m3b11fnuz>{}, {"float8_e4m3b11fnuz", "e4m3b11fnuz"});
  visit(format_tag<mixprec::float6_e3m2fn>{}, {"float6_e3m2fn", "e3m2fn"});
  visit(format_tag<mixprec::float6_e2m3fn>{}, {"float6_e2m3fn", "e2m3fn"});
  visit(format_tag<mixprec::float4_e2m1fn>{}, {"float4_e2m1fn", "e2m1fn"});
  visit(format_tag<mixprec::float8_e8m0fnu>{}, {"float8_e8m0fnu", "e8m0fnu"});
  visit(format_tag<mixprec::float8_ue4m3>{}, {"float8_ue4m3", "ue4m3"});
  visit(format_tag<mixprec::int4>{}, {"int4", "int4"});
  visit(format_tag<mixprec::uint4>{}, {"uint4", "uint4"});
  visit(format_tag<mixprec::int2>{}, {"int2", "int2"});
  visit(format_tag<mixprec::uint2>{}, {"uint2", "uint2"});
  visit(format_tag<mixprec::int1>{}, {"int1", "int1"});
  visit(format_tag<mixprec::uint1>{}, {"uint1", "uint1"});
}

inline format_selection format_selection::parse(const std::string& list) {
  std::vector<format_name> known;
  for_each_format(format_selection{}, [&](auto, const format_name& name) { known.push_back(name); });
  format_selection selection;
  for (const std::string& item : split(list, ',')) {
    const format_name* match = nullptr;
    for (const format_name& k : known) {
      if (item == k.type || item == k.alias) match = &k;
    }
    if (match == nullptr) {
      std::vector<std::string> aliases;
      for (const format_name& k : known) aliases.emplace_back(k.alias);
      throw usage_error("--formats: unknown format '" + item + "' (known: " + one_of(aliases) +
                        ", or their C++ names such as float8_e4m3fn)");
    }
    selection.chosen_.emplace_back(match->type);
  }
  return selection;
}

}  // namespace mixprec_example
