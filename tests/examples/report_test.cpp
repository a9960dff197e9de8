#include "common/report.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace mixprec_example;

namespace {
std::vector<report_section> two_sections() {
  text_table a({{"x", "x", column_kind::text}, {"y", "y"}});
  a.add_row({"one", "1"});
  text_table b({{"z", "z"}});
  b.add_row({"2.5"});
  return {{"first", "First table", a, "Notes on the first table, long enough to be wrapped.\nA second paragraph."},
          {"second", "Second", b, ""}};
}
}  // namespace

TEST_CASE("an aligned report underlines titles and wraps notes paragraph by paragraph") {
  const std::string text = render_report(two_sections(), table_style::aligned);
  CHECK(text ==
        "First table\n"
        "===========\n"
        "x    y\n"
        "---  -\n"
        "one  1\n"
        "\n"
        "Notes on the first table, long enough to be wrapped.\n"
        "A second paragraph.\n"
        "\n"
        "Second\n"
        "======\n"
        "z\n"
        "---\n"
        "2.5\n");
}

TEST_CASE("a Markdown report gives each section a heading and each note a paragraph") {
  CHECK(render_report(two_sections(), table_style::markdown) ==
        "### First table\n\n| x | y |\n|---|---:|\n| one | 1 |\n"
        "\nNotes on the first table, long enough to be wrapped.\n\nA second paragraph.\n"
        "\n### Second\n\n| z |\n|---:|\n| 2.5 |\n");
}

TEST_CASE("a CSV report is the tables alone; a JSON report one object keyed by section") {
  CHECK(render_report(two_sections(), table_style::csv) == "x,y\none,1\n\nz\n2.5\n");
  CHECK(render_report(two_sections(), table_style::json) ==
        "{\n\"first\": [\n  {\"x\": \"one\", \"y\": 1}\n],\n\"second\": [\n  {\"z\": 2.5}\n]\n}\n");
}

TEST_CASE("notes wrap at the report width") {
  const std::string long_note(30, 'a');
  text_table t({{"a", "a"}});
  const std::string notes = long_note + " " + long_note + " " + long_note + " " + long_note;
  const std::string text = render_section({"k", "T", t, notes}, table_style::aligned);
  CHECK(text.find(long_note + " " + long_note + " " + long_note + "\n" + long_note + "\n") != std::string::npos);
}
