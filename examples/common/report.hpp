// A report: tables with titles and notes, rendered in one of the table styles (table.hpp).
//
//   aligned    title, underlined; the table; the notes
//   markdown   "### title"; the table; the notes as a paragraph
//   csv        the tables only, separated by blank lines (select one to get a plain CSV file)
//   json       one object: {"<key>": [rows...], ...}
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "table.hpp"
#include "text.hpp"

namespace mixprec_example {

struct report_section {
  std::string key;    // a short name: the JSON member, and what a command line selects it by
  std::string title;  // a heading for people
  text_table table;
  std::string notes;  // how to read the table: paragraphs separated by '\n', wrapped when printed
};

// Width of the aligned rendering's notes.
constexpr std::size_t report_text_width = 100;

// Each paragraph of `text` (separated by '\n') wrapped to `width`.
inline std::string paragraphs_wrapped(const std::string& text, std::size_t width) {
  std::string wrapped;
  for (const std::string& paragraph : split(text, '\n')) wrapped += word_wrapped(paragraph, width);
  return wrapped;
}

inline std::string render_section(const report_section& section, table_style style) {
  switch (style) {
    case table_style::aligned: {
      std::string text = section.title + "\n" + std::string(display_width(section.title), '=') + "\n";
      text.append(to_aligned_text(section.table));
      if (!section.notes.empty()) text.append("\n").append(paragraphs_wrapped(section.notes, report_text_width));
      return text;
    }
    case table_style::markdown: {
      std::string notes;  // Markdown joins a paragraph's lines; a blank line separates paragraphs
      for (const std::string& paragraph : split(section.notes, '\n')) {
        if (!paragraph.empty()) notes += "\n" + paragraph + "\n";
      }
      return "### " + section.title + "\n\n" + to_markdown(section.table) + notes;
    }
    case table_style::csv:
      return to_csv(section.table);
    case table_style::json:
      return detail::json_string(section.key) + ": " + to_json(section.table);
  }
  return {};
}

inline std::string render_report(const std::vector<report_section>& sections, table_style style) {
  std::string text = style == table_style::json ? "{" : "";
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const std::string separator = style == table_style::json ? (i ? ",\n" : "\n") : (i ? "\n" : "");
    text += separator + render_section(sections[i], style);
  }
  return text + (style == table_style::json ? "\n}\n" : "");
}

}  // namespace mixprec_example
