#include "common/digits.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace mixprec_example;

namespace {

// The 65 fields of one sample: `pixel` everywhere, then the label.
std::string sample_line(int pixel, int label) {
  std::string line;
  for (int i = 0; i < 64; ++i) line += std::to_string(pixel) + ",";
  return line + std::to_string(label) + "\n";
}

// `prefix`, then `line` from position `from` on.  Built by append: GCC 12 in C++20 reports a false
// -Wrestrict for std::string::insert and replace, and for "literal" + std::string&&.
std::string spliced(const std::string& prefix, const std::string& line, std::size_t from) {
  std::string text = prefix;
  text.append(line, from, std::string::npos);
  return text;
}

std::string message_of(const std::string& text) {
  try {
    parse_digits_csv(text, "test.csv");
  } catch (const data_error& e) {
    return e.what();
  }
  return "no error";
}

// The rows of a data set as (pixels..., label) vectors, sorted: for comparing sets.
std::vector<std::vector<float>> sorted_rows(const digits_data& d) {
  std::vector<std::vector<float>> rows;
  for (std::size_t i = 0; i < d.size(); ++i) {
    std::vector<float> row(d.image(i), d.image(i) + digits_data::pixels_per_image);
    row.push_back(static_cast<float>(d.labels[i]));
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace

TEST_CASE("the shipped digits: 1797 images of 64 integer pixels in 0..16, labels 0..9") {
  const digits_data all = load_digits();
  REQUIRE(all.size() == 1797);
  REQUIRE(all.pixels.size() == 1797 * 64);
  for (const float p : all.pixels) {
    REQUIRE(p >= 0);
    REQUIRE(p <= 16);
    REQUIRE(p == std::floor(p));
  }
  std::map<int, int> per_class;
  for (const int label : all.labels) ++per_class[label];
  REQUIRE(per_class.size() == 10);
  CHECK(per_class.begin()->first == 0);
  CHECK(per_class.rbegin()->first == 9);
  for (const auto& [label, count] : per_class) CHECK(count >= 170);  // 174..183 per class in the UCI test set
  // The first image, a zero (data/digits/digits.csv, line 1).
  CHECK(all.labels[0] == 0);
  CHECK(all.image(0)[2] == 5);
  CHECK(all.image(0)[3] == 13);
}

TEST_CASE("the split is fixed: 359 test and 1438 training images, the same on every call") {
  const digits_data all = load_digits();
  const digits_split a = split_digits(all);
  const digits_split b = split_digits(all);
  CHECK(a.test.size() == 359);
  CHECK(a.train.size() == 1438);
  CHECK(a.test.pixels == b.test.pixels);
  CHECK(a.test.labels == b.test.labels);
  CHECK(a.train.labels == b.train.labels);

  // Together the parts are the data set, each image once.
  digits_data joined = a.train;
  joined.pixels.insert(joined.pixels.end(), a.test.pixels.begin(), a.test.pixels.end());
  joined.labels.insert(joined.labels.end(), a.test.labels.begin(), a.test.labels.end());
  CHECK(sorted_rows(joined) == sorted_rows(all));

  // Every class is in the test set; another seed gives another split.
  std::map<int, int> test_classes;
  for (const int label : a.test.labels) ++test_classes[label];
  CHECK(test_classes.size() == 10);
  CHECK(split_digits(all, digits_split_seed + 1).test.labels != a.test.labels);
  CHECK_THROWS_AS(split_digits(all, 1, 1.0), mixprec::invalid_argument);
}

TEST_CASE("the parser reads the format, blank lines and Windows line ends included") {
  std::string windows_line = sample_line(16, 0);
  windows_line.pop_back();
  windows_line.append("\r\n");
  const digits_data d = parse_digits_csv(sample_line(3, 7) + "\n" + windows_line, "x");
  REQUIRE(d.size() == 2);
  CHECK(d.labels == std::vector<int>{7, 0});
  CHECK(d.image(0)[63] == 3);
  CHECK(d.image(1)[0] == 16);
}

TEST_CASE("a malformed digits file is a data_error naming the line and the value") {
  using Catch::Matchers::Contains;
  CHECK_THAT(message_of(sample_line(1, 2) + sample_line(17, 2)),
             Contains("test.csv:2") && Contains("'17'") && Contains("0..16"));
  CHECK_THAT(message_of(sample_line(1, 10)), Contains("label is '10'") && Contains("0..9"));
  CHECK_THAT(message_of("1,2,3\n"), Contains("3 fields, expected 65"));
  CHECK_THAT(message_of(spliced("1,", sample_line(1, 2), 0)), Contains("66 fields"));
  CHECK_THAT(message_of(spliced("a", sample_line(1, 2), 1)), Contains("pixel 1 is 'a'"));
  CHECK_THAT(message_of(spliced("-1", sample_line(1, 2), 1)), Contains("'-1'"));
  CHECK_THAT(message_of(""), Contains("no samples"));
}

TEST_CASE("a missing digits file is a file_error naming the path") {
  try {
    load_digits("/nonexistent/digits.csv");
    FAIL("no error");
  } catch (const file_error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("/nonexistent/digits.csv"));
  }
}
