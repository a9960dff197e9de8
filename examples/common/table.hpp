// A table of text cells and its four renderings: aligned for the terminal, Markdown, CSV
// (RFC 4180) and JSON (an array of objects, one per row).
//
//   text_table t({{"format", "format", column_kind::text}, {"max", "max", column_kind::number}});
//   t.add_row({"float16", format_number(65504)});
//   std::cout << render(t, table_style::aligned);
//
// A column has a key (CSV header, JSON member name: lower case, no spaces) and a title (the
// aligned and Markdown header).  Text columns are left-aligned and JSON strings; number columns
// are right-aligned, and JSON numbers wherever the cell is one by JSON's grammar ("inf" stays a
// string).  A table grouped by its first column (group_by_first_column()) shows that column's
// value once per run of equal values in the aligned and Markdown renderings, and the aligned one
// leaves a blank line between runs; CSV and JSON repeat it in every row.
#pragma once

#include <mixprec/errors.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "text.hpp"

namespace mixprec_example {

enum class column_kind { text, number };
enum class table_style { aligned, markdown, csv, json };

struct column {
  std::string key;
  std::string title;
  column_kind kind = column_kind::number;
};

class text_table {
 public:
  explicit text_table(std::vector<column> columns) : columns_(std::move(columns)) {}
  // text_table t({{"key", "title"}}) with a single column would otherwise be ambiguous.
  text_table(std::initializer_list<column> columns) : columns_(columns) {}

  void add_row(std::vector<std::string> cells) {
    if (cells.size() != columns_.size()) {
      throw mixprec::invalid_argument("text_table::add_row: " + std::to_string(cells.size()) + " cells for " +
                                      std::to_string(columns_.size()) + " columns");
    }
    rows_.push_back(std::move(cells));
  }

  void group_by_first_column() noexcept { grouped_ = true; }

  const std::vector<column>& columns() const noexcept { return columns_; }
  const std::vector<std::vector<std::string>>& rows() const noexcept { return rows_; }
  bool grouped() const noexcept { return grouped_; }
  // Whether row r starts a run of rows with the same first cell.
  bool starts_group(std::size_t r) const noexcept { return r == 0 || rows_[r][0] != rows_[r - 1][0]; }

 private:
  std::vector<column> columns_;
  std::vector<std::vector<std::string>> rows_;
  bool grouped_ = false;
};

// Numbers as the tables show them: `significant` digits (printf's %g), "inf", "-inf", "nan".
inline std::string format_number(double value, int significant = 3) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[40];
  std::snprintf(text, sizeof text, "%.*g", significant, value);
  return text;
}

// A share in [0, 1] as a percentage with `significant` digits, never in exponent form, and never
// rounded to "0%" or "100%" unless it is exactly that: a rare event stays visible ("0.0012%"),
// and "100%" means all.
inline std::string format_percent(double share, int significant = 2) {
  if (share == 0 || share == 1 || !std::isfinite(share)) return share == 1 ? "100%" : format_number(100 * share) + "%";
  const double percent = 100 * share;
  int decimals = std::max(0, significant - 1 - static_cast<int>(std::floor(std::log10(percent))));
  char text[48];
  while (true) {
    std::snprintf(text, sizeof text, "%.*f", decimals, percent);
    if (std::strtod(text, nullptr) < 100 || decimals >= 12) break;
    ++decimals;  // 99.97% would print as 100
  }
  return std::string(text) + "%";
}

namespace detail {

inline std::string padded(const std::string& cell, std::size_t width, column_kind kind) {
  const std::string padding(width - display_width(cell), ' ');
  return kind == column_kind::text ? cell + padding : padding + cell;
}

inline std::vector<std::size_t> column_widths(const text_table& table) {
  std::vector<std::size_t> widths;
  for (const column& c : table.columns()) widths.push_back(display_width(c.title));
  for (const auto& row : table.rows()) {
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], display_width(row[i]));
  }
  return widths;
}

// RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes doubled.
inline std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

inline std::string json_string(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
      quoted += escape;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

// RFC 8259 section 6: -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?
inline bool is_json_number(const std::string& text) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i > start;
  };
  if (i < text.size() && text[i] == '-') ++i;
  if (i < text.size() && text[i] == '0') {
    ++i;
  } else if (!(i < text.size() && text[i] >= '1' && text[i] <= '9' && digits())) {
    return false;
  }
  if (i < text.size() && text[i] == '.' && !(++i, digits())) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == text.size();
}

}  // namespace detail

// Columns separated by two spaces, a rule of dashes under the header.
inline std::string to_aligned_text(const text_table& table) {
  const std::vector<std::size_t> widths = detail::column_widths(table);
  const auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string text;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const column_kind kind = header && i == 0 ? column_kind::text : table.columns()[i].kind;
      text += (i ? "  " : "") + detail::padded(cells[i], widths[i], kind);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text + "\n";
  };
  std::vector<std::string> titles, rule;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    titles.push_back(table.columns()[i].title);
    rule.emplace_back(widths[i], '-');
  }
  std::string text = line(titles, true) + line(rule, true);
  for (std::size_t r = 0; r < table.rows().size(); ++r) {
    std::vector<std::string> row = table.rows()[r];
    if (table.grouped() && !table.starts_group(r)) row[0].clear();
    if (table.grouped() && table.starts_group(r) && r > 0) text += "\n";
    text += line(row, false);
  }
  return text;
}

// A GitHub-flavoured Markdown table; number columns are right-aligned ("---:").
inline std::string to_markdown(const text_table& table) {
  const auto escaped = [](const std::string& cell) {
    std::string text;
    for (const char c : cell) text += c == '|' ? std::string("\\|") : std::string(1, c);
    return text;
  };
  std::string header = "|", rule = "|";
  for (const column& c : table.columns()) {
    header.append(" ").append(escaped(c.title)).append(" |");
    rule += c.kind == column_kind::number ? "---:|" : "---|";
  }
  std::string text = header + "\n" + rule + "\n";
  for (std::size_t r = 0; r < table.rows().size(); ++r) {
    const auto& row = table.rows()[r];
    text += "|";
    for (std::size_t i = 0; i < row.size(); ++i) {
      const bool repeated = i == 0 && table.grouped() && !table.starts_group(r);
      text.append(" ").append(repeated ? std::string() : escaped(row[i])).append(" |");
    }
    text += "\n";
  }
  return text;
}

inline std::string to_csv(const text_table& table) {
  std::string text;
  for (std::size_t i = 0; i < table.columns().size(); ++i) {
    text.append(i ? "," : "").append(detail::csv_field(table.columns()[i].key));
  }
  text += "\n";
  for (const auto& row : table.rows()) {
    for (std::size_t i = 0; i < row.size(); ++i) text.append(i ? "," : "").append(detail::csv_field(row[i]));
    text += "\n";
  }
  return text;
}

inline std::string to_json(const text_table& table) {
  std::string text = "[";
  for (std::size_t r = 0; r < table.rows().size(); ++r) {
    text += r ? ",\n  {" : "\n  {";
    const auto& row = table.rows()[r];
    for (std::size_t i = 0; i < row.size(); ++i) {
      const bool number = table.columns()[i].kind == column_kind::number && detail::is_json_number(row[i]);
      text += (i ? ", " : "") + detail::json_string(table.columns()[i].key) + ": " +
              (number ? row[i] : detail::json_string(row[i]));
    }
    text += "}";
  }
  return text + (table.rows().empty() ? "]" : "\n]");
}

inline std::string render(const text_table& table, table_style style) {
  switch (style) {
    case table_style::aligned:
      return to_aligned_text(table);
    case table_style::markdown:
      return to_markdown(table);
    case table_style::csv:
      return to_csv(table);
    case table_style::json:
      return to_json(table);
  }
  return {};
}

}  // namespace mixprec_example
