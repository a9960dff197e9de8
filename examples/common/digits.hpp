// The UCI handwritten digits (data/digits/README.md: 1797 images of 8x8 pixels, labels 0..9):
// loading, and the fixed train/test split that every example uses.
//
//   digits_data all = load_digits();            // data/digits/digits.csv of the source tree
//   digits_split parts = split_digits(all);     // 1438 train, 359 test; the same on every run
//   const float* image = parts.train.image(0);  // 64 pixels, row by row, integers 0..16
//   int label = parts.train.labels[0];
//
// A malformed file is a data_error naming the line and the value; a missing one a file_error.
#pragma once

#include <mixprec/errors.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "files.hpp"
#include "random.hpp"

namespace mixprec_example {

struct digits_data {
  static constexpr std::size_t pixels_per_image = 64;  // 8 x 8, row by row
  static constexpr int max_pixel = 16;                 // pixels count set bits of a 4 x 4 block
  static constexpr int classes = 10;

  std::vector<float> pixels;  // image i is pixels[64 i .. 64 i + 63], integers 0..16
  std::vector<int> labels;    // 0..9

  std::size_t size() const noexcept { return labels.size(); }
  const float* image(std::size_t i) const noexcept { return pixels.data() + i * pixels_per_image; }
};

// Content that is not the digits format.
class data_error : public mixprec::error {
 public:
  using mixprec::error::error;
};

// data/digits/digits.csv of the source tree this program was built from (CMake passes it as
// MIXPREC_DIGITS_CSV); the examples' --data option names another copy.
inline std::string default_digits_path() {
#ifdef MIXPREC_DIGITS_CSV
  return MIXPREC_DIGITS_CSV;
#else
  return "data/digits/digits.csv";
#endif
}

namespace detail {

// One comma-separated field as an integer in [0, max]; `what` names it in the message.
inline int parse_field(const char* begin, const char* end, int max, const std::string& where, const std::string& what) {
  int value = -1;
  const auto [stop, status] = std::from_chars(begin, end, value);
  if (status != std::errc() || stop != end || value < 0 || value > max) {
    throw data_error(where + ": " + what + " is '" + std::string(begin, end) + "', expected an integer in 0.." +
                     std::to_string(max));
  }
  return value;
}

}  // namespace detail

// Parses the CSV text; source names it in messages ("digits.csv").
inline digits_data parse_digits_csv(const std::string& text, const std::string& source) {
  constexpr std::size_t fields_per_line = digits_data::pixels_per_image + 1;
  digits_data data;
  std::size_t line_number = 0;
  std::size_t line_begin = 0;
  while (line_begin < text.size()) {
    std::size_t line_end = text.find('\n', line_begin);
    if (line_end == std::string::npos) line_end = text.size();
    ++line_number;
    const char* cursor = text.data() + line_begin;
    const char* end = text.data() + line_end;
    if (end > cursor && end[-1] == '\r') --end;  // a file saved with Windows line ends
    line_begin = line_end + 1;
    if (cursor == end) continue;  // blank lines (a trailing newline) carry nothing

    const std::string where = source + ":" + std::to_string(line_number);
    std::size_t field = 0;
    while (true) {
      const char* comma = cursor;
      while (comma != end && *comma != ',') ++comma;
      if (field < digits_data::pixels_per_image) {
        const int pixel =
            detail::parse_field(cursor, comma, digits_data::max_pixel, where, "pixel " + std::to_string(field + 1));
        data.pixels.push_back(static_cast<float>(pixel));
      } else if (field == digits_data::pixels_per_image) {
        data.labels.push_back(detail::parse_field(cursor, comma, digits_data::classes - 1, where, "the label"));
      }
      ++field;
      if (comma == end) break;
      cursor = comma + 1;
    }
    if (field != fields_per_line) {
      throw data_error(where + ": " + std::to_string(field) + " fields, expected " + std::to_string(fields_per_line) +
                       " (64 pixels, then the label)");
    }
  }
  if (data.labels.empty()) throw data_error(source + ": no samples");
  return data;
}

inline digits_data load_digits(const std::string& path = default_digits_path()) {
  return parse_digits_csv(read_text_file(path), path);
}

// The split every example uses: the sample indices shuffled by reproducible_random(seed), the
// first test_share of them (rounded to nearest) the test set, the rest the training set, both in
// shuffled order.  With the defaults: 359 test and 1438 training images.
constexpr std::uint64_t digits_split_seed = 1998;  // the year the data set was published
constexpr double digits_test_share = 0.2;

struct digits_split {
  digits_data train;
  digits_data test;
};

inline digits_split split_digits(const digits_data& all, std::uint64_t seed = digits_split_seed,
                                 double test_share = digits_test_share) {
  if (!(test_share > 0 && test_share < 1)) {
    throw mixprec::invalid_argument("split_digits: test_share is " + std::to_string(test_share) +
                                    ", it must be in (0, 1)");
  }
  std::vector<std::size_t> order(all.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  reproducible_random random(seed);
  random.shuffle(order);

  const auto test_count = static_cast<std::size_t>(std::lround(test_share * static_cast<double>(all.size())));
  digits_split parts;
  for (std::size_t k = 0; k < order.size(); ++k) {
    digits_data& part = k < test_count ? parts.test : parts.train;
    const float* image = all.image(order[k]);
    part.pixels.insert(part.pixels.end(), image, image + digits_data::pixels_per_image);
    part.labels.push_back(all.labels[order[k]]);
  }
  return parts;
}

}  // namespace mixprec_example
