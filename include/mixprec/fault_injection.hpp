// Bit-flip fault injection after rounding, to simulate soft errors (CPFloat's `flip` option,
// src/cpfloat_template.h "Bit flips"; SOFTERR_FRAC and SOFTERR_FP in its optstruct):
//
//   mixprec::bit_flips f{/*probability=*/1e-3, mixprec::flip_bits::fraction, /*seed=*/42};
//   mixprec::convert_n(x, n, codes);             // round first
//   mixprec::inject_bit_flips_n(codes, n, f);    // then flip one bit of some codes
//
// Element i (index first_index + i) is hit with probability floor(probability × 2^32) / 2^32
// (exactly 1 for probability 1), and then exactly one bit of its code flips: one of the
// format's fraction (mantissa) bits, or any of its total_bits bits, chosen as
// floor(word × bits / 2^32) for a second random word, which is uniform to within
// bits / 2^32 (at most 2^-26 for a 64-bit code).  The two words are the halves of SplitMix64
// (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014) at
// counter index of the stream seeded by `seed`: a code's fate depends only on (seed, index),
// whatever the thread count.  (Philox, the stochastic-rounding generator, cost 12 ns an element
// here in scalar code; this one vectorises.)
// The codes are the format's own: a fraction-bit flip of an fp8 code moves it by a multiple of
// its own last place, where CPFloat flips a bit of the binary32/64 number that stores the value.
// A flip may make a NaN or infinity (any-bit flips reach the exponent), as a soft error would.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "detail/extent.hpp"
#include "errors.hpp"
#include "minifloat.hpp"

namespace mixprec {

enum class flip_bits {
  fraction,  // one of the mantissa bits (CPFloat SOFTERR_FRAC)
  any,       // any bit of the code: sign, exponent or mantissa (CPFloat SOFTERR_FP)
};

struct bit_flips {
  double probability = 0;  // per element, in [0, 1]
  flip_bits bits = flip_bits::fraction;
  std::uint64_t seed = 0;
};

namespace detail {

// The 64 random bits of element `index`: SplitMix64's output for the counter value
// seed + (index + 1) × golden gamma (its `nextLong` after index + 1 steps from seed).
MIXPREC_HOST_DEVICE constexpr std::uint64_t bit_flip_bits(std::uint64_t seed, std::uint64_t index) noexcept {
  std::uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// floor(probability × 2^32), or 2^32 for probability 1 (every element).
inline std::uint64_t bit_flip_threshold(const char* function, const bit_flips& f) {
  if (!(f.probability >= 0 && f.probability <= 1)) {  // NaN fails both
    throw invalid_argument(std::string(function) + ": probability is " + std::to_string(f.probability) +
                           ", it must be in [0, 1]");
  }
  return static_cast<std::uint64_t>(std::ldexp(f.probability, 32));
}

template <class T>
int flippable_bits(const char* function, const bit_flips& f) {
  using traits = format_traits<format_of_t<T>>;
  if (f.bits == flip_bits::any) return traits::total_bits;
  if (f.bits != flip_bits::fraction) {
    throw invalid_argument(std::string(function) + ": bits is " + std::to_string(static_cast<int>(f.bits)) +
                           ", not a flip_bits value");
  }
  if (traits::mantissa_bits == 0) {
    throw invalid_argument(std::string(function) + ": flip_bits::fraction on " + format_name<format_of_t<T>>() +
                           ", which has 0 fraction bits; use flip_bits::any");
  }
  return traits::mantissa_bits;
}

// Branch-free (the hit is a mask), so that the loop over an array vectorises.
template <class T>
MIXPREC_HOST_DEVICE MIXPREC_BIT_CAST_CONSTEXPR T flip_one(T x, std::uint64_t threshold, int bits, std::uint64_t seed,
                                                          std::uint64_t index) noexcept {
  const std::uint64_t random = bit_flip_bits(seed, index);
  const std::uint64_t hit = random & 0xFFFF'FFFFu, which = random >> 32;
  const std::uint64_t bit = (which * static_cast<std::uint64_t>(bits)) >> 32;
  using code_type = typename format_traits<format_of_t<T>>::storage_type;
  const auto flip = static_cast<code_type>(static_cast<code_type>(hit < threshold) << bit);
  return code_access::make<T>(static_cast<code_type>(code_access::code(x) ^ flip));
}

}  // namespace detail

// x (element `index` of its stream) after the fault model of f.  T: any minifloat, float or double.
template <class T>
T inject_bit_flip(T x, const bit_flips& f, std::uint64_t index) {
  const std::uint64_t threshold = detail::bit_flip_threshold("inject_bit_flip", f);
  return detail::flip_one(x, threshold, detail::flippable_bits<T>("inject_bit_flip", f), f.seed, index);
}

// In place over data[0, n): element i is element first_index + i of the stream.
template <class T>
void inject_bit_flips_n(T* data, std::size_t n, const bit_flips& f, std::uint64_t first_index = 0) {
  constexpr const char* function = "inject_bit_flips_n";
  const std::uint64_t threshold = detail::bit_flip_threshold(function, f);
  const int bits = detail::flippable_bits<T>(function, f);
  if (n == 0 || threshold == 0) return;
  if (data == nullptr)
    throw invalid_argument(std::string(function) + ": null data pointer with n = " + std::to_string(n));
  detail::check_array_extent(function, "data", data, n);
  for (std::size_t i = 0; i < n; ++i) data[i] = detail::flip_one(data[i], threshold, bits, f.seed, first_index + i);
}

}  // namespace mixprec
