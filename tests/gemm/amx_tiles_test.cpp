// gemm/detail/amx_tiles.hpp: the C++ model of the AMX tile instructions follows the Intel SDM
// (LDTILECFG limits, TILELOADD / TILESTORED rows x colsb, TDPBF16PS's even and odd chains,
// DAZ, FTZ with tininess after rounding, the #UD shape rules).  The hardware backend is only
// compiled here (no AMX on this machine); docs/gemm.md says so.
#include <mixprec/gemm/detail/amx_kernel.hpp>
#include <mixprec/gemm/detail/amx_tiles.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using mixprec::detail::emulated_tiles;
using mixprec::detail::tile_config;
using mixprec::detail::tile_fault;

namespace {

std::uint16_t bf16(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  REQUIRE((bits & 0xFFFFu) == 0);  // the tests only use bf16 values
  return static_cast<std::uint16_t>(bits >> 16);
}

// Tile 0: C (rows x n floats); tile 4: A (rows x 2k bf16); tile 6: B (k pair rows x n pairs).
tile_config product_config(int rows, int n, int k) {
  tile_config c;
  c.palette_id = 1;
  c.rows[0] = static_cast<std::uint8_t>(rows), c.colsb[0] = static_cast<std::uint16_t>(4 * n);
  c.rows[4] = static_cast<std::uint8_t>(rows), c.colsb[4] = static_cast<std::uint16_t>(4 * k);
  c.rows[6] = static_cast<std::uint8_t>(k), c.colsb[6] = static_cast<std::uint16_t>(4 * n);
  return c;
}

// One TDPBF16PS of a 1 x 1 result from a start value and the pairs (a[2j], a[2j + 1]), (b[2j], b[2j + 1]).
float dot_one(float start, const std::vector<float>& a, const std::vector<float>& b) {
  const int k = static_cast<int>(a.size() / 2);
  emulated_tiles tiles;
  tiles.configure(product_config(1, 1, k));
  std::vector<std::uint16_t> a_bits, b_bits;
  for (float x : a) a_bits.push_back(bf16(x));
  for (float x : b) b_bits.push_back(bf16(x));
  tiles.load<0>(&start, 4);
  tiles.load<4>(a_bits.data(), 64);
  tiles.load<6>(b_bits.data(), 4);  // pair row j at 4 bytes each
  tiles.dot_bf16<0, 4, 6>();
  float out = -1.f;
  tiles.store<0>(&out, 4);
  return out;
}

}  // namespace

TEST_CASE("LDTILECFG accepts palette 1 within its limits and faults on anything else", "[amx]") {
  emulated_tiles tiles;
  tile_config ok = product_config(16, 16, 16);
  CHECK_NOTHROW(tiles.configure(ok));
  tile_config bad = ok;
  bad.palette_id = 2;
  CHECK_THROWS_AS(tiles.configure(bad), tile_fault);
  bad = ok, bad.reserved_b[3] = 1;
  CHECK_THROWS_WITH(tiles.configure(bad), Catch::Matchers::Contains("reserved"));
  bad = ok, bad.rows[2] = 17, bad.colsb[2] = 64;
  CHECK_THROWS_WITH(tiles.configure(bad), Catch::Matchers::Contains("17 rows"));
  bad = ok, bad.rows[2] = 4, bad.colsb[2] = 65;
  CHECK_THROWS_AS(tiles.configure(bad), tile_fault);
  bad = ok, bad.rows[2] = 0, bad.colsb[2] = 8;
  CHECK_THROWS_AS(tiles.configure(bad), tile_fault);
  // Palette 0 is the initial state: no tile is usable.
  tiles.configure(tile_config{});
  float x = 0.f;
  CHECK_THROWS_WITH(tiles.load<0>(&x, 4), Catch::Matchers::Contains("not configured"));
  tiles.configure(ok);
  tiles.release();
  CHECK_THROWS_AS(tiles.zero<0>(), tile_fault);
}

TEST_CASE("TILELOADD and TILESTORED move rows x colsb bytes with a stride", "[amx]") {
  emulated_tiles tiles;
  tile_config c;
  c.palette_id = 1, c.rows[3] = 3, c.colsb[3] = 8;
  tiles.configure(c);
  std::vector<std::uint8_t> source(3 * 20), target(4 * 10, 0xAA);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::uint8_t>(i);
  tiles.load<3>(source.data(), 20);
  tiles.store<3>(target.data(), 10);
  for (std::size_t row = 0; row < 4; ++row) {
    for (std::size_t byte = 0; byte < 10; ++byte) {
      const std::uint8_t expected = row < 3 && byte < 8 ? source[row * 20 + byte] : 0xAA;
      REQUIRE(target[row * 10 + byte] == expected);
    }
  }
  tiles.zero<3>();
  tiles.store<3>(target.data(), 10);
  CHECK(target[0] == 0);
  CHECK(target[8] == 0xAA);
}

TEST_CASE("TDPBF16PS: a small exact product", "[amx]") {
  // C (2 x 3) += A (2 x 4) * B (4 x 3): A pairs per row, B as 2 pair rows of 3 columns.
  const float a[2][4] = {{1, 2, 3, 4}, {-1, 0.5f, 2, -3}};
  const float b[4][3] = {{1, 0, 2}, {3, -1, 1}, {0.25f, 4, -2}, {1, 1, 1}};
  std::uint16_t a_bits[2][4], b_bits[2][3][2];
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 4; ++k) a_bits[i][k] = bf16(a[i][k]);
  }
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < 3; ++j) b_bits[k / 2][j][k % 2] = bf16(b[k][j]);
  }
  float c[2][3] = {{10, 20, 30}, {0, 0, 0}};
  emulated_tiles tiles;
  tiles.configure(product_config(2, 3, 2));
  tiles.load<0>(c, sizeof(c[0]));
  tiles.load<4>(a_bits, sizeof(a_bits[0]));
  tiles.load<6>(b_bits, sizeof(b_bits[0]));
  tiles.dot_bf16<0, 4, 6>();
  float out[2][3];
  tiles.store<0>(out, sizeof(out[0]));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      float expected = c[i][j];
      for (int k = 0; k < 4; ++k) expected += a[i][k] * b[k][j];  // small integers and halves: exact
      REQUIRE(out[i][j] == expected);
    }
  }
}

TEST_CASE("TDPBF16PS sums even and odd elements in two chains, then adds them", "[amx]") {
  // Even chain: 1 + 2^-24 rounds to 1 (tie to even); odd chain: 2^-24 + 2^-24 = 2^-23 exactly;
  // then 1 + 2^-23.  One chain in k order would give 1.
  const float e = std::ldexp(1.f, -24);
  CHECK(dot_one(0.f, {1.f, e, e, e}, {1.f, 1.f, 1.f, 1.f}) == 1.f + 2 * e);
  // The start value is added last: (2^-24 + 2^-24) first, then 1 + 2^-23.
  CHECK(dot_one(1.f, {e, e, 0.f, 0.f}, {1.f, 1.f, 0.f, 0.f}) == 1.f + 2 * e);
}

TEST_CASE("TDPBF16PS treats subnormal inputs as zero and flushes tiny results", "[amx]") {
  const float subnormal_bf16 = std::ldexp(1.f, -130);                                    // bf16 0x0008
  CHECK(dot_one(0.f, {subnormal_bf16, 0.f}, {1024.f, 0.f}) == 0.f);                      // DAZ on A (exact: 2^-120)
  CHECK(dot_one(std::ldexp(1.f, -140), {0.f, 0.f}, {0.f, 0.f}) == 0.f);                  // DAZ on the C element
  CHECK(dot_one(0.f, {std::ldexp(1.f, -70), 0.f}, {std::ldexp(1.f, -70), 0.f}) == 0.f);  // FTZ: 2^-140
  CHECK(std::signbit(dot_one(0.f, {-std::ldexp(1.f, -70), 0.f}, {std::ldexp(1.f, -70), 0.f})) == false);
  // Fused: a tiny product added to a normal sum is kept (2^-126 + 2^-140 is a normal float).
  const float two126 = std::ldexp(1.f, -126);
  CHECK(dot_one(0.f, {std::ldexp(1.f, -63), 0.f, std::ldexp(1.f, -70), 0.f},
                {std::ldexp(1.f, -63), 0.f, std::ldexp(1.f, -70), 0.f}) == two126 + std::ldexp(1.f, -140));
  // Alone in the odd chain, the same tiny product is a tiny result: flushed.
  CHECK(dot_one(0.f, {std::ldexp(1.f, -63), std::ldexp(1.f, -70)}, {std::ldexp(1.f, -63), std::ldexp(1.f, -70)}) ==
        two126);
}

TEST_CASE("FTZ decides tininess after rounding, as x86 does", "[amx]") {
  using mixprec::detail::fma_daz_ftz;
  const float two126 = std::ldexp(1.f, -126), step = std::ldexp(1.f, -76);
  // 2^-126 - 3 * 2^-152 rounds to 2^-126 in the subnormal grid, but to 2^-126 - 2^-150 with an
  // unbounded exponent: tiny, flushed.  2^-126 - 2^-152 rounds to 2^-126 either way: kept.
  CHECK(fma_daz_ftz(3 * step, -step, two126) == 0.f);
  CHECK(fma_daz_ftz(step, -step, two126) == two126);
  CHECK(fma_daz_ftz(2 * step, -step, two126) == two126);  // the tie rounds to even, 2^-126
  CHECK(fma_daz_ftz(5 * step, -step, two126) == 0.f);
  CHECK(std::isnan(fma_daz_ftz(std::numeric_limits<float>::infinity(), 0.f, 1.f)));
  CHECK(fma_daz_ftz(std::numeric_limits<float>::max(), 2.f, 0.f) == std::numeric_limits<float>::infinity());
}

TEST_CASE("TDPBF16PS faults when the shapes do not chain (AMX-E4 #UD)", "[amx]") {
  emulated_tiles tiles;
  tile_config c = product_config(4, 4, 4);
  c.rows[6] = 3;  // B must have as many rows as A has pairs
  tiles.configure(c);
  CHECK_THROWS_WITH((tiles.dot_bf16<0, 4, 6>()), Catch::Matchers::Contains("do not chain"));
  c = product_config(4, 4, 4);
  c.rows[4] = 5;  // A must have C's rows
  tiles.configure(c);
  CHECK_THROWS_AS((tiles.dot_bf16<0, 4, 6>()), tile_fault);
  c = product_config(4, 4, 4);
  c.colsb[6] = 12;  // B's columns must be C's
  tiles.configure(c);
  CHECK_THROWS_AS((tiles.dot_bf16<0, 4, 6>()), tile_fault);
}

TEST_CASE("the AMX kernel's tile shapes and the exact-order fallback agree", "[amx]") {
  // amx_tile on the emulation and amx_order_tile on float panels: the same bits for values the
  // instruction takes exactly (normal bf16 values of moderate range).
  using namespace mixprec::detail;
  std::vector<std::uint16_t> a(2 * 32 * 32);
  std::vector<std::uint32_t> b(2 * 16 * 32);
  std::vector<float> a_float(64 * 32), b_float(64 * 32);
  std::uint32_t state = 1;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int>(state >> 24) - 128) / 16.f;  // multiples of 1/16 in [-8, 8)
  };
  for (std::size_t k = 0; k < 64; ++k) {
    for (std::size_t i = 0; i < 32; ++i) {
      const float x = next();
      a_float[k * 32 + i] = x;
      a[(k / 32 * 32 + i) * 32 + k % 32] = bf16(x);
    }
    for (std::size_t j = 0; j < 32; ++j) {
      const float x = next();
      b_float[k * 32 + j] = x;
      const std::uint32_t half = bf16(x);
      b[(k / 2) * 32 + j] |= k % 2 == 0 ? half : half << 16;
    }
  }
  float from_tiles[32 * 32], from_floats[32 * 32];
  tile_io io;
  io.final = true, io.factor = 0.5f;
  io.out = from_tiles, io.out_ld = 32;
  emulated_tiles tiles;
  tiles.configure(amx_shape::config());
  REQUIRE(amx_tile(tiles, 2, a.data(), b.data(), io));
  io.out = from_floats;
  amx_order_tile(64, a_float.data(), b_float.data(), io);
  REQUIRE(std::memcmp(from_tiles, from_floats, sizeof(from_tiles)) == 0);
}
