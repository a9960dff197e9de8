// Whole-file reads and writes for scaler state, session checkpoints and statistics.
//
// A write never leaves a torn file under the real name, even with several writers or a power
// loss: the bytes go to a temporary file of a unique name (O_EXCL) in the target's directory,
// which is flushed to the disk (fsync), then renamed over the target (rename(2) replaces it
// atomically), and the directory is flushed so that the rename itself survives a crash.
// Two writers to one path each write their own temporary file; the last rename wins and the
// file always holds one writer's complete bytes; neither save fails because of the other.  A
// failing write removes its own temporary file only.  When the target is a symbolic link, the
// link is followed and the file it names is replaced (the link stays); a link that names no
// file is an error.  (docs/scaling.md, "Saving state".)
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../errors.hpp"

namespace mixprec::detail {

// Larger than any state a scaler writes (64 Ki history entries of 25 bytes, plus options).
constexpr std::size_t state_file_limit = std::size_t{4} << 20;

inline std::string errno_text() { return std::strerror(errno); }

// The file a write to `path` replaces: the path itself, or where the symbolic link it is points.
inline std::string write_target(const std::string& path) {
  struct stat link_status {};
  if (::lstat(path.c_str(), &link_status) != 0 || !S_ISLNK(link_status.st_mode)) return path;
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) {
    throw scaling_error("cannot write '" + path + "': it is a symbolic link to no file (" + errno_text() + ")");
  }
  std::string target(resolved);
  std::free(resolved);
  return target;
}

inline std::string directory_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes all of `content` to the descriptor and flushes it to the disk; false (errno set) on failure.
inline bool write_all_and_sync(int fd, const std::string& content) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ::ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return ::fsync(fd) == 0;
}

// Creates "<target>.tmp.<pid>.<n>" with O_EXCL (a name no other writer, thread or process, holds;
// the umask applies as to any new file) and returns its descriptor; throws if it cannot.
inline int create_unique_file(const std::string& target, std::string& name) {
  static std::atomic<std::uint64_t> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST) break;  // left behind by a process that had this pid: try the next number
  }
  throw scaling_error("cannot create a temporary file beside '" + target + "': " + errno_text());
}

inline void write_file(const std::string& path, const std::string& content) {
  const std::string target = write_target(path);
  std::string temporary;
  const int fd = create_unique_file(target, temporary);
  const bool written = write_all_and_sync(fd, content);
  const std::string write_error = errno_text();
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    ::unlink(temporary.c_str());
    throw scaling_error("cannot write '" + temporary + "': " + (written ? errno_text() : write_error));
  }
  if (std::rename(temporary.c_str(), target.c_str()) != 0) {
    const std::string reason = errno_text();
    ::unlink(temporary.c_str());
    throw scaling_error("cannot rename '" + temporary + "' to '" + target + "': " + reason);
  }
  // The rename is durable once the directory is; a directory that cannot be opened or flushed
  // (some file systems refuse fsync on directories) leaves a complete file, so it is not an error.
  const int directory = ::open(directory_of(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory >= 0) {
    ::fsync(directory);
    ::close(directory);
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
