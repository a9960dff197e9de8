// bulk/random_words.hpp: the vector Philox words are detail/philox.hpp's scalar words on every
// path, for any start, length, (tensor, step), k-bit rule, and across the counter's low-word wrap.
#include <mixprec/bulk/random_words.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "simd_paths.hpp"

using namespace mixprec;

TEST_CASE("philox_words equals philox_bits for every start, length, tensor and step on every path", "[bulk][random]") {
  const std::uint64_t seed = 0x0123'4567'89AB'CDEFu;
  // Starts at every residue modulo 4, around the low word's wrap (block 2^32 - 1 .. 2^32 + 1),
  // and far into the 64-bit index space.
  const std::uint64_t starts[] = {0,
                                  1,
                                  2,
                                  3,
                                  61,
                                  (std::uint64_t{0xFFFF'FFFFu} - 20) * 4 + 1,
                                  (std::uint64_t{0xFFFF'FFFFu} - 3) * 4 + 2,
                                  std::uint64_t{0x1'0000'0000u} * 4,
                                  0xFFFF'FFFF'0000'0003u};
  const std::size_t lengths[] = {0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 63, 64, 65, 127, 128, 200, 257};
  const std::uint32_t streams[][2] = {{0, 0}, {7, 42}, {0xFFFF'FFFFu, 1}};
  on_every_path_and_thread_count([&] {
    const simd_path path = active_simd_path();
    for (const auto& stream : streams) {
      for (const std::uint64_t first : starts) {
        for (const std::size_t n : lengths) {
          std::vector<std::uint32_t> out(n + 1, 0xDEAD'BEEFu);
          detail::philox_words(path, seed, stream[0], stream[1], first, n, out.data());
          std::size_t bad = 0;
          for (std::size_t i = 0; i < n; ++i)
            bad += out[i] != detail::philox_bits(seed, stream[0], stream[1], first + i);
          INFO("tensor " << stream[0] << ", step " << stream[1] << ", first " << first << ", n " << n);
          CHECK(bad == 0);
          CHECK(out[n] == 0xDEAD'BEEFu);  // nothing written beyond n
        }
      }
    }
  });
}

TEST_CASE("stochastic_words equals block_stochastic_rounding::word under every k-bit rule", "[bulk][random]") {
  block_stochastic_rounding sr;
  sr.enabled = true;
  sr.seed = 99;
  sr.tensor_id = 3;
  sr.step = 12;
  on_every_path_and_thread_count([&] {
    for (const int k : {8, 16, 32}) {
      sr.random_bits = k;
      std::vector<std::uint32_t> out(300);
      detail::stochastic_words(active_simd_path(), sr, 1001, out.size(), out.data());
      std::size_t bad = 0;
      for (std::size_t i = 0; i < out.size(); ++i) bad += out[i] != sr.word(1001 + i);
      INFO("k " << k);
      CHECK(bad == 0);
    }
  });
}
