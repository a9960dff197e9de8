// format_table: the range and precision of every mixprec format, from the library's own
// compile-time traits (mixprec::describe), as an aligned table, Markdown or CSV.
//
//   format_table [--markdown | --csv]
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using row = std::vector<std::string>;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string yes_no(bool value) { return value ? "yes" : "no"; }

// Gigabytes to hold 7e9 parameters: packed at the format's width (fp6: 6 bits each), and as
// mixprec's value types store them (one value per byte or two).
std::string packed_gigabytes(int bits) { return number(7e9 * bits / 8 / 1e9); }
std::string stored_gigabytes(int bytes) { return number(7e9 * bytes / 1e9); }

template <class T>
row describe_row(const std::string& name) {
  constexpr mixprec::format_description d = mixprec::describe<T>();
  return {name,
          std::to_string(d.total_bits),
          std::to_string(d.exponent_bits),
          std::to_string(d.mantissa_bits),
          std::to_string(d.exponent_bias),
          number(d.max),
          number(d.min_normal),
          number(d.min_subnormal),
          number(d.epsilon),
          std::to_string(d.digits10) + "-" + std::to_string(d.max_digits10),
          number(d.dynamic_range_decades),
          yes_no(d.has_infinity),
          yes_no(d.has_nan),
          yes_no(d.has_negative_zero),
          packed_gigabytes(d.total_bits),
          stored_gigabytes(d.storage_bytes)};
}

template <class T>
row named_row() {
  return describe_row<T>(mixprec::format_name<typename T::format>());
}

std::vector<row> table() {
  using namespace mixprec;
  return {
      {"format", "bits", "exp", "man", "bias", "max", "min normal", "min subnormal", "epsilon", "digits",
       "range (decades)", "inf", "NaN", "-0", "7B packed (GB)", "7B stored (GB)"},
      describe_row<minifloat<ieee_binary32>>("float32"),
      named_row<float16>(),
      named_row<bfloat16>(),
      named_row<float8_e4m3fn>(),
      named_row<float8_e5m2>(),
      named_row<float8_e4m3fnuz>(),
      named_row<float8_e5m2fnuz>(),
      named_row<float6_e3m2fn>(),
      named_row<float6_e2m3fn>(),
      named_row<float4_e2m1fn>(),
      named_row<float8_e8m0fnu>(),
  };
}

void print_aligned(const std::vector<row>& rows, bool markdown) {
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const row& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::string line = markdown ? "|" : "";
    for (std::size_t c = 0; c < rows[i].size(); ++c) {
      const std::string& cell = rows[i][c];
      // Names left-aligned, numbers right-aligned.
      const std::string pad(width[c] - cell.size(), ' ');
      line += (markdown ? " " : (c == 0 ? "" : "  ")) + (c == 0 ? cell + pad : pad + cell) + (markdown ? " |" : "");
    }
    std::puts(line.c_str());
    if (markdown && i == 0) {
      std::string rule = "|";
      for (std::size_t c = 0; c < width.size(); ++c)
        rule += (c == 0 ? " :" : " ") + std::string(width[c] - 1, '-') + (c == 0 ? " |" : ": |");
      std::puts(rule.c_str());
    }
  }
}

void print_csv(const std::vector<row>& rows) {
  for (const row& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) line += (c ? "," : "") + r[c];
    std::puts(line.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  enum class style { aligned, markdown, csv } output = style::aligned;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--markdown") == 0) {
      output = style::markdown;
    } else if (std::strcmp(argv[i], "--csv") == 0) {
      output = style::csv;
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: %s [--markdown | --csv]\n", argv[0]);
      return 0;
    } else {
      std::fprintf(stderr, "format_table: unknown option '%s' (expected --markdown, --csv or --help)\n", argv[i]);
      return 2;
    }
  }
  const std::vector<row> rows = table();
  if (output == style::csv) {
    print_csv(rows);
  } else {
    print_aligned(rows, output == style::markdown);
  }
  if (output == style::aligned) {
    std::puts(
        "\nmax, min normal, min subnormal, epsilon: as std::numeric_limits defines them (max, min, denorm_min,\n"
        "epsilon). digits: decimal digits always kept (digits10) - digits that identify every value\n"
        "(max_digits10). range: log10(max / min subnormal). 7B packed: 7e9 values at the format's width;\n"
        "7B stored: as mixprec's value types hold them (fp6 and fp4 take one byte each).");
  }
  return 0;
}
