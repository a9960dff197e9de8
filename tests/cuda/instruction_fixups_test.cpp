// cuda/detail/instruction_fixups.hpp: a model of each conversion instruction (instruction_model.hpp)
// followed by the fix-up that cuda/convert.cuh applies gives the generic conversion's code, for
// every mode and overflow rule the device code routes to that instruction.
//
//   unit:        a stratified sample: every 9973rd float plus, for every code of the target
//                format, its value, the midpoints to its neighbours and the floats around them
//   exhaustive:  all 2^32 floats through the nearest-even instructions of float16, bfloat16,
//                e4m3fn and e5m2 (both overflow rules), "[.exhaustive]"
//   by hand:     all 2^32 floats through every instruction and mode, "[.exhaustive_full]"
//
// This checks the argument on a model of the hardware (CUDA's host implementation of the same
// conversions and the PTX ISA's special-value rules), not the hardware itself.
#include "instruction_model.hpp"
#include "sweep.hpp"

#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/convert.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

using namespace mixprec;
using mixprec::detail::bit_cast;
using mixprec::detail::round_mode;
namespace model = instruction_model;
namespace fixups = mixprec::gpu::detail;

namespace {

// Mismatch count and the first mismatch, for one (instruction, mode, overflow); one per thread,
// merged at the end.
struct tally {
  std::uint64_t checked = 0;
  std::uint64_t mismatches = 0;
  std::uint32_t first = 0;

  void merge(const tally& other) {
    if (other.mismatches != 0 && (mismatches == 0 || other.first < first)) first = other.first;
    checked += other.checked;
    mismatches += other.mismatches;
  }
};

template <class Instruction>
std::uint64_t run_instruction(Instruction, float x, round_mode mode, overflow o) {
  if constexpr (std::is_invocable<decltype(&Instruction::run), float, round_mode, overflow>::value) {
    return Instruction::run(x, mode, o);
  } else {
    return Instruction::run(x, mode);
  }
}

// Checks one input under every mode the instruction serves and both overflow rules.
template <class Instruction>
void check_input(std::uint32_t x_bits, tally* tallies) {
  using format = typename Instruction::format;
  using code = fixups::code_t<format>;
  const float x = bit_cast<float>(x_bits);
  std::size_t t = 0;
  for (const round_mode mode : Instruction::modes) {
    for (const overflow o : {overflow::non_finite, overflow::saturate}) {
      const auto raw = static_cast<code>(run_instruction(Instruction{}, x, mode, o));
      const code device = Instruction::finish(x_bits, raw, o);
      const code generic = mixprec::detail::convert_bits<ieee_binary32, format>(x_bits, mode, o, 0);
      tally& k = tallies[t++];
      ++k.checked;
      if (device != generic && k.mismatches++ == 0) k.first = x_bits;
    }
  }
}

template <class Instruction>
constexpr std::size_t tally_count() {
  return sizeof(Instruction::modes) / sizeof(Instruction::modes[0]) * 2;
}

template <class Instruction>
void report_and_require(const tally* tallies) {
  std::size_t t = 0;
  for (const round_mode mode : Instruction::modes) {
    for (const overflow o : {overflow::non_finite, overflow::saturate}) {
      const tally& k = tallies[t++];
      INFO(Instruction::name << " mode " << static_cast<int>(mode) << " " << to_string(o) << ": " << k.mismatches
                             << " of " << k.checked << " differ, first x = 0x" << std::hex << k.first);
      CHECK(k.checked > 0);
      CHECK(k.mismatches == 0);
    }
  }
}

// The sample of the unit test: a stride over all floats, plus every value of the format, the
// midpoints between neighbouring values, the floats around both, and the special inputs.
template <class Format>
std::vector<std::uint32_t> stratified_inputs() {
  std::vector<std::uint32_t> inputs;
  for (std::uint64_t u = 0; u <= 0xFFFF'FFFFu; u += 9973) inputs.push_back(static_cast<std::uint32_t>(u));
  using traits = format_traits<Format>;
  const auto around = [&](std::uint32_t bits) {
    for (std::uint32_t d = 0; d <= 2; ++d) {
      for (const std::uint32_t sign : {0u, fixups::float_sign_bit}) {
        inputs.push_back(((bits + d) & fixups::float_magnitude_bits) | sign);
        inputs.push_back(((bits - d) & fixups::float_magnitude_bits) | sign);
      }
    }
  };
  std::uint32_t previous = 0;
  for (std::uint64_t c = 0; c <= traits::magnitude_mask; ++c) {
    if (traits::is_nan(c) || traits::is_infinity(c)) continue;
    const auto value = static_cast<std::uint32_t>(mixprec::detail::convert_bits<Format, ieee_binary32>(
        static_cast<fixups::code_t<Format>>(c), round_mode::nearest_even, overflow::non_finite, 0));
    around(value);
    if (c > 0) around(previous + (value - previous) / 2);  // the midpoint (exact: both are format values)
    previous = value;
  }
  around(fixups::nearest_overflow<Format>::first_overflowing);
  for (const std::uint32_t special : {0x7F80'0000u, 0x7FC0'0000u, 0x7F80'0001u, 0x7FFF'FFFFu, 0x0000'0001u}) {
    inputs.push_back(special);
    inputs.push_back(special | fixups::float_sign_bit);
  }
  return inputs;
}

template <class Instruction>
void check_sample() {
  tally tallies[tally_count<Instruction>()];
  for (const std::uint32_t x : stratified_inputs<typename Instruction::format>()) check_input<Instruction>(x, tallies);
  report_and_require<Instruction>(tallies);
}

// Every float, in blocks of 2^16 over the hardware threads (mixprec_test::parallel_ranges).  Where the mode is
// nearest-even, the generic conversion of a block comes from the bulk kernels (detail::convert_n_serial on the best
// path): bulk_sweep, in the same CI subset, proves them equal to convert_bits on every float for
// these four formats in that mode and both overflow rules, and they cost a tenth of the scalar
// function, which made this test the CI subset's second longest.  An instruction whose result
// does not depend on the overflow rule runs once per mode, not once per rule.
template <class Instruction>
void check_every_float() {
  using format = typename Instruction::format;
  using code = fixups::code_t<format>;
  using value_type = mixprec::minifloat<format>;
  static_assert(sizeof(value_type) == sizeof(code), "a minifloat is its code");
  constexpr bool overflow_dependent =
      std::is_invocable<decltype(&Instruction::run), float, round_mode, overflow>::value;
  constexpr std::size_t count = tally_count<Instruction>();
  constexpr std::uint64_t block = std::uint64_t{1} << 16;
  std::array<tally, count> total{};
  std::mutex total_mutex;
  // 16 blocks per call: the buffers are allocated once per 2^20 floats.
  mixprec_test::parallel_ranges(
      0, (std::uint64_t{1} << 32) / block, 16, 0, [&](std::uint64_t first, std::uint64_t last) {
        std::vector<std::uint32_t> x_bits(block);
        std::vector<float> x(block);
        std::vector<code> raw(block), generic(block);
        std::vector<value_type> bulk(block);
        std::array<tally, count> tallies{};
        for (std::uint64_t b = first; b < last; ++b) {
          for (std::uint64_t i = 0; i < block; ++i) x_bits[i] = static_cast<std::uint32_t>(b * block + i);
          std::memcpy(x.data(), x_bits.data(), block * sizeof(float));
          std::size_t k = 0;
          for (const round_mode mode : Instruction::modes) {
            bool have_raw = false;
            for (const overflow o : {overflow::non_finite, overflow::saturate}) {
              if (overflow_dependent || !have_raw) {
                for (std::uint64_t i = 0; i < block; ++i) {
                  raw[i] = static_cast<code>(run_instruction(Instruction{}, x[i], mode, o));
                }
                have_raw = true;
              }
              if (mode == round_mode::nearest_even) {
                mixprec::detail::convert_n_serial(best_simd_path(), x.data(), block, bulk.data(),
                                                  rounding::nearest_even, o, false);
                for (std::uint64_t i = 0; i < block; ++i) generic[i] = bulk[i].bits();
              } else {
                for (std::uint64_t i = 0; i < block; ++i) {
                  generic[i] = mixprec::detail::convert_bits<ieee_binary32, format>(x_bits[i], mode, o, 0);
                }
              }
              tally& tally_k = tallies[k++];
              tally_k.checked += block;
              for (std::uint64_t i = 0; i < block; ++i) {
                if (Instruction::finish(x_bits[i], raw[i], o) != generic[i] && tally_k.mismatches++ == 0) {
                  tally_k.first = x_bits[i];
                }
              }
            }
          }
        }
        const std::lock_guard<std::mutex> lock(total_mutex);
        for (std::size_t i = 0; i < count; ++i) total[i].merge(tallies[i]);
      });
  report_and_require<Instruction>(total.data());
}

}  // namespace

TEST_CASE("the overflow thresholds of the satfinite fix-up are the nearest-even ones", "[instruction_fixups]") {
  // e4m3fn: 464 is the tie between 448 and the NaN code, and goes to 448 (decisions.md §2).
  CHECK(fixups::nearest_overflow<formats::float8_e4m3fn>::first_overflowing == bit_cast<std::uint32_t>(464.0f) + 1);
  // e5m2: the tie 61440 between 57344 (odd) and 65536 goes up: it overflows.
  CHECK(fixups::nearest_overflow<formats::float8_e5m2>::first_overflowing == bit_cast<std::uint32_t>(61440.0f));
  CHECK(fixups::nearest_overflow<formats::float16>::first_overflowing == bit_cast<std::uint32_t>(65520.0f));
  CHECK(fixups::nearest_overflow<formats::bfloat16>::first_overflowing == 0x7F7F'8000u);
}

TEST_CASE("f16 conversion instructions plus fix-up equal the generic conversion (sample)", "[instruction_fixups]") {
  check_sample<model::f16_from_f32>();
}
TEST_CASE("bf16 conversion instructions plus fix-up equal the generic conversion (sample)", "[instruction_fixups]") {
  check_sample<model::bf16_from_f32>();
}
TEST_CASE("fp8 satfinite instructions plus fix-up equal the generic conversion in both overflow modes (sample)",
          "[instruction_fixups]") {
  check_sample<model::e4m3_from_f32>();
  check_sample<model::e5m2_from_f32>();
}
#if INSTRUCTION_MODEL_HAS_MX
TEST_CASE("e8m0, fp6 and fp4 instructions plus fix-up equal the generic conversion (sample)", "[instruction_fixups]") {
  check_sample<model::e8m0_from_f32>();
  check_sample<model::mx_element_from_f32<formats::float6_e2m3fn>>();
  check_sample<model::mx_element_from_f32<formats::float6_e3m2fn>>();
  check_sample<model::mx_element_from_f32<formats::float4_e2m1fn>>();
}
#endif

TEST_CASE("decoding through the f16 instructions plus fix-up equals the generic decode for every code",
          "[instruction_fixups]") {
  const auto generic = [](auto format_tag, std::uint32_t code) {
    using format = decltype(format_tag);
    return static_cast<std::uint32_t>(mixprec::detail::convert_bits<format, ieee_binary32>(
        static_cast<fixups::code_t<format>>(code), round_mode::nearest_even, overflow::non_finite, 0));
  };
  for (std::uint32_t c = 0; c < 0x10000; ++c) {
    const auto h = static_cast<std::uint16_t>(c);
    INFO("code 0x" << std::hex << c);
    REQUIRE(fixups::fix_decoded_nan<formats::float16>(h, model::f32_from_f16(h)) == generic(formats::float16{}, c));
    REQUIRE(fixups::widen_bfloat16_bits(h) == generic(formats::bfloat16{}, c));
  }
  for (std::uint32_t c = 0; c < 0x100; ++c) {
    const auto b = static_cast<std::uint8_t>(c);
    INFO("code 0x" << std::hex << c);
    REQUIRE(fixups::fix_decoded_nan<formats::float8_e4m3fn>(b, model::f32_from_ofp8(b, __NV_E4M3)) ==
            generic(formats::float8_e4m3fn{}, c));
    REQUIRE(fixups::fix_decoded_nan<formats::float8_e5m2>(b, model::f32_from_ofp8(b, __NV_E5M2)) ==
            generic(formats::float8_e5m2{}, c));
    // The device decodes e5m2 as the float16 whose top byte it is.
    REQUIRE(fixups::fix_decoded_nan<formats::float8_e5m2>(b, model::f32_from_f16(static_cast<std::uint16_t>(c << 8))) ==
            generic(formats::float8_e5m2{}, c));
  }
}

TEST_CASE("a product with the NaN fix-up is the host's product, NaN sign and payload included",
          "[instruction_fixups]") {
  // The device model: IEEE product, any NaN -> 0x7FFFFFFF (PTX ISA, mul: canonical NaN).
  const auto device_product = [](float a, float b) {
    const float p = a * b;
    return p != p ? 0x7FFF'FFFFu : bit_cast<std::uint32_t>(p);
  };
  const std::uint32_t values[] = {0x0000'0000u, 0x8000'0000u, 0x3F80'0000u, 0xC2F6'E979u, 0x7F7F'FFFFu,
                                  0x0000'0001u, 0x7F80'0000u, 0xFF80'0000u, 0x7FC0'0000u, 0xFFC0'1234u,
                                  0x7F80'0001u, 0xFFA0'0000u, 0x3380'0000u, 0x4B80'0000u};
  for (const std::uint32_t a : values) {
    for (const std::uint32_t b :
         {0x3F80'0000u, 0x3A80'0000u, 0x4780'0000u, 0x0000'0000u, 0x7F80'0000u, 0xFFA0'0001u, 0x7FC0'0000u}) {
      if (fixups::float_bits_are_nan(a) && fixups::float_bits_are_nan(b)) continue;  // operand order decides
      volatile float x = bit_cast<float>(a), y = bit_cast<float>(b);
      const float host = x * y;  // the host's own multiply (x86 or AArch64)
      INFO("a = 0x" << std::hex << a << ", b = 0x" << b);
#if !(defined(__x86_64__) || defined(__i386__))
      if (host != host && x == x && y == y) continue;  // inf × 0: the device gives x86's default NaN
#endif
      CHECK(fixups::fix_product_nan(a, b, device_product(x, y)) == bit_cast<std::uint32_t>(host));
    }
  }
}

TEST_CASE("the fix-ups are needed: the raw instructions differ from mixprec where docs/cuda.md says",
          "[instruction_fixups]") {
  // Without the fix-up a negative NaN loses its sign, and satfinite saturates under non_finite.
  const std::uint32_t negative_nan = 0xFFC0'0000u;
  CHECK(model::f16_from_f32::run(bit_cast<float>(negative_nan), round_mode::nearest_even) == 0x7FFF);
  CHECK(model::f16_from_f32::finish(negative_nan, 0x7FFF, overflow::non_finite) == 0xFE00);
  CHECK(model::e4m3_from_f32::run(500.0f, round_mode::nearest_even) == 0x7E);
  CHECK(model::e4m3_from_f32::finish(bit_cast<std::uint32_t>(500.0f), 0x7E, overflow::non_finite) == 0x7F);
  CHECK(model::e5m2_from_f32::finish(bit_cast<std::uint32_t>(-1e6f), 0xFB, overflow::non_finite) == 0xFC);
  CHECK(model::f16_from_f32::finish(bit_cast<std::uint32_t>(1e6f), 0x7C00, overflow::saturate) == 0x7BFF);
}

namespace {
struct f16_nearest : model::f16_from_f32 {
  static constexpr round_mode modes[] = {round_mode::nearest_even};
};
struct bf16_nearest : model::bf16_from_f32 {
  static constexpr round_mode modes[] = {round_mode::nearest_even};
};
}  // namespace

TEST_CASE("nearest-even instructions of float16, bfloat16, e4m3fn, e5m2 plus fix-up: every float", "[.exhaustive]") {
  check_every_float<f16_nearest>();
  check_every_float<bf16_nearest>();
  check_every_float<model::e4m3_from_f32>();
  check_every_float<model::e5m2_from_f32>();
}

TEST_CASE("every instruction and mode plus fix-up: every float", "[.exhaustive_full]") {
  check_every_float<model::f16_from_f32>();
  check_every_float<model::bf16_from_f32>();
  check_every_float<model::e4m3_from_f32>();
  check_every_float<model::e5m2_from_f32>();
#if INSTRUCTION_MODEL_HAS_MX
  check_every_float<model::e8m0_from_f32>();
  check_every_float<model::mx_element_from_f32<formats::float6_e2m3fn>>();
  check_every_float<model::mx_element_from_f32<formats::float6_e3m2fn>>();
  check_every_float<model::mx_element_from_f32<formats::float4_e2m1fn>>();
#endif
}
