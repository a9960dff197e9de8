// The narrow integers' part of ml_dtypes_tables (tests/reference/ml_dtypes_tables.cpp): for int4,
// uint4, int2, uint2, int1, uint1, the same tables as for the float formats, plus arithmetic:
//   <name>.decode.f32   float(code) for every code
//   <name>.encode.u32   T(x).bits() for every input: intn's constructor, ml_dtypes' astype rule
//                       (truncate, wrap; NaN, inf and values beyond int32 give 0)
//   <name>.arith.u8     for every pair of codes (a major, b minor): the codes of a + b, a - b, a * b
#pragma once

#include <mixprec/intn.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace intn_tables {

template <class F>
bool with_intn_named(const std::string& name, F f) {
  using namespace mixprec;
  if (name == "int4") return f(int4{}), true;
  if (name == "uint4") return f(uint4{}), true;
  if (name == "int2") return f(int2{}), true;
  if (name == "uint2") return f(uint2{}), true;
  if (name == "int1") return f(int1{}), true;
  if (name == "uint1") return f(uint1{}), true;
  return false;
}

inline bool is_intn(const std::string& name) {
  return with_intn_named(name, [](auto) {});
}

// Every k and k + 1/2 for |k| <= 20 and the floats either side, both signs; the int32 limits.
inline void add_breakpoints(std::vector<float>& inputs) {
  for (int k2 = 0; k2 <= 40; ++k2) {
    const float b = static_cast<float>(k2) / 2.0f;
    for (float x : {b, std::nextafter(b, 0.0f), std::nextafter(b, 100.0f)}) {
      inputs.push_back(x);
      inputs.push_back(-x);
    }
  }
  for (float x : {2147483520.0f, 2147483648.0f, -2147483648.0f, -2147483904.0f}) inputs.push_back(x);
}

template <class T>
bool write_bytes(const std::string& path, const std::vector<T>& values) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(values.data(), sizeof(T), values.size(), f) == values.size();
  return std::fclose(f) == 0 && ok;
}

inline bool write_tables(const std::string& directory, const std::string& name, const std::vector<float>& inputs) {
  bool ok = false;
  with_intn_named(name, [&](auto tag) {
    using T = decltype(tag);
    constexpr unsigned codes = 1u << T::bits_per_value;
    std::vector<float> decode;
    std::vector<std::uint8_t> arith;
    for (unsigned a = 0; a < codes; ++a) {
      const T x = T::from_bits(static_cast<std::uint8_t>(a));
      decode.push_back(static_cast<float>(x));
      for (unsigned b = 0; b < codes; ++b) {
        const T y = T::from_bits(static_cast<std::uint8_t>(b));
        arith.insert(arith.end(), {(x + y).bits(), (x - y).bits(), (x * y).bits()});
      }
    }
    std::vector<std::uint32_t> encode;
    for (float x : inputs) encode.push_back(T(x).bits());
    ok = write_bytes(directory + "/" + name + ".decode.f32", decode) &&
         write_bytes(directory + "/" + name + ".encode.u32", encode) &&
         write_bytes(directory + "/" + name + ".arith.u8", arith);
  });
  return ok;
}

}  // namespace intn_tables
