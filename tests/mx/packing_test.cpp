// mx/packing.hpp and mx/matrix.hpp: every code of every element type round-trips through the
// packed container at every position of a block without touching its neighbours; block packing
// agrees with element access; the documented bit layout; scales; shapes and errors.
#include <mixprec/mx/matrix.hpp>
#include <mixprec/mx/packing.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace mixprec;

template <class T>
unsigned code_count() {
  return 1u << mx_element<T>::bits;
}

}  // namespace

TEMPLATE_TEST_CASE("every code round-trips through the packed container at every position, neighbours untouched",
                   "[mx]", float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn, mxint8_element) {
  std::mt19937 random(1);
  for (const mx_axis axis : {mx_axis::rows, mx_axis::columns}) {
    // 3 × 70 (rows) or 70 × 3 (columns): lines of 70 elements, three blocks, the last partial.
    const std::size_t rows = axis == mx_axis::rows ? 3 : 70, cols = axis == mx_axis::rows ? 70 : 3;
    mx_matrix<TestType> m(rows, cols, axis);
    CHECK(m.blocks_per_line() == 3);
    CHECK(m.data_bytes() == 3 * 3 * mx_element<TestType>::block_bytes);
    std::vector<unsigned> model(rows * cols);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        model[r * cols + c] = static_cast<unsigned>(random()) % code_count<TestType>();
        m.set_element(r, c, TestType::from_bits(static_cast<typename TestType::storage_type>(model[r * cols + c])));
      }
    }
    std::size_t round_trips = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        for (unsigned code = 0; code < code_count<TestType>(); ++code) {
          m.set_element(r, c, TestType::from_bits(static_cast<typename TestType::storage_type>(code)));
          REQUIRE(m.element(r, c).bits() == code);
          ++round_trips;
        }
        m.set_element(r, c, TestType::from_bits(static_cast<typename TestType::storage_type>(model[r * cols + c])));
        // The neighbours along the line (the ones sharing bytes) are unchanged.
        for (std::size_t k = 0; k < (axis == mx_axis::rows ? cols : rows); ++k) {
          const std::size_t rr = axis == mx_axis::rows ? r : k, cc = axis == mx_axis::rows ? k : c;
          REQUIRE(m.element(rr, cc).bits() == model[rr * cols + cc]);
        }
      }
    }
    CHECK(round_trips == rows * cols * code_count<TestType>());
  }
}

TEMPLATE_TEST_CASE("block packing and unpacking agree with element access", "[mx]", float8_e4m3fn, float6_e3m2fn,
                   float4_e2m1fn) {
  constexpr int bits = mx_element<TestType>::bits;
  std::mt19937 random(2);
  for (int trial = 0; trial < 1000; ++trial) {
    unsigned char codes[32], packed[32] = {}, unpacked[32];
    for (unsigned char& c : codes) c = static_cast<unsigned char>(random() % (1u << bits));
    detail::pack_codes<bits>(codes, 32, packed);
    for (std::size_t k = 0; k < 32; ++k) REQUIRE(detail::read_packed_code<bits>(packed, k) == codes[k]);
    detail::unpack_codes<bits>(packed, 32, unpacked);
    for (std::size_t k = 0; k < 32; ++k) REQUIRE(unpacked[k] == codes[k]);
    unsigned char written[32] = {};
    for (std::size_t k = 0; k < 32; ++k) detail::write_packed_code<bits>(written, k, codes[k]);
    for (std::size_t i = 0; i < mx_element<TestType>::block_bytes; ++i) REQUIRE(written[i] == packed[i]);
  }
}

TEST_CASE("the packed layout is little-endian: fp4 low nibble first, fp6 four in three bytes", "[mx]") {
  const unsigned char fp4_codes[8] = {0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0xF};
  unsigned char fp4[4];
  detail::pack_codes<4>(fp4_codes, 8, fp4);
  CHECK(fp4[0] == 0x21);
  CHECK(fp4[1] == 0x43);
  CHECK(fp4[2] == 0x65);
  CHECK(fp4[3] == 0xF7);
  // e0 = 0b000001, e1 = 0b000010, e2 = 0b000011, e3 = 0b111111:
  // byte 0 = e1[1:0] e0 = 10 000001, byte 1 = e2[3:0] e1[5:2] = 0011 0000, byte 2 = e3 e2[5:4] = 111111 00
  const unsigned char fp6_codes[8] = {0x01, 0x02, 0x03, 0x3F, 0, 0, 0, 0};
  unsigned char fp6[6];
  detail::pack_codes<6>(fp6_codes, 8, fp6);
  CHECK(fp6[0] == 0x81);
  CHECK(fp6[1] == 0x30);
  CHECK(fp6[2] == 0xFC);
  CHECK(fp6[3] == 0);
}

TEST_CASE("scales: every e8m0 code per block, values X × P, NaN blocks", "[mx]") {
  mx_matrix<float4_e2m1fn> m(2, 40, mx_axis::rows);
  CHECK(m.scale(1, 39).bits() == mx_unit_scale_code);
  m.set_element(1, 33, float4_e2m1fn(-3.0f));
  for (unsigned code = 0; code < 256; ++code) {
    m.set_block_scale(1, 1, float8_e8m0fnu::from_bits(static_cast<std::uint8_t>(code)));
    REQUIRE(m.scale(1, 33).bits() == code);
    REQUIRE(m.scale(1, 0).bits() == mx_unit_scale_code);  // the row's other block
    if (code == 0xFF) {
      REQUIRE(std::isnan(m.value(1, 33)));
      REQUIRE(std::isnan(m.value(1, 34)));
    } else {
      REQUIRE(m.value(1, 33) == -3.0f * std::ldexp(1.0f, static_cast<int>(code) - 127));
      REQUIRE(m.value(1, 34) == 0.0f);
    }
  }
}

TEST_CASE("mx_matrix refuses positions outside it, naming them", "[mx]") {
  mx_matrix<float8_e4m3fn> m(4, 5, mx_axis::columns);
  CHECK(m.lines() == 5);
  CHECK(m.blocks_per_line() == 1);
  CHECK_THROWS_WITH(m.element(4, 0), Catch::Contains("(4, 0)") && Catch::Contains("4 × 5"));
  CHECK_THROWS_AS(m.set_element(0, 5, float8_e4m3fn(1.0f)), invalid_argument);
  CHECK_THROWS_WITH(m.block_scale(0, 1), Catch::Contains("block 1 of line 0"));
  mx_matrix<float6_e2m3fn> empty(0, 7, mx_axis::rows);
  CHECK(empty.blocks() == 0);
  CHECK(empty.data_bytes() == 0);
}

TEST_CASE("mx_matrix refuses line lengths whose block count would wrap (issue: SIZE_MAX columns)", "[mx]") {
  constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();
  // ceil(L / 32) was computed as (L + 31) / 32, which wraps to 0 for L > SIZE_MAX - 31: the size
  // check was skipped, nothing was allocated, and element access read wild memory.
  for (const std::size_t length : {huge, huge - 5, huge - 30, huge - 31, huge / 2}) {
    CHECK_THROWS_WITH((mx_matrix<float4_e2m1fn>(2, length, mx_axis::rows)), Catch::Contains("do not fit in memory"));
    CHECK_THROWS_WITH((mx_matrix<float8_e4m3fn>(length, 3, mx_axis::columns)), Catch::Contains("do not fit in memory"));
  }
  // A matrix that does fit has the block count ceil(L / 32) everywhere.
  const mx_matrix<float4_e2m1fn> m(2, 65, mx_axis::rows);
  CHECK(m.blocks_per_line() == 3);
  CHECK(m.blocks() == 6);
  CHECK(m.data_bytes() == 6 * mx_matrix<float4_e2m1fn>::block_bytes);
}
