// Packed narrow integers (intn_packing.hpp, bulk/intn_pack.hpp): the layout, the container, and
// pack_n / pack_stochastic_n / unpack_n on every SIMD path and thread count against the scalar
// conversion, at odd sizes and alignments; bad arguments.
#include <mixprec/bulk/intn_pack.hpp>
#include <mixprec/intn_packing.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "simd_paths.hpp"

using namespace mixprec;

namespace {

template <class F>
void for_each_packable(F f) {
  f(int4{});
  f(uint4{});
  f(int2{});
  f(uint2{});
  f(int1{});
  f(uint1{});
}

constexpr rounding every_rounding[] = {rounding::nearest_even, rounding::nearest_away, rounding::toward_zero,
                                       rounding::upward,       rounding::downward,     rounding::to_odd,
                                       rounding::nearest_zero};

// Breakpoints k and k + 1/2 near the ranges and their float neighbours, specials, and random
// floats of every magnitude.
std::vector<float> test_inputs(std::size_t n) {
  std::vector<float> v;
  for (int k2 = -40; k2 <= 40; ++k2) {
    const float b = static_cast<float>(k2) / 2.0f;
    v.insert(v.end(), {b, std::nextafter(b, -100.0f), std::nextafter(b, 100.0f)});
  }
  v.insert(v.end(), {INFINITY, -INFINITY, NAN, -NAN, 0x1p-149f, -0x1p-149f, 3e38f, -3e38f, -0.0f});
  std::mt19937 random(7);
  std::uniform_real_distribution<float> near(-20.0f, 20.0f);
  while (v.size() < n) {
    if (v.size() % 3 == 0) {
      const auto bits = static_cast<std::uint32_t>(random());
      float x;
      std::memcpy(&x, &bits, 4);
      v.push_back(x);
    } else {
      v.push_back(near(random));
    }
  }
  v.resize(n);
  return v;
}

template <class T>
std::vector<unsigned char> scalar_packed(const float* in, std::size_t n, rounding r) {
  std::vector<unsigned char> out(packed_bytes<T>(n), 0);
  for (std::size_t i = 0; i < n; ++i) write_packed<T>(out.data(), i, convert<T>(in[i], r));
  return out;
}

}  // namespace

TEST_CASE("packed layout: element 0 in the low bits, as ml_dtypes and PyTorch pack int4", "[intn][packing]") {
  unsigned char b[2] = {0, 0};
  write_packed<int4>(b, 0, int4(-1));
  write_packed<int4>(b, 1, int4(2));
  CHECK(b[0] == 0x2F);
  write_packed<int2>(b, 0, int2(1));
  write_packed<int2>(b, 3, int2(-2));
  CHECK(b[0] == (0x2F & 0x3C) + 0x81);
  write_packed<uint1>(b, 9, uint1(1));
  CHECK(b[1] == 0x02);
  CHECK(read_packed<int2>(b, 3) == -2);
  static_assert(packed_bytes<int4>(7) == 4 && packed_bytes<int2>(9) == 3 && packed_bytes<uint1>(17) == 3);
}

TEST_CASE("packed_vector holds n values at odd sizes; checked access names index and size", "[intn][packing]") {
  for_each_packable([](auto tag) {
    using T = decltype(tag);
    for (std::size_t n : {0u, 1u, 3u, 7u, 9u, 31u, 33u}) {
      packed_vector<T> v(n);
      CHECK(v.size_bytes() == packed_bytes<T>(n));
      for (std::size_t k = 0; k < n; ++k) v.set(k, T(static_cast<int>(k * 5 + 3)));
      for (std::size_t k = 0; k < n; ++k) CHECK(v[k] == T(static_cast<int>(k * 5 + 3)));
      if (n % values_per_byte<T> != 0)
        CHECK(v.data()[v.size_bytes() - 1] >> ((n % values_per_byte<T>)*T::bits_per_value) == 0);
    }
  });
  packed_vector<int4> v(5);
  CHECK_THROWS_WITH(v.at(5), "packed_vector<int4>: index 5 is out of range for size 5");
  CHECK_THROWS_AS(v.set_at(9, int4(1)), invalid_argument);
}

TEST_CASE("pack_n equals the scalar conversion on every path, mode, size and alignment", "[intn][packing][bulk]") {
  const std::vector<float> inputs = test_inputs(1000 + 3);
  for_each_packable([&](auto tag) {
    using T = decltype(tag);
    constexpr std::size_t per = values_per_byte<T>;
    on_every_path_and_thread_count([&] {
      for (rounding r : every_rounding) {
        for (std::size_t offset : {0u, 1u, 3u}) {
          for (std::size_t n : {std::size_t{0}, per, 8 * per, 33 * per, std::size_t{1000} / per * per - per}) {
            INFO(to_string(r) << " n = " << n << " offset " << offset);
            const std::vector<unsigned char> expected = scalar_packed<T>(inputs.data() + offset, n, r);
            std::vector<unsigned char> out(packed_bytes<T>(n) + 2, 0xA5);
            pack_n<T>(inputs.data() + offset, n, out.data() + 1, r);
            CHECK(std::vector<unsigned char>(out.begin() + 1, out.end() - 1) == expected);
            CHECK(out.front() == 0xA5);
            CHECK(out.back() == 0xA5);
          }
        }
      }
    });
  });
}

TEST_CASE("pack_n splits large arrays over threads with the same bits", "[intn][packing][bulk][threads]") {
  const std::size_t n = (std::size_t{1} << 21) + 96;
  const std::vector<float> inputs = test_inputs(n);
  const std::vector<unsigned char> expected = scalar_packed<int4>(inputs.data(), n, rounding::nearest_away);
  on_every_path_and_thread_count([&] {
    std::vector<unsigned char> out(packed_bytes<int4>(n));
    pack_n<int4>(inputs.data(), n, out.data(), rounding::nearest_away);
    CHECK(out == expected);
    std::vector<float> back(n);
    unpack_n<int4>(out.data(), n, back.data());
    bool all = true;
    for (std::size_t i = 0; i < n; ++i) all = all && back[i] == static_cast<float>(read_packed<int4>(out.data(), i));
    CHECK(all);
  });
}

TEST_CASE("pack_stochastic_n rounds element i with philox_bits(seed, i), on every path", "[intn][packing][bulk]") {
  const std::vector<float> inputs = test_inputs(777 * 8);
  for_each_packable([&](auto tag) {
    using T = decltype(tag);
    const std::size_t n = inputs.size();
    for (stochastic_rule rule : {stochastic_rule::proportional, stochastic_rule::equal_probability}) {
      std::vector<unsigned char> expected(packed_bytes<T>(n), 0);
      for (std::size_t i = 0; i < n; ++i) {
        write_packed<T>(expected.data(), i,
                        convert_stochastic<T>(inputs[i], detail::philox_bits(42, i), overflow::saturate, rule));
      }
      on_every_path_and_thread_count([&] {
        std::vector<unsigned char> out(packed_bytes<T>(n));
        pack_stochastic_n<T>(inputs.data(), n, out.data(), 42, overflow::saturate, rule);
        CHECK(out == expected);
      });
    }
  });
}

// Below 2^-8 the part cut off at 2^0 has bits below 2^-32, which the 32-bit fraction drops
// (round_pack.hpp's round_up: lost >> (shift - 32)); a value there goes up with probability of
// about |x|, so 2^18 values in [2^-13, 2^-8) give a few hundred carries to compare bit for bit.
TEST_CASE("pack_stochastic_n: values below 2^-8, whose fraction drops bits, round as the scalar rule",
          "[intn][packing][bulk]") {
  const std::size_t n = std::size_t{1} << 18;
  std::vector<float> inputs(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float significand = 1.0f + static_cast<float>(i * 7919 % 4096) / 4096.0f;
    inputs[i] = std::ldexp(significand, -9 - static_cast<int>(i % 5)) * (i % 2 == 0 ? 1.0f : -1.0f);
  }
  std::vector<unsigned char> expected(packed_bytes<int4>(n), 0);
  std::size_t carries = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int4 q = convert_stochastic<int4>(inputs[i], detail::philox_bits(5, i), overflow::saturate);
    carries += q.value() != 0 ? 1u : 0u;
    write_packed<int4>(expected.data(), i, q);
  }
  CHECK(carries > 100);  // the case is exercised
  on_every_path_and_thread_count([&] {
    std::vector<unsigned char> out(packed_bytes<int4>(n));
    pack_stochastic_n<int4>(inputs.data(), n, out.data(), 5, overflow::saturate);
    CHECK(out == expected);
  });
}

TEST_CASE("unpack_n decodes every byte pattern exactly on every path, at odd sizes and alignments",
          "[intn][packing][bulk]") {
  std::vector<unsigned char> bytes(256 * 9);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + i / 256);
  for_each_packable([&](auto tag) {
    using T = decltype(tag);
    constexpr std::size_t per = values_per_byte<T>;
    on_every_path_and_thread_count([&] {
      for (std::size_t offset : {0u, 1u}) {
        for (std::size_t n : {std::size_t{0}, per, 16 * per, 255 * per, 2000 * per / per}) {
          const std::size_t count = n / per * per;
          std::vector<float> out(count + 1, -99.0f);
          unpack_n<T>(bytes.data() + offset, count, out.data());
          bool all = true;
          for (std::size_t i = 0; i < count; ++i) {
            all = all && out[i] == static_cast<float>(read_packed<T>(bytes.data() + offset, i));
          }
          CHECK(all);
          CHECK(out[count] == -99.0f);
        }
      }
    });
  });
}

TEST_CASE("bulk packing rejects bad arguments, naming the value and the limit", "[intn][packing][bulk]") {
  std::vector<float> f(64);
  std::vector<unsigned char> p(64);
  CHECK_THROWS_WITH(pack_n<int4>(f.data(), 7, p.data()),
                    "pack_n<int4>: n = 7 is not a multiple of 2, the values per packed byte");
  CHECK_THROWS_WITH(unpack_n<uint1>(p.data(), 12, f.data()),
                    "unpack_n<uint1>: n = 12 is not a multiple of 8, the values per packed byte");
  CHECK_THROWS_WITH(pack_n<int2>(nullptr, 8, p.data()), "pack_n<int2>: null float pointer with n = 8");
  CHECK_THROWS_WITH(unpack_n<int4>(nullptr, 8, f.data()), "unpack_n<int4>: null packed pointer with n = 8");
  auto* overlapping = reinterpret_cast<unsigned char*>(f.data()) + 8;
  CHECK_THROWS_WITH(pack_n<int4>(f.data(), 16, overlapping),
                    "pack_n<int4>: the packed array (8 bytes) overlaps the float array (n = 16)");
  CHECK_THROWS_AS(pack_stochastic_n<int4>(f.data(), 3, p.data(), 1), invalid_argument);
  CHECK_NOTHROW(pack_n<int4>(nullptr, 0, nullptr));
}
