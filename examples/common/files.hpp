// Whole-file reads and writes for the examples, with errors that name the file and the reason.
#pragma once

#include <mixprec/errors.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace mixprec_example {

// A file that cannot be opened, read or written.
class file_error : public mixprec::error {
 public:
  using mixprec::error::error;
};

inline std::string read_text_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw file_error("cannot open '" + path + "': " + std::strerror(errno));
  std::string content;
  char buffer[65536];
  std::size_t count = 0;
  while ((count = std::fread(buffer, 1, sizeof buffer, file)) > 0) content.append(buffer, count);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) throw file_error("cannot read '" + path + "'");
  return content;
}

inline void write_text_file(const std::string& path, const std::string& content) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) throw file_error("cannot open '" + path + "' for writing: " + std::strerror(errno));
  const bool written = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) throw file_error("cannot write '" + path + "' (disk full?)");
}

}  // namespace mixprec_example
