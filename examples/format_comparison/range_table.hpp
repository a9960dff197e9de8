// The range and precision of each format, read from the library's compile-time traits
// (mixprec::describe, include/mixprec/limits.hpp): nothing in this table is measured.
#pragma once

#include <mixprec/limits.hpp>

#include <cmath>
#include <string>

#include "../common/report.hpp"
#include "formats.hpp"

namespace mixprec_example {

// Gigabytes that 7e9 values take at the format's width (fp6: 6 bits each, packed).
inline double seven_billion_values_gigabytes(int bits) { return 7e9 * bits / 8 / 1e9; }

inline report_section range_section(const format_selection& selection) {
  text_table table({{"format", "format", column_kind::text},
                    {"bits", "bits"},
                    {"exponent_bits", "exp"},
                    {"mantissa_bits", "man"},
                    {"bias", "bias"},
                    {"max", "max"},
                    {"min_normal", "min normal"},
                    {"min_subnormal", "min subnormal"},
                    {"epsilon", "epsilon"},
                    {"decimal_digits", "digits", column_kind::text},
                    {"range_decades", "decades"},
                    {"range_binades", "binades"},
                    {"infinity", "inf", column_kind::text},
                    {"nan", "NaN", column_kind::text},
                    {"gigabytes_7b", "7B values (GB)"}});
  const auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
  for_each_format(selection, [&](auto tag, const format_name& name) {
    using T = typename decltype(tag)::type;
    constexpr mixprec::format_description d = mixprec::describe<T>();
    // The integers have no exponent, bias or subnormals, and no decimal digits to speak of.
    const auto for_floats = [&](std::string cell) { return d.is_integer ? std::string("-") : cell; };
    table.add_row(
        {name.type, std::to_string(d.total_bits), for_floats(std::to_string(d.exponent_bits)),
         std::to_string(d.mantissa_bits), for_floats(std::to_string(d.exponent_bias)), format_number(d.max, 5),
         format_number(d.min_normal, 5), for_floats(format_number(d.min_subnormal, 5)), format_number(d.epsilon, 5),
         for_floats(std::to_string(d.digits10) + "-" + std::to_string(d.max_digits10)),
         format_number(d.dynamic_range_decades, 3), format_number(d.dynamic_range_decades / std::log10(2.0), 3),
         yes_no(d.has_infinity), yes_no(d.has_nan), format_number(seven_billion_values_gigabytes(d.total_bits), 3)});
  });
  return {"range", "Range and precision (from the format traits)", table,
          "max, min normal, min subnormal, epsilon: std::numeric_limits' max(), min(), denorm_min(), epsilon(). "
          "digits: decimal digits always kept (digits10) - decimal digits that identify every value "
          "(max_digits10). decades, binades: log10 and log2 of max / min subnormal. 7B values: 7e9 values at the "
          "format's width (mixprec's value types store fp6 and fp4 one per byte: 7 GB; packing them is a "
          "container's job).\n"
          "The integers (int4 ... uint1, ml_dtypes' narrow integers) hold the whole numbers from their lowest "
          "value (-2^(bits-1) signed, 0 unsigned) to max: man is their value bits (numeric_limits' digits), "
          "min normal and epsilon their step 1, digits does not apply, decades and binades log10 and log2 of "
          "their largest magnitude (int1 holds -1 and 0, so its max is 0).\n"
          "float8_e8m0fnu holds only powers of two (no zero, no sign): it is the shared scale of the OCP MX block "
          "formats, so the measurements below use it as a block scale, not as a format for values."};
}

}  // namespace mixprec_example
