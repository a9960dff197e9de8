// format_comparison: what each of mixprec's formats keeps of real numbers, how the error of long
// sums grows in it, and how fast mixprec converts arrays to and from it on this machine.
//
//   format_comparison                          every section, as aligned tables
//   format_comparison --quick                  small sizes: under a second instead of ~10 s
//   format_comparison --markdown | --csv | --json
//   format_comparison --svg accumulation.svg   also draws the accumulation error against n
//   format_comparison --only range             one section (or several: --only range,throughput)
//   format_comparison --formats fp16,bf16,e4m3fn
//
// The sections, each computed by the header named:
//   range           range and precision from the traits             range_table.hpp
//   conversion      error of storing weights, pixels, gradients     conversion_error.hpp, samples.hpp
//   block-scaling   the same with an e8m0 scale per 32 values (MX)  conversion_error.hpp
//   accumulation    error of sums and dot products against n        accumulation.hpp
//   throughput      convert_n speed in GB/s                         throughput.hpp
#include <mixprec/bulk/simd_path.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/command_line.hpp"
#include "../common/digits.hpp"
#include "../common/files.hpp"
#include "../common/report.hpp"
#include "../common/svg_chart.hpp"
#include "accumulation.hpp"
#include "conversion_error.hpp"
#include "formats.hpp"
#include "range_table.hpp"
#include "samples.hpp"
#include "throughput.hpp"

using namespace mixprec_example;

namespace {

const std::vector<std::string> all_sections = {"range", "conversion", "block-scaling", "accumulation", "throughput"};
constexpr std::uint64_t seed = 2024;  // every sample set comes from this seed: runs repeat exactly

// How much work each section does: the full run takes about 10 s on a 2-core machine, --quick
// well under one.
struct workload {
  std::size_t samples;              // values per generated sample set
  std::size_t longest_sum;          // the largest n of the accumulation curves
  std::size_t throughput_elements;  // array length of the speed measurement
  double min_seconds;               // per timing of the speed measurement
};
constexpr workload full_workload{std::size_t{1} << 20, 1000000, std::size_t{1} << 20, 0.1};
constexpr workload quick_workload{std::size_t{1} << 12, 10000, std::size_t{1} << 16, 0.005};

void progress(const std::string& what) { std::fprintf(stderr, "format_comparison: %s\n", what.c_str()); }

std::vector<std::string> parse_sections(const std::string& list) {
  std::vector<std::string> chosen = split(list, ',');
  for (const std::string& item : chosen) {
    bool known = false;
    for (const std::string& s : all_sections) known = known || s == item;
    if (!known) throw usage_error("--only: unknown section '" + item + "' (known: " + one_of(all_sections) + ")");
  }
  return chosen;
}

// f(set, format tag, format name) for every sample set and every selected format, sets outermost:
// the order of the conversion tables' rows.
template <class F>
void for_each_set_and_format(const std::vector<sample_set>& sets, const format_selection& formats, F f) {
  for (const sample_set& set : sets) {
    for_each_format(formats, [&](auto tag, const format_name& name) { f(set, tag, name); });
  }
}

report_section conversion_section(const std::vector<sample_set>& sets, const format_selection& formats) {
  text_table table({{"values", "values", column_kind::text},
                    {"format", "format", column_kind::text},
                    {"max_relative_error", "max rel. error"},
                    {"rms_relative_error", "RMS rel. error"},
                    {"flushed_to_zero", "flushed to 0"},
                    {"overflowed", "overflowed"}});
  table.group_by_first_column();
  for_each_set_and_format(sets, formats, [&](const sample_set& set, auto tag, const format_name& name) {
    using T = typename decltype(tag)::type;
    if constexpr (holds_values<T>) {
      const error_summary e = conversion_error<T>(set.values);
      table.add_row({set.name, name.type, format_number(e.max_relative), format_number(e.rms_relative),
                     format_percent(e.flushed_share), format_percent(e.overflow_share)});
    }
  });
  return {"conversion", "Conversion error: each value rounded to the format (nearest, ties to even)", table,
          "Relative error |stored - x| / |x| over the nonzero values that did not overflow; values flushed to 0 "
          "count with error 1. Shares are of the nonzero values. overflowed: x above max or below the lowest "
          "value (-max; -2^(bits-1) for the integers): it becomes inf, NaN, or the end of the range in fp6, fp4 "
          "and the integers, which have neither. Formats without negative values (e8m0, ue4m3, the unsigned "
          "integers) are left out. The integers round to nearest, ties to even (mixprec::convert, not ml_dtypes' "
          "truncating cast): without a scale they keep only what lies near their grid of whole numbers.\n"
          "The values, generated in double: Gaussian weights of standard deviation σ; every pixel of the "
          "UCI digits as stored (integers 0..16) and as a network sees them (/ 16); gradients: Student's t with 3 "
          "degrees of freedom times 1e-4, and |g| = 10^(-6 + 2 Z) with Z standard normal and a random sign "
          "(samples.hpp)."};
}

report_section block_scaling_section(const std::vector<sample_set>& sets, const format_selection& formats) {
  text_table table({{"values", "values", column_kind::text},
                    {"format", "element format", column_kind::text},
                    {"rms_relative_error", "RMS rel. error"},
                    {"flushed_to_zero", "flushed to 0"},
                    {"overflowed", "overflowed"},
                    {"mx_rms_relative_error", "MX: RMS rel. error"},
                    {"mx_flushed_to_zero", "MX: flushed to 0"}});
  table.group_by_first_column();
  for_each_set_and_format(sets, formats, [&](const sample_set& set, auto tag, const format_name& name) {
    using T = typename decltype(tag)::type;
    if constexpr (is_block_scaled_element<T>) {
      const error_summary alone = conversion_error<T>(set.values);
      const error_summary scaled = block_scaled_error<T>(set.values);
      table.add_row({set.name, name.type, format_number(alone.rms_relative), format_percent(alone.flushed_share),
                     format_percent(alone.overflow_share), format_number(scaled.rms_relative),
                     format_percent(scaled.flushed_share)});
    }
  });
  return {"block-scaling", "Block scaling: one float8_e8m0fnu scale per 32 values (OCP MX v1.0)", table,
          "The first three columns repeat the conversion table. The MX columns divide each block of 32 values by "
          "X = 2^(floor(log2(max |v|)) - emax), emax being the exponent of the element format's largest value, "
          "before rounding (OCP MX v1.0 section 6.3): 0.25 bits more per value. X moves each block into the "
          "element format's range, so nothing overflows; values above the element's max are clamped to it and "
          "measured. int4 and int2 (not MX element types) follow the rule OCP gives MXINT8, whose elements are "
          "int8 codes times 2^-6: emax = floor(log2(max)), 2 for int4 and 0 for int2, so the block's largest "
          "value lands in [4, 8) or [1, 2) before rounding and clamping."};
}

struct accumulation_of_format {
  std::string format;
  accumulation_curves sum;
  accumulation_curves dot;
};

std::vector<accumulation_of_format> measure_accumulation(const format_selection& formats, std::size_t longest) {
  reproducible_random random(seed + 1);
  std::vector<double> uniform(longest), x(longest), y(longest);
  for (double& v : uniform) v = random.uniform();
  for (double& v : x) v = random.normal();
  for (double& v : y) v = random.normal();
  const std::vector<std::size_t> lengths = quarter_decade_lengths(longest);
  std::vector<accumulation_of_format> results;
  for_each_format(formats, [&](auto tag, const format_name& name) {
    using T = typename decltype(tag)::type;
    if constexpr (accumulates_in_own_arithmetic<T>) {
      results.push_back({name.type, sum_error<T>(uniform, lengths), dot_error<T>(x, y, lengths)});
    }
  });
  return results;
}

report_section accumulation_section(const std::vector<accumulation_of_format>& results) {
  std::vector<column> columns = {{"operation", "operation", column_kind::text},
                                 {"format", "format", column_kind::text},
                                 {"accumulator", "accumulator", column_kind::text}};
  // The table shows the decades; the chart (--svg) every quarter decade.
  std::vector<std::size_t> shown;
  const std::vector<std::size_t>& lengths = results.empty() ? shown : results.front().sum.lengths;
  for (std::size_t i = 0; i < lengths.size(); i += 4) {
    shown.push_back(i);
    const std::size_t n = lengths[i];
    const std::string title = n < 10000 ? std::to_string(n) : "10^" + std::to_string(std::lround(std::log10(n)));
    columns.push_back({"n_" + std::to_string(n), "n=" + title});
  }
  text_table table(columns);
  table.group_by_first_column();
  const auto add = [&](const char* operation, const std::string& format, const char* accumulator,
                       const std::vector<double>& errors) {
    std::vector<std::string> row = {operation, format, accumulator};
    for (const std::size_t i : shown) row.push_back(format_number(errors[i], 2));
    table.add_row(row);
  };
  for (const char* operation : {"sum", "dot"}) {
    for (const accumulation_of_format& r : results) {
      const accumulation_curves& c = std::string(operation) == "sum" ? r.sum : r.dot;
      add(operation, r.format, "float", c.float_accumulator);
      add(operation, r.format, "format", c.format_accumulator);
    }
  }
  return {"accumulation", "Accumulation error after n terms: |computed - exact| / sum |term|", table,
          "sum: n values uniform in [0, 1); dot: n products of two N(0, 1) values. The inputs are rounded to the "
          "format first, so the error is the accumulation's alone; terms are added in order, one at a time. "
          "accumulator float: float acc += term (products in float); format: acc = acc + x * y in the format's "
          "own arithmetic (each product and each sum rounded to the format). exact: a Boost.Multiprecision binary "
          "float wide enough that no addition rounds (accumulation.hpp). float32's two rows agree, as they must. "
          "The integers are left out: their arithmetic wraps modulo 2^bits (ml_dtypes' rule), and a uniform "
          "[0, 1) input rounds to 0 or 1."};
}

std::vector<line_chart> accumulation_charts(const std::vector<accumulation_of_format>& results) {
  const chart_axis n_axis{"n (terms added)", axis_scale::logarithmic};
  const chart_axis error_axis{"|computed - exact| / sum |term|", axis_scale::logarithmic};
  std::vector<line_chart> charts = {
      {"Sum of n uniform [0, 1) values, float accumulator", n_axis, error_axis, {}},
      {"Sum of n uniform [0, 1) values, accumulated in the format", n_axis, error_axis, {}},
      {"Dot product of n N(0, 1) pairs, float accumulator", n_axis, error_axis, {}},
      {"Dot product of n N(0, 1) pairs, accumulated in the format", n_axis, error_axis, {}}};
  for (const accumulation_of_format& r : results) {
    const std::vector<double> n(r.sum.lengths.begin(), r.sum.lengths.end());
    charts[0].series.push_back({r.format, n, r.sum.float_accumulator});
    charts[1].series.push_back({r.format, n, r.sum.format_accumulator});
    charts[2].series.push_back({r.format, n, r.dot.float_accumulator});
    charts[3].series.push_back({r.format, n, r.dot.format_accumulator});
  }
  return charts;
}

report_section throughput_section(const format_selection& formats, const workload& work) {
  reproducible_random random(seed + 2);
  std::vector<float> input(work.throughput_elements);
  for (float& v : input) v = static_cast<float>(random.normal());
  text_table table({{"format", "format", column_kind::text},
                    {"encode_gb_per_s", "float -> format (GB/s)"},
                    {"decode_gb_per_s", "format -> float (GB/s)"}});
  const std::string copy = format_number(memcpy_gb_per_s(input, work.min_seconds));
  table.add_row({"memcpy of the floats", copy, copy});
  std::vector<float> magnitudes(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) magnitudes[i] = std::fabs(input[i]);
  for_each_format(formats, [&](auto tag, const format_name& name) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, float32>::value) {  // float to float is the memcpy row
      // e8m0 and ue4m3 hold no negative values (a negative input is a NaN, not a measure of speed),
      // the unsigned integers none either (it clamps to 0).
      const conversion_speed speed =
          measure_conversion_speed<T>(holds_values<T> ? input : magnitudes, work.min_seconds);
      table.add_row({name.type, format_number(speed.encode_gb_per_s), format_number(speed.decode_gb_per_s)});
    }
  });
  return {"throughput",
          "Bulk conversion speed: mixprec::convert_n, one thread, " + std::to_string(input.size()) + " values", table,
          std::string("Bytes read plus bytes written per second, the median of 3 timings; inputs N(0, 1) (their "
                      "magnitudes for float8_e8m0fnu, float8_ue4m3 and the unsigned integers, which hold no "
                      "negative values). The integers are packed as they are exchanged (pack_n, unpack_n: int4 two "
                      "values a byte, int2 four, int1 eight). SIMD path ") +
              mixprec::to_string(mixprec::active_simd_path()) +
              " (chosen at run time). memcpy is the machine's limit for the same array; a conversion can beat it "
              "because it writes fewer bytes than it reads. Careful figures, with Google Benchmark: "
              "docs/performance.md."};
}

int run(int argc, char** argv) {
  bool quick = false, markdown = false, csv = false, json = false;
  std::string svg_path, only, format_list, data_path = default_digits_path();
  command_line options("format_comparison",
                       "Compares mixprec's formats: range and precision from their traits, the error of storing\n"
                       "real values and of long sums in them, and bulk conversion speed on this machine.");
  options.flag("--quick", "small sample sizes and n up to 10^4 (about a second)", quick);
  options.flag("--markdown", "print Markdown tables", markdown);
  options.flag("--csv", "print CSV tables (one per section, separated by blank lines)", csv);
  options.flag("--json", "print one JSON object: section name -> array of rows", json);
  options.value("--svg", "FILE", "write the accumulation-error chart (SVG) to FILE", svg_path);
  options.value("--only", "SECTIONS", "comma-separated sections to print: " + one_of(all_sections), only);
  options.value("--formats", "LIST", "comma-separated formats, e.g. fp16,bf16,e4m3fn (default: all)", format_list);
  options.value("--data", "FILE", "the UCI digits CSV (default: " + data_path + ")", data_path);
  if (!options.parse(argc, argv)) return 0;

  if (markdown + csv + json > 1) throw usage_error("--markdown, --csv and --json exclude each other");
  const table_style style = markdown ? table_style::markdown
                            : csv    ? table_style::csv
                            : json   ? table_style::json
                                     : table_style::aligned;
  const std::vector<std::string> sections = only.empty() ? all_sections : parse_sections(only);
  const format_selection formats = format_list.empty() ? format_selection{} : format_selection::parse(format_list);
  const workload& work = quick ? quick_workload : full_workload;
  const auto wanted = [&](const std::string& key) {
    for (const std::string& s : sections) {
      if (s == key) return true;
    }
    return false;
  };

  std::vector<report_section> report;
  if (wanted("range")) report.push_back(range_section(formats));
  if (wanted("conversion") || wanted("block-scaling")) {
    progress("measuring the conversion error of " + std::to_string(work.samples) + " values per set");
    const std::vector<sample_set> sets = measurement_samples(work.samples, load_digits(data_path), seed);
    if (wanted("conversion")) report.push_back(conversion_section(sets, formats));
    if (wanted("block-scaling")) report.push_back(block_scaling_section(sets, formats));
  }
  if (wanted("accumulation") || !svg_path.empty()) {
    progress("measuring sums and dot products of up to " + std::to_string(work.longest_sum) + " terms");
    const std::vector<accumulation_of_format> results = measure_accumulation(formats, work.longest_sum);
    if (wanted("accumulation")) report.push_back(accumulation_section(results));
    if (!svg_path.empty()) {
      write_text_file(svg_path,
                      svg_figure("Accumulation error against n (format_comparison)", accumulation_charts(results)));
    }
  }
  if (wanted("throughput")) {
    progress("timing convert_n");
    report.push_back(throughput_section(formats, work));
  }

  if (style == table_style::aligned || style == table_style::markdown) {
    std::printf("mixprec format comparison (%s sizes; bulk conversions on the %s path)\n\n", quick ? "--quick" : "full",
                mixprec::to_string(mixprec::active_simd_path()));
  }
  std::fputs(render_report(report, style).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_example("format_comparison", [&] { return run(argc, argv); });
}
