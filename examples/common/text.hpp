// Small text helpers shared by the examples' tables, reports and command lines.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mixprec_example {

// "a,b,c" -> {"a", "b", "c"}; empty items stay ("a,,b" has three).
inline std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    items.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return items;
    begin = end + 1;
  }
}

// "a", "a or b", "a, b or c": for messages that list what is allowed.
inline std::string one_of(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return text;
}

// Terminal columns a UTF-8 string takes: its code points (the examples print no wide characters).
inline std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (const char c : text) width += (static_cast<unsigned char>(c) & 0xC0u) != 0x80u ? 1 : 0;
  return width;
}

// The words of `text` in lines of at most `width` columns (a longer word gets a line of its own),
// each line starting with `indent`.
inline std::string word_wrapped(const std::string& text, std::size_t width, const std::string& indent = "") {
  std::string wrapped, line;
  for (const std::string& word : split(text, ' ')) {
    if (word.empty()) continue;
    if (!line.empty() && display_width(indent + line + " " + word) > width) {
      wrapped += indent + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return line.empty() ? wrapped : wrapped + indent + line + "\n";
}

}  // namespace mixprec_example
