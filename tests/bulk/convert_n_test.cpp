// bulk/convert_n.hpp: bulk conversion gives the scalar function's bits element by element, for
// any pair of types, every mode, every length and alignment; its stochastic variant is
// reproducible from the seed; bad arguments are clear errors.
#include <mixprec/bulk/amax.hpp>
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/bulk/quantize.hpp>
#include <mixprec/bulk/simd_path.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "all_formats.hpp"

using namespace mixprec;

namespace {

// Floats that exercise every branch: random bit patterns, specials, subnormals, and values at
// and around midpoints of the narrow formats.
std::vector<float> mixed_inputs(std::size_t n, std::uint32_t seed) {
  std::mt19937 generator(seed);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            448.0f,
                            464.0f,
                            480.0f,
                            65504.0f,
                            65520.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::max(),
                            1.0625f,
                            3.0f};
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (generator() % 4) {
      case 0: {
        const auto bits = static_cast<std::uint32_t>(generator());
        std::memcpy(&out[i], &bits, 4);
        break;
      }
      case 1:
        out[i] = specials[generator() % (sizeof(specials) / sizeof(specials[0]))];
        break;
      case 2:
        out[i] = std::ldexp(static_cast<float>(generator() % 64) / 8.0f, static_cast<int>(generator() % 40) - 20);
        break;
      default:
        out[i] = std::normal_distribution<float>(0.0f, 10.0f)(generator);
        break;
    }
  }
  return out;
}

template <class To>
void check_from_float(rounding r, overflow o) {
  const std::vector<float> input = mixed_inputs(400, 7);
  for (std::size_t offset = 0; offset < 4; ++offset) {
    constexpr std::size_t lengths[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 255, 300};
    for (std::size_t n : lengths) {
      std::vector<To> out(n + 4);
      convert_n(input.data() + offset, n, out.data() + offset, r, o);
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(out[offset + i].bits() == convert<To>(input[offset + i], r, o).bits());
      }
    }
  }
}

// Runs body() once on each SIMD path this CPU has, and says which it skipped.
template <class Body>
void on_every_path(Body body) {
  for (simd_path p : {simd_path::portable, simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16}) {
    if (!simd_path_supported(p)) {
      WARN("SIMD path " << to_string(p) << " skipped: not available on this CPU");
      continue;
    }
    force_simd_path(p);
    INFO("SIMD path " << to_string(p));
    body();
  }
  reset_simd_path();
}

}  // namespace

TEST_CASE("Philox-4x32-10 reproduces Random123's known-answer vectors", "[bulk][philox]") {
  using detail::philox4x32_10;
  using detail::philox_block;
  const philox_block zero = philox4x32_10(philox_block{{0, 0, 0, 0}}, 0, 0);
  CHECK(zero.word[0] == 0x6627e8d5u);
  CHECK(zero.word[1] == 0xe169c58du);
  CHECK(zero.word[2] == 0xbc57ac4cu);
  CHECK(zero.word[3] == 0x9b00dbd8u);
  const philox_block ones =
      philox4x32_10(philox_block{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  CHECK(ones.word[0] == 0x408f276du);
  CHECK(ones.word[1] == 0x41c83b0eu);
  CHECK(ones.word[2] == 0xa20bc7c6u);
  CHECK(ones.word[3] == 0x6d5451fdu);
  const philox_block pi =
      philox4x32_10(philox_block{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  CHECK(pi.word[0] == 0xd16cfe09u);
  CHECK(pi.word[1] == 0x94fdccebu);
  CHECK(pi.word[2] == 0x5001e420u);
  CHECK(pi.word[3] == 0x24126ea1u);
}

TEST_CASE("philox_sequence gives philox_bits in order from any start", "[bulk][philox]") {
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{42}, ~std::uint64_t{0}}) {
    for (std::uint64_t first : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{4},
                                std::uint64_t{1} << 32, (std::uint64_t{1} << 34) - 2}) {
      detail::philox_sequence sequence(seed, first);
      for (std::uint64_t i = first; i < first + 37; ++i) {
        INFO("seed " << seed << ", index " << i);
        REQUIRE(sequence.next() == detail::philox_bits(seed, i));
      }
    }
  }
}

TEMPLATE_TEST_CASE("convert_n from float equals the scalar conversion for every mode, length, offset and path",
                   "[bulk]", MIXPREC_ALL_TYPES) {
  on_every_path([] {
    for (rounding r : mixprec_test::all_roundings) {
      for (overflow o : mixprec_test::all_overflows) check_from_float<TestType>(r, o);
    }
  });
}

// convert_n(in, n, out) is an overload of its own that compiles the nearest-even kernels alone
// (bulk/convert_n.hpp): it must give the scalar nearest-even conversion, as the general form does.
TEMPLATE_TEST_CASE("convert_n(in, n, out) equals the scalar nearest-even conversion on every path", "[bulk]",
                   MIXPREC_ALL_TYPES) {
  const std::vector<float> input = mixed_inputs(400, 17);
  std::vector<double> wide(input.begin(), input.end());
  wide.push_back(1.0 + 0x1p-40);  // a double that rounds differently through float
  on_every_path([&] {
    for (std::size_t offset = 0; offset < 4; ++offset) {
      for (std::size_t n :
           {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{16}, std::size_t{33}, std::size_t{300}}) {
        std::vector<TestType> out(n + 4), from_double(n + 4);
        std::vector<bfloat16> narrowed(n + 4);
        convert_n(input.data() + offset, n, out.data() + offset);
        convert_n(wide.data() + offset, n, from_double.data() + offset);
        convert_n(out.data() + offset, n, narrowed.data() + offset);  // minifloat to minifloat
        for (std::size_t i = offset; i < offset + n; ++i) {
          REQUIRE(out[i].bits() == convert<TestType>(input[i]).bits());
          REQUIRE(from_double[i].bits() == convert<TestType>(wide[i]).bits());
          REQUIRE(narrowed[i].bits() == convert<bfloat16>(out[i]).bits());
        }
      }
    }
  });
}

TEMPLATE_TEST_CASE("convert_n to float and double decodes every code exactly on every path", "[bulk]",
                   MIXPREC_ALL_TYPES) {
  on_every_path([] {
    std::vector<TestType> codes;
    for (unsigned c = 0; c < mixprec_test::code_count<TestType>(); ++c) {
      codes.push_back(TestType::from_bits(static_cast<typename TestType::storage_type>(c)));
    }
    std::vector<float> floats(codes.size());
    std::vector<double> doubles(codes.size());
    convert_n(codes.data(), codes.size(), floats.data());
    convert_n(codes.data(), codes.size(), doubles.data());
    for (std::size_t i = 0; i < codes.size(); ++i) {
      const float expected = static_cast<float>(codes[i]);
      REQUIRE(std::memcmp(&floats[i], &expected, 4) == 0);
      if (!std::isnan(expected)) REQUIRE(doubles[i] == static_cast<double>(expected));
    }
  });
}

TEST_CASE("tfloat32's integer loop equals the scalar conversion at and around every breakpoint, every mode",
          "[bulk][tfloat32]") {
  // For every 7th code c (both signs): the float c << 13 and the floats just above it, at the
  // midpoint to the next code and just below the next code; infinities and NaNs included.
  std::vector<float> input;
  for (std::uint32_t c = 0; c < (1u << 19); c += 7) {
    for (std::uint32_t low : {0u, 1u, 0xFFFu, 0x1000u, 0x1001u, 0x1FFFu}) {
      const std::uint32_t bits = (c << 13) | low;
      float f;
      std::memcpy(&f, &bits, 4);
      input.push_back(f);
    }
  }
  std::vector<tfloat32> out(input.size());
  std::vector<float> back(input.size());
  for (rounding r : mixprec_test::all_roundings) {
    for (overflow o : mixprec_test::all_overflows) {
      convert_n(input.data(), input.size(), out.data(), r, o);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < input.size(); ++i) wrong += out[i].bits() != convert<tfloat32>(input[i], r, o).bits();
      INFO("mode " << to_string(r) << (o == overflow::saturate ? ", saturate" : ""));
      CHECK(wrong == 0);
    }
  }
  convert_n(out.data(), out.size(), back.data());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float expected = static_cast<float>(out[i]);
    wrong += std::memcmp(&expected, &back[i], 4) != 0 ? 1u : 0u;
  }
  CHECK(wrong == 0);
}

TEST_CASE("convert_n between two minifloat types equals the scalar conversion on every path", "[bulk]") {
  on_every_path([] {
    std::vector<bfloat16> source;
    for (unsigned c = 0; c < 65536; c += 7) source.push_back(bfloat16::from_bits(static_cast<std::uint16_t>(c)));
    std::vector<float8_e4m3fn> out(source.size());
    for (rounding r : mixprec_test::all_roundings) {
      convert_n(source.data(), source.size(), out.data(), r, overflow::saturate);
      for (std::size_t i = 0; i < source.size(); ++i) {
        REQUIRE(out[i].bits() == convert<float8_e4m3fn>(source[i], r, overflow::saturate).bits());
      }
    }
  });
}

TEST_CASE("convert_n from float to float equals the scalar conversion (sNaN quieted, saturate) on every path",
          "[bulk]") {
  // Every 65537th float (all exponents, both signs) and the edges: zeros, subnormals, max, inf,
  // quiet and signaling NaNs with payloads.
  std::vector<float> source;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 65537) {
    source.push_back(mixprec::detail::bit_cast<float>(static_cast<std::uint32_t>(b)));
  }
  for (std::uint32_t edge : {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u,
                             0xFF800000u, 0x7F800001u, 0xFFA00000u, 0x7FC00000u, 0xFFFFFFFFu, 0x7FBFFFFFu}) {
    source.push_back(mixprec::detail::bit_cast<float>(edge));
  }
  on_every_path([&] {
    std::vector<float> out(source.size());
    for (rounding r : mixprec_test::all_roundings) {
      for (overflow o : mixprec_test::all_overflows) {
        convert_n(source.data(), source.size(), out.data(), r, o);
        for (std::size_t i = 0; i < source.size(); ++i) {
          INFO("float bits " << mixprec::detail::bit_cast<std::uint32_t>(source[i]));
          REQUIRE(mixprec::detail::bit_cast<std::uint32_t>(out[i]) ==
                  mixprec::detail::bit_cast<std::uint32_t>(convert<float>(source[i], r, o)));
        }
      }
    }
  });
}

// Every code of From into To through convert_n and through the scalar conversion.
template <class From, class To>
void check_every_code_between() {
  std::vector<From> source;
  for (unsigned c = 0; c < mixprec_test::code_count<From>(); ++c) {
    source.push_back(From::from_bits(static_cast<typename From::storage_type>(c)));
  }
  std::vector<To> out(source.size());
  for (rounding r : mixprec_test::all_roundings) {
    for (overflow o : mixprec_test::all_overflows) {
      convert_n(source.data(), source.size(), out.data(), r, o);
      for (std::size_t i = 0; i < source.size(); ++i) {
        INFO(format_name<typename From::format>() << " code " << i << " into " << format_name<typename To::format>());
        REQUIRE(out[i].bits() == convert<To>(source[i], r, o).bits());
      }
    }
  }
}

TEST_CASE("convert_n between minifloats keeps NaN payloads as the scalar conversion does", "[bulk]") {
  // Widening keeps a NaN's payload (e5m2 0x7D into fp16 is 0x7F00, not the canonical 0x7E00);
  // a float stage alone would lose it.
  on_every_path([] {
    check_every_code_between<float8_e5m2, float16>();
    check_every_code_between<float8_e5m2, bfloat16>();
    check_every_code_between<float8_e4m3fn, float16>();
    check_every_code_between<float16, float8_e5m2>();
  });
}

// Decodes codes[1..n] with convert_n into back[1..n] and counts the floats that differ, bit for
// bit, from the scalar decoding.
template <class T>
std::size_t decoded_mismatches(const std::vector<T>& codes, std::size_t n, std::vector<float>& back) {
  convert_n(codes.data() + 1, n, back.data() + 1);
  std::size_t wrong = 0;
  for (std::size_t i = 1; i <= n; ++i) {
    const float expected = static_cast<float>(codes[i]);
    wrong += std::memcmp(&expected, &back[i], 4) != 0 ? 1u : 0u;
  }
  return wrong;
}

TEST_CASE("large conversions (streamed stores, several threads) equal the scalar conversion",
          "[bulk][dispatch][threads]") {
  // Above the streaming threshold, from an odd offset (the head is peeled), with specials
  // sprinkled so that the scalar fix-up writes land between streamed stores; 1 and 3 threads.
  const std::size_t n = bulk_streaming_bytes / sizeof(float16) + 1234;
  std::vector<float> input = mixed_inputs(n + 1, 99);
  for (std::size_t i = 0; i < input.size(); i += 97) input[i] = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t i = 5; i < input.size(); i += 101) input[i] = 1e-40f;  // float subnormal
  std::vector<float16> out(n + 1);
  std::vector<float> back(n + 1);
  for (unsigned threads : {1u, 3u}) {
    set_bulk_threads(threads);
    on_every_path([&] {
      for (rounding r : {rounding::nearest_even, rounding::upward}) {
        convert_n(input.data() + 1, n, out.data() + 1, r);
        std::size_t wrong = 0;
        for (std::size_t i = 1; i <= n; ++i) wrong += out[i].bits() != convert<float16>(input[i], r).bits() ? 1u : 0u;
        CHECK(wrong == 0);
      }
      convert_n(input.data() + 1, n, out.data() + 1);  // the nearest-even form
      std::size_t wrong = 0;
      for (std::size_t i = 1; i <= n; ++i) wrong += out[i].bits() != convert<float16>(input[i]).bits() ? 1u : 0u;
      CHECK(wrong == 0);
      CHECK(decoded_mismatches(out, n, back) == 0);
    });
  }
  std::vector<bfloat16> a(n), b(n);
  set_bulk_threads(1);
  convert_stochastic_n(input.data(), n, a.data(), 5);
  set_bulk_threads(4);
  convert_stochastic_n(input.data(), n, b.data(), 5);
  set_bulk_threads(1);
  CHECK(std::memcmp(a.data(), b.data(), n * sizeof(bfloat16)) == 0);
}

TEST_CASE("SIMD paths can be listed, forced and reset", "[bulk][dispatch]") {
  CHECK(simd_path_supported(simd_path::portable));
  CHECK(simd_path_supported(best_simd_path()));
  force_simd_path(simd_path::portable);
  CHECK(active_simd_path() == simd_path::portable);
  reset_simd_path();
  CHECK(parse_simd_path("avx512") == simd_path::avx512);
  CHECK_THROWS_WITH(parse_simd_path("sse9"),
                    "unknown SIMD path 'sse9' (expected portable, avx2, avx512 or avx512_bf16)");
  for (simd_path p : {simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16}) {
    if (!simd_path_supported(p)) CHECK_THROWS_AS(force_simd_path(p), invalid_argument);
  }
}

TEMPLATE_TEST_CASE("convert_stochastic_n depends only on the seed and the element index, on every path",
                   "[bulk][stochastic]", MIXPREC_ALL_TYPES) {
  const std::vector<float> input = mixed_inputs(1000, 11);
  on_every_path([&] {
    for (overflow o : mixprec_test::all_overflows) {
      std::vector<TestType> a(input.size()), b(input.size()), c(input.size());
      convert_stochastic_n(input.data(), input.size(), a.data(), 42, o);
      convert_stochastic_n(input.data(), input.size(), b.data(), 42, o);
      convert_stochastic_n(input.data(), input.size(), c.data(), 43, o);
      int differences = 0;
      for (std::size_t i = 0; i < input.size(); ++i) {
        INFO("element " << i << ", x = " << input[i]);
        REQUIRE(a[i].bits() == b[i].bits());
        REQUIRE(a[i].bits() == convert_stochastic<TestType>(input[i], detail::philox_bits(42, i), o).bits());
        differences += a[i].bits() != c[i].bits() ? 1 : 0;
      }
      CHECK(differences > 0);  // another seed gives other random bits
      // A share of a larger array starting at any global index (threads get such shares), with
      // every length: the kernels' block alignment, batches and tails.
      for (std::uint64_t first : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3},
                                  std::uint64_t{64}, (std::uint64_t{1} << 34) - 5}) {
        for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65},
                              std::size_t{200}, input.size()}) {
          std::vector<TestType> share(n);
          detail::stochastic_serial(active_simd_path(), input.data(), n, share.data(), o, 7, first,
                                    stochastic_rule::proportional);
          for (std::size_t i = 0; i < n; ++i) {
            INFO("first " << first << ", n " << n << ", element " << i);
            REQUIRE(share[i].bits() ==
                    convert_stochastic<TestType>(input[i], detail::philox_bits(7, first + i), o).bits());
          }
        }
      }
    }
  });
}

TEST_CASE("large tfloat32 conversions equal the scalar conversion in every mode", "[bulk][dispatch]") {
  // Above the streaming threshold (tfloat32's integer loop stores plainly there too), from an odd
  // offset, with NaNs; every mode one way, and back.
  const std::size_t n = bulk_streaming_bytes / sizeof(tfloat32) + 1234;
  std::vector<float> input = mixed_inputs(n + 1, 7);
  for (std::size_t i = 0; i < input.size(); i += 89) input[i] = std::numeric_limits<float>::quiet_NaN();
  std::vector<tfloat32> out(n + 1);
  std::vector<float> back(n + 1);
  set_bulk_threads(1);
  for (int m = 0; m <= static_cast<int>(last_rounding); ++m) {
    const auto r = static_cast<rounding>(m);
    INFO(to_string(r));
    convert_n(input.data() + 1, n, out.data() + 1, r, overflow::saturate);
    std::size_t wrong = 0;
    for (std::size_t i = 1; i <= n; ++i) {
      wrong += out[i].bits() != convert<tfloat32>(input[i], r, overflow::saturate).bits() ? 1u : 0u;
    }
    CHECK(wrong == 0);
  }
  CHECK(decoded_mismatches(out, n, back) == 0);
}

TEST_CASE("convert_stochastic_n rounds up at the exact rate over a large array", "[bulk][stochastic]") {
  // 0.3 of the way from 1 to the next bf16 value, 2^20 times: binomial, within 6 sigma.
  const float x = 1.0f + 0.3f * std::ldexp(1.0f, -7);
  const double f = (static_cast<double>(x) - 1.0) / std::ldexp(1.0, -7);
  const std::vector<float> input(1u << 20, x);
  std::vector<bfloat16> out(input.size());
  convert_stochastic_n(input.data(), input.size(), out.data(), 2024);
  std::size_t ups = 0;
  for (const bfloat16& y : out) ups += y.bits() == 0x3F81 ? 1u : 0u;
  const double n = static_cast<double>(input.size());
  CHECK(std::abs(static_cast<double>(ups) - n * f) <= 6 * std::sqrt(n * f * (1 - f)));
}

TEST_CASE("bulk conversion rejects null pointers and overlapping arrays", "[bulk][errors]") {
  std::vector<float> in(16, 1.0f);
  std::vector<float16> out(16);
  CHECK_THROWS_AS(convert_n(static_cast<const float*>(nullptr), 4, out.data()), invalid_argument);
  CHECK_THROWS_WITH(convert_n(in.data(), 4, static_cast<float16*>(nullptr)),
                    "convert_n: null output pointer with n = 4");
  CHECK_NOTHROW(convert_n(static_cast<const float*>(nullptr), 0, static_cast<float16*>(nullptr)));
  // Output overlapping the input: float16 written over the floats being read.
  auto* overlapping = reinterpret_cast<float16*>(in.data() + 2);
  CHECK_THROWS_AS(convert_n(in.data(), 8, overlapping), invalid_argument);
  CHECK_THROWS_AS(convert_stochastic_n(in.data(), 8, overlapping, 1), invalid_argument);
  // Adjacent but disjoint is fine.
  std::vector<float> both(8, 2.0f);
  CHECK_NOTHROW(convert_n(both.data(), 4, reinterpret_cast<float*>(both.data() + 4)));
  CHECK(both[5] == 2.0f);
}

TEST_CASE("bulk entries refuse counts beyond the largest array before any arithmetic on them", "[bulk][errors]") {
  // Regression: n = 2^63 + 4 made n * sizeof(To) wrap in the overlap check, and the kernel wrote
  // far past the 8-byte output.
  std::vector<float> in(8, 1.0f);
  std::vector<float8_e4m3fn> out8(8);
  std::vector<float> out_float(8);
  const std::size_t huge = (std::size_t{1} << 63) + 4;
  CHECK_THROWS_WITH(convert_n(in.data(), huge, out8.data()), Catch::Contains("convert_n") &&
                                                                 Catch::Contains(std::to_string(huge)) &&
                                                                 Catch::Contains("more than the largest array holds"));
  CHECK_THROWS_AS(convert_n(out8.data(), huge, in.data()), invalid_argument);
  CHECK_THROWS_AS(convert_stochastic_n(in.data(), huge, out8.data(), 7), invalid_argument);
  CHECK_THROWS_AS(quantize_n(in.data(), huge, out8.data(), 1.0f), invalid_argument);
  CHECK_THROWS_AS(dequantize_n(out8.data(), huge, out_float.data(), 1.0f), invalid_argument);
  CHECK_THROWS_AS(amax_n(in.data(), huge), invalid_argument);
  // The largest count an array of floats can have is accepted by the check itself; one more is not.
  const std::size_t largest = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) / sizeof(float);
  CHECK_THROWS_WITH(convert_n(in.data(), largest + 1, out8.data()), Catch::Contains(std::to_string(largest)));
  // An array that would run past the end of the address space.
  const auto* top = reinterpret_cast<const float*>(std::numeric_limits<std::uintptr_t>::max() - 63);
  CHECK_THROWS_WITH(convert_n(top, 100, out8.data()), Catch::Contains("past the end of the address space"));
  CHECK(out8[0].bits() == 0);  // nothing was written
}
