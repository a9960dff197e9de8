// Whole-file reads and writes for scaler state and statistics.  A write goes to "<path>.tmp"
// first and is renamed over <path>, so that a crash mid-write never leaves a half-written
// checkpoint under the real name.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../errors.hpp"

namespace mixprec::detail {

// Larger than any state a scaler writes (64 Ki history entries of 25 bytes, plus options).
constexpr std::size_t state_file_limit = std::size_t{4} << 20;

inline std::string errno_text() { return std::strerror(errno); }

inline void write_file(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp";
  std::FILE* f = std::fopen(temporary.c_str(), "wb");
  if (f == nullptr) throw scaling_error("cannot open '" + temporary + "' for writing: " + errno_text());
  const bool written = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    const std::string reason = errno_text();
    std::remove(temporary.c_str());
    throw scaling_error("cannot write '" + temporary + "': " + reason);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = errno_text();
    std::remove(temporary.c_str());
    throw scaling_error("cannot rename '" + temporary + "' to '" + path + "': " + reason);
  }
}

inline std::vector<std::uint8_t> read_file(const std::string& path, std::size_t limit) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw scaler_state_error("cannot open '" + path + "': " + errno_text());
  std::vector<std::uint8_t> bytes;
  std::uint8_t buffer[65536];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) {
    if (bytes.size() + n > limit) {
      std::fclose(f);
      throw scaler_state_error("'" + path + "' is larger than " + std::to_string(limit) +
                               " bytes, the most a scaler state takes: not a scaler state");
    }
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw scaler_state_error("cannot read '" + path + "': " + errno_text());
  return bytes;
}

}  // namespace mixprec::detail
