// A float's bit pattern and back, for tests that compare results bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

inline std::uint32_t bits_of(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

inline float float_from_bits(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
