// A 64-bit fingerprint of bytes, for comparing replicas of a model across processes
// (session/process_group.hpp): not a cryptographic hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mixprec {
namespace detail {

// Each 8-byte word is mixed in by xor, an odd multiplication and a shift, the tail and the length
// last; `h` chains several arrays into one fingerprint.  Unequal arrays share a fingerprint only
// by a 64-bit collision.
inline std::uint64_t fingerprint_bytes(const void* data, std::size_t n, std::uint64_t h = 0x6A09E667F3BCC909u) {
  constexpr std::uint64_t odd = 0x9E3779B97F4A7C15u;
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes + i, 8);
    h = (h ^ w) * odd;
    h ^= h >> 29;
  }
  std::uint64_t tail = 0;
  if (n > i) std::memcpy(&tail, bytes + i, n - i);
  h = (h ^ tail ^ (static_cast<std::uint64_t>(n) << 3)) * odd;
  return h ^ (h >> 32);
}

}  // namespace detail

}  // namespace mixprec
