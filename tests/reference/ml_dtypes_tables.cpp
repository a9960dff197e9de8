// mixprec's side of the comparison with ml_dtypes (tests/reference/ml_dtypes_reference.py, which
// runs this program and compares its tables with what ml_dtypes computes, bit for bit).
//
//   ml_dtypes_tables <directory> <stride> <format> [<format> ...]
//
// writes, as little-endian binary arrays:
//   inputs.f32          the float inputs: every <stride>-th float bit pattern, and for each named
//                       format every finite value, every midpoint between neighbours (and above
//                       max, the overflow threshold), one float either side of each, both signs
//   <format>.decode.f32 float(code) for every code 0 .. 2^bits - 1
//   <format>.encode.u32 convert<format>(input) for every input: nearest-even, overflow::non_finite
//                       (what ml_dtypes' astype does)
#include <mixprec/convert.hpp>
#include <mixprec/types.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "intn_tables.hpp"
#include "sweep.hpp"

namespace {

template <class T>
bool write_array(const std::string& path, const std::vector<T>& values) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(values.data(), sizeof(T), values.size(), f) == values.size();
  return std::fclose(f) == 0 && ok;
}

float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The types the tables can hold, by name, and the width of their codes.  A type needs
// T::from_bits(code), static_cast<float>(T), mixprec::convert<T>(float) (nearest-even, no
// saturation) and bits(); to add types that are not minifloats (the narrow integers), dispatch
// their names here and give code_bits their widths.
template <class F>
bool with_table_type(const std::string& name, F f) {
  return mixprec_test::with_type_named(name, f);
}
template <class T>
constexpr int code_bits() {
  return mixprec::format_traits<typename T::format>::total_bits;
}

template <class T>
std::vector<float> decode_every_code() {
  const std::uint64_t codes = std::uint64_t{1} << code_bits<T>();
  std::vector<float> values;
  for (std::uint64_t c = 0; c < codes; ++c) {
    values.push_back(static_cast<float>(T::from_bits(static_cast<typename T::storage_type>(c))));
  }
  return values;
}

// Every finite value of T, the midpoints between neighbours and the overflow threshold, with the
// floats on either side, both signs.
template <class T>
void add_breakpoints(std::vector<float>& inputs) {
  std::vector<double> magnitudes;
  for (float v : decode_every_code<T>()) {
    if (std::isfinite(v)) magnitudes.push_back(std::fabs(static_cast<double>(v)));
  }
  std::sort(magnitudes.begin(), magnitudes.end());
  magnitudes.erase(std::unique(magnitudes.begin(), magnitudes.end()), magnitudes.end());
  std::vector<double> points = magnitudes;
  for (std::size_t i = 0; i + 1 < magnitudes.size(); ++i) points.push_back((magnitudes[i] + magnitudes[i + 1]) / 2);
  if (magnitudes.size() >= 2) {
    const double top = magnitudes.back(), gap = top - magnitudes[magnitudes.size() - 2];
    points.push_back(top + gap / 2);
  }
  for (double p : points) {
    const auto f = static_cast<float>(p);  // exact: every value and midpoint of these formats is a float
    for (float x : {f, std::nextafter(f, 0.0f), std::nextafter(f, HUGE_VALF)}) {
      inputs.push_back(x);
      inputs.push_back(-x);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <directory> <stride> <format> [<format> ...]\n", argv[0]);
    return 2;
  }
  const std::string directory = argv[1];
  const std::uint64_t stride = std::max<std::uint64_t>(1, std::stoull(argv[2]));
  const std::vector<std::string> names(argv + 3, argv + argc);

  std::vector<float> inputs;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += stride)
    inputs.push_back(float_of(static_cast<std::uint32_t>(u)));
  if (std::any_of(names.begin(), names.end(), intn_tables::is_intn)) intn_tables::add_breakpoints(inputs);
  for (const std::string& name : names) {
    if (intn_tables::is_intn(name)) continue;
    if (!with_table_type(name, [&](auto tag) { add_breakpoints<decltype(tag)>(inputs); })) {
      std::fprintf(stderr, "unknown format: %s\n", name.c_str());
      return 2;
    }
  }
  if (!write_array(directory + "/inputs.f32", inputs)) {
    std::fprintf(stderr, "cannot write %s/inputs.f32\n", directory.c_str());
    return 1;
  }
  for (const std::string& name : names) {
    bool ok = true;
    if (intn_tables::is_intn(name)) ok = intn_tables::write_tables(directory, name, inputs);
    with_table_type(name, [&](auto tag) {
      using T = decltype(tag);
      std::vector<std::uint32_t> codes(inputs.size());
      for (std::size_t i = 0; i < inputs.size(); ++i) codes[i] = mixprec::convert<T>(inputs[i]).bits();
      ok = write_array(directory + "/" + name + ".decode.f32", decode_every_code<T>()) &&
           write_array(directory + "/" + name + ".encode.u32", codes);
    });
    if (!ok) {
      std::fprintf(stderr, "cannot write the tables of %s in %s\n", name.c_str(), directory.c_str());
      return 1;
    }
  }
  std::printf("ml_dtypes_tables: %zu inputs, %zu formats\n", inputs.size(), names.size());
  return 0;
}
