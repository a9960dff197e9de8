#include "common/table.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace mixprec_example;

namespace {
text_table formats_table() {
  text_table t({{"format", "format", column_kind::text}, {"max", "max value"}, {"note", "note", column_kind::text}});
  t.add_row({"float16", "65504", "IEEE"});
  t.add_row({"float8_e4m3fn", "448", "no inf, \"fn\""});
  t.add_row({"float8_e5m2", "inf", "a,b"});
  return t;
}
}  // namespace

TEST_CASE("the aligned table left-aligns text columns and right-aligns number columns") {
  CHECK(to_aligned_text(formats_table()) ==
        "format         max value  note\n"
        "-------------  ---------  ------------\n"
        "float16            65504  IEEE\n"
        "float8_e4m3fn        448  no inf, \"fn\"\n"
        "float8_e5m2          inf  a,b\n");
}

TEST_CASE("a table grouped by its first column shows each group's name once") {
  text_table t({{"set", "set", column_kind::text}, {"format", "format", column_kind::text}, {"error", "error"}});
  t.group_by_first_column();
  t.add_row({"σ=1", "fp16", "1e-4"});
  t.add_row({"σ=1", "bf16", "2e-3"});
  t.add_row({"pixels", "fp16", "0"});
  CHECK(to_aligned_text(t) ==
        "set     format  error\n"
        "------  ------  -----\n"
        "σ=1     fp16     1e-4\n"
        "        bf16     2e-3\n"
        "\n"
        "pixels  fp16        0\n");
  CHECK(to_markdown(t) ==
        "| set | format | error |\n|---|---|---:|\n| σ=1 | fp16 | 1e-4 |\n|  | bf16 | 2e-3 |\n| pixels | fp16 | 0 |\n");
  // CSV repeats the group in every row.
  CHECK(to_csv(t) == "set,format,error\nσ=1,fp16,1e-4\nσ=1,bf16,2e-3\npixels,fp16,0\n");
}

TEST_CASE("Markdown right-aligns number columns and escapes pipes") {
  text_table t({{"a", "a|b", column_kind::text}, {"n", "n"}});
  t.add_row({"x|y", "1"});
  CHECK(to_markdown(t) == "| a\\|b | n |\n|---|---:|\n| x\\|y | 1 |\n");
}

TEST_CASE("CSV uses the column keys and quotes fields as RFC 4180 says") {
  CHECK(to_csv(formats_table()) ==
        "format,max,note\n"
        "float16,65504,IEEE\n"
        "float8_e4m3fn,448,\"no inf, \"\"fn\"\"\"\n"
        "float8_e5m2,inf,\"a,b\"\n");
}

TEST_CASE("JSON writes number cells as numbers, and everything else as escaped strings") {
  CHECK(to_json(formats_table()) ==
        "[\n"
        "  {\"format\": \"float16\", \"max\": 65504, \"note\": \"IEEE\"},\n"
        "  {\"format\": \"float8_e4m3fn\", \"max\": 448, \"note\": \"no inf, \\\"fn\\\"\"},\n"
        "  {\"format\": \"float8_e5m2\", \"max\": \"inf\", \"note\": \"a,b\"}\n"
        "]");
  CHECK(to_json(text_table({{"a", "a"}})) == "[]");
}

TEST_CASE("is_json_number follows JSON's grammar") {
  using detail::is_json_number;
  for (const char* yes : {"0", "-0", "12", "1.5", "-1.5e-05", "3E+38", "65504"}) CHECK(is_json_number(yes));
  for (const char* no : {"", "-", "01", "1.", ".5", "1e", "inf", "nan", "1e+", "+1", "0x10", "1 "}) {
    CHECK_FALSE(is_json_number(no));
  }
}

TEST_CASE("numbers and percentages print as the tables show them") {
  CHECK(format_number(65504, 5) == "65504");
  CHECK(format_number(3.3895313892515355e38, 5) == "3.3895e+38");
  CHECK(format_number(0.000123456) == "0.000123");
  CHECK(format_number(HUGE_VAL) == "inf");
  CHECK(format_number(-HUGE_VAL) == "-inf");
  CHECK(format_number(std::nan("")) == "nan");
  CHECK(format_percent(0) == "0%");
  CHECK(format_percent(1) == "100%");
  CHECK(format_percent(0.5) == "50%");
  CHECK(format_percent(0.123) == "12%");
  CHECK(format_percent(0.00049) == "0.049%");
  CHECK(format_percent(1.2e-8) == "0.0000012%");
  // Never rounded to 100% unless it is all.
  CHECK(format_percent(0.9996) == "99.96%");
  CHECK(format_percent(0.99999) == "99.999%");
}

TEST_CASE("a row with the wrong number of cells is refused") {
  text_table t({{"a", "a"}, {"b", "b"}});
  CHECK_THROWS_AS(t.add_row({"1"}), mixprec::invalid_argument);
  CHECK_THROWS_WITH(t.add_row({"1", "2", "3"}), Catch::Matchers::Contains("3 cells for 2 columns"));
}
