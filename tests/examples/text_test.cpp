#include "common/text.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace mixprec_example;

TEST_CASE("split keeps empty items, so that a caller can reject them") {
  CHECK(split("a,b,c", ',') == std::vector<std::string>{"a", "b", "c"});
  CHECK(split("a,,b", ',') == std::vector<std::string>{"a", "", "b"});
  CHECK(split("", ',') == std::vector<std::string>{""});
  CHECK(split("a,", ',') == std::vector<std::string>{"a", ""});
}

TEST_CASE("one_of lists names as a sentence") {
  CHECK(one_of({"a"}) == "a");
  CHECK(one_of({"a", "b"}) == "a or b");
  CHECK(one_of({"a", "b", "c"}) == "a, b or c");
}

TEST_CASE("display_width counts UTF-8 code points, not bytes") {
  CHECK(display_width("abc") == 3);
  CHECK(display_width("σ = 1") == 5);  // σ is two bytes
  CHECK(display_width("") == 0);
}

TEST_CASE("word_wrapped breaks between words, within the width, with the indent") {
  CHECK(word_wrapped("aa bb cc dd", 5) == "aa bb\ncc dd\n");
  CHECK(word_wrapped("aa bb cc", 7, "  ") == "  aa bb\n  cc\n");
  CHECK(word_wrapped("a verylongword b", 4) == "a\nverylongword\nb\n");
  CHECK(word_wrapped("  spaced   out  ", 80) == "spaced out\n");
  CHECK(word_wrapped("", 10).empty());
}
