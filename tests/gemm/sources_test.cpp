// gemm's panel sources (gemm/detail/sources.hpp, mx/gemm.hpp): the bf16 reader of a source
// (read_bfloat16), which the pair packing takes instead of floats, gives the high halves of the
// floats read() gives, code for code, on every SIMD path, for every one-byte format whose values
// are bf16 values and for MX matrices of every element type, the blocks that leave bf16's normal
// range, hold inf or NaN or carry the NaN scale included.  The types with no such reader say so.
#include <mixprec/gemm/gemm.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/mx/gemm.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "all_formats.hpp"
#include "random_floats.hpp"

namespace {

using namespace mixprec;

constexpr simd_path source_paths[] = {simd_path::portable, simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16};

std::uint16_t high_half(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  return static_cast<std::uint16_t>(bits >> 16);
}

// The block (row .. row + rows) × (k .. k + depth) of a source through read_bfloat16 against the
// high halves of read(), in the source's cheap order (sources.hpp), with a leading dimension
// past the block's width so that nothing is written outside it.
void check_reader(const detail::panel_source& source, std::size_t row, std::size_t rows, std::size_t k,
                  std::size_t depth, simd_path path) {
  std::vector<float> floats(rows * depth);
  source.read(row, rows, k, depth, floats.data(), path);
  const bool by_k = source.rows_contiguous();
  const std::size_t width = by_k ? rows : depth, lines = by_k ? depth : rows, ld = width + 3;
  const std::uint16_t guard = 0xABCD;
  std::vector<std::uint16_t> codes(lines * ld, guard);
  REQUIRE(source.read_bfloat16(row, rows, k, depth, codes.data(), ld, path));
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t d = 0; d < depth; ++d) {
      INFO("row " << row + r << ", k " << k + d);
      const std::uint16_t got = by_k ? codes[d * ld + r] : codes[r * ld + d];
      REQUIRE(got == high_half(floats[d * rows + r]));
    }
  }
  for (std::size_t line = 0; line < lines; ++line) {
    for (std::size_t i = width; i < ld; ++i) REQUIRE(codes[line * ld + i] == guard);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("a one-byte format's bf16 reader gives the high halves of its floats, every code, every path",
                   "[gemm][sources]", MIXPREC_ALL_TYPES) {
  using T = TestType;
  using traits = format_traits<typename T::format>;
  constexpr std::size_t rows = 19, cols = 23;  // 437 elements: every code at least once
  std::vector<T> data(rows * cols);
  for (std::size_t i = 0; i < data.size(); ++i) {
    data[i] =
        detail::code_access::make<T>(static_cast<typename traits::storage_type>(i * 7 % mixprec_test::code_count<T>()));
  }
  for (const bool depth_contiguous : {true, false}) {
    INFO("depth contiguous " << depth_contiguous);
    const std::size_t source_rows = depth_contiguous ? rows : cols, source_depth = depth_contiguous ? cols : rows;
    const detail::strided_source<T> source(data.data(), cols, depth_contiguous);
    std::uint16_t unused = 0;
    if constexpr (!detail::has_bfloat16_table<T>()) {
      CHECK_FALSE(source.read_bfloat16(0, 1, 0, 1, &unused, 1, simd_path::portable));
    } else {
      for (const simd_path path : source_paths) {
        if (!simd_path_supported(path)) continue;
        INFO("path " << to_string(path));
        check_reader(source, 0, source_rows, 0, source_depth, path);
        check_reader(source, 3, source_rows - 5, 5, source_depth - 6, path);  // odd depth, inner block
      }
    }
  }
}

namespace {

// An MX matrix of Gaussian values with lines scaled over some 2^212: blocks whose values are bf16
// subnormals and blocks far above 1; then an element set to the
// element type's largest code in a block whose scale takes it past bf16's range, a NaN scale,
// and for e5m2 an infinite element.
template <class T>
mx_matrix<T> extreme_matrix(std::size_t rows, std::size_t cols, mx_axis axis) {
  // The lowest lines' blocks get scales a little above the smallest that keeps every value a bf16
  // value (2^(scale + q) >= 2^-133; the OCP scale of a Gaussian block is about 2^(shift + 1 - emax)).
  const int lowest = -134 - mx_element<T>::min_quantum_exponent + format_traits<typename T::format>::max_exponent + 3;
  std::vector<float> a = gaussian(rows * cols, 1.0f, 11);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t line = axis == mx_axis::rows ? r : c;
      a[r * cols + c] = std::ldexp(a[r * cols + c], static_cast<int>(line % 5) * 53 + lowest);
    }
  }
  mx_matrix<T> m = mx_quantize<T>(a.data(), rows, cols, cols, axis);
  m.set_block_scale(1, 0, float8_e8m0fnu::from_bits(255));
  m.set_block_scale(2, 1, float8_e8m0fnu::from_bits(252));
  m.set_element(axis == mx_axis::rows ? 2 : 40, axis == mx_axis::rows ? 40 : 2, std::numeric_limits<T>::max());
  if constexpr (std::is_same<T, float8_e5m2>::value) {
    m.set_element(axis == mx_axis::rows ? 4 : 70, axis == mx_axis::rows ? 70 : 4, -std::numeric_limits<T>::infinity());
  }
  return m;
}

}  // namespace

TEMPLATE_TEST_CASE("an MX source's bf16 reader gives the high halves of its floats, extreme blocks included",
                   "[gemm][sources][mx]", float8_e4m3fn, float8_e5m2, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn) {
  using T = TestType;
  for (const mx_axis axis : {mx_axis::rows, mx_axis::columns}) {
    const mx_matrix<T> m = extreme_matrix<T>(90, 100, axis);
    for (const bool swapped : {false, true}) {
      INFO("axis " << (axis == mx_axis::rows ? "rows" : "columns") << ", swapped " << swapped);
      const detail::mx_source<T> source(m, swapped);
      REQUIRE(source.exact_in_bfloat16());
      const std::size_t rows = swapped ? 100 : 90, depth = swapped ? 90 : 100;
      for (const simd_path path : source_paths) {
        if (!simd_path_supported(path)) continue;
        INFO("path " << to_string(path));
        check_reader(source, 0, rows, 0, depth, path);
        check_reader(source, 5, rows - 40, 3, depth - 7, path);  // blocks cut at both ends
      }
    }
  }
}

TEST_CASE("the vector key of bf16 codes is the smallest bf16_key of their floats", "[gemm][sources]") {
#if MIXPREC_X86_SIMD
  if (!simd_path_supported(simd_path::avx512)) return;
  // Codes drawn from the classes a key tells apart: zeros, subnormals, normals of every field,
  // infinities and NaNs, both signs; runs with and without each class, of lengths around 32.
  std::uint32_t state = 12345;
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  for (int run = 0; run < 4000; ++run) {
    const std::size_t count = 1 + next() % 100;
    const unsigned classes = next() % 16;  // which of subnormal, normal, special, zero may appear
    std::vector<std::uint16_t> codes(count);
    for (auto& code : codes) {
      const std::uint16_t sign = (next() & 1u) != 0 ? 0x8000 : 0;
      const unsigned pick = next() % 4;
      std::uint16_t magnitude = 0;  // zero (also where the class is absent)
      if (pick == 0 && (classes & 1u) != 0) magnitude = static_cast<std::uint16_t>(1 + next() % 0x7F);
      if (pick == 1 && (classes & 2u) != 0) magnitude = static_cast<std::uint16_t>(0x80 + next() % (0x7F80 - 0x80));
      if (pick == 2 && (classes & 4u) != 0) magnitude = static_cast<std::uint16_t>(0x7F80 + next() % 0x80);
      code = static_cast<std::uint16_t>(sign | magnitude);
    }
    int expected = detail::bf16_key_ignored;
    for (const std::uint16_t code : codes) {
      const std::uint32_t bits = static_cast<std::uint32_t>(code) << 16;
      float x = 0;
      std::memcpy(&x, &bits, sizeof x);
      expected = std::min(expected, detail::bf16_key(x));
    }
    INFO("run " << run << ", " << count << " codes");
    REQUIRE(detail::gemm_avx512::smallest_bf16_key(codes.data(), count, detail::bf16_key_ignored,
                                                   detail::bf16_key_unsafe) == expected);
  }
#endif
}
