// Bulk conversion between float and packed narrow integers (intn_packing.hpp's layout):
//
//   pack_n<int4>(in, n, out, rounding, overflow)            n floats -> n / 2 bytes
//   pack_stochastic_n<int4>(in, n, out, seed, overflow, rule)
//   unpack_n<int4>(in, n, out)                              n / 2 bytes -> n floats (exact)
//
// Element i is convert<int4>(in[i], rounding, overflow) (intn_convert.hpp), and under stochastic
// rounding convert_stochastic<int4>(in[i], philox_bits(seed, i), ...), as convert_stochastic_n
// draws its words; every path (portable; AVX2, which AVX-512 CPUs run too) gives those bits, on
// any number of threads (set_bulk_threads, bulk/dispatch.hpp).  n must be a multiple of the
// values per byte (2, 4, 8), so no byte is shared with data the call does not own; the arrays
// must not overlap.  Bad arguments throw invalid_argument before anything is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../detail/extent.hpp"
#include "../detail/packed_codes.hpp"
#include "../detail/parallel.hpp"
#include "../detail/philox.hpp"
#include "../intn_convert.hpp"
#include "../intn_packing.hpp"
#include "dispatch.hpp"
#include "random_words.hpp"
#include "simd_path.hpp"
#include "x86/intn_avx2.hpp"

namespace mixprec {
namespace detail {

// Elements per piece of the portable loop and per thread grain: whole bytes, whole SIMD steps.
constexpr std::size_t intn_piece = 256;

template <class T>
void check_intn_bulk_arguments(const char* function, const void* floats, const unsigned char* packed, std::size_t n) {
  const std::string name = std::string(function) + "<" + intn_name<T::bits_per_value, T::is_signed>() + ">";
  if (n % values_per_byte<T> != 0) {
    throw invalid_argument(name + ": n = " + std::to_string(n) + " is not a multiple of " +
                           std::to_string(values_per_byte<T>) + ", the values per packed byte");
  }
  if (n == 0) return;
  if (floats == nullptr || packed == nullptr) {
    throw invalid_argument(name + ": null " + (floats == nullptr ? "float" : "packed") +
                           " pointer with n = " + std::to_string(n));
  }
  check_array_extent(name.c_str(), "float", floats, n, sizeof(float));
  const std::size_t bytes = packed_bytes<T>(n);
  const auto f = reinterpret_cast<std::uintptr_t>(floats), p = reinterpret_cast<std::uintptr_t>(packed);
  if (f < p + bytes && p < f + n * sizeof(float)) {
    throw invalid_argument(name + ": the packed array (" + std::to_string(bytes) +
                           " bytes) overlaps the float array (n = " + std::to_string(n) + ")");
  }
}

// The portable loop: the scalar conversion into codes, SWAR packing (detail/packed_codes.hpp).
// `first` is in[0]'s index in the whole call (for the random words).  Under stochastic rounding
// a piece's random words come first, in vector lanes (bulk/random_words.hpp: a Philox evaluation
// per element took 20 ns of the 20.5 an element cost).
template <class T, round_mode Mode>
void pack_portable(simd_path path, const float* in, std::size_t n, unsigned char* out, std::uint64_t seed,
                   std::size_t first) {
  constexpr int bits = T::bits_per_value;
  constexpr bool stochastic = Mode == round_mode::stochastic || Mode == round_mode::stochastic_equal;
  unsigned char codes[intn_piece];
  std::uint32_t random[stochastic ? intn_piece : 1] = {};
  for (std::size_t begin = 0; begin < n; begin += intn_piece) {
    const std::size_t count = n - begin < intn_piece ? n - begin : intn_piece;
    if constexpr (stochastic) philox_words(path, seed, 0, 0, first + begin, count, random);
    for (std::size_t i = 0; i < count; ++i) {
      codes[i] =
          intn_code_from<T, ieee_binary32>(bit_cast<std::uint32_t>(in[begin + i]), Mode, stochastic ? random[i] : 0);
    }
    const std::size_t whole = count / 8 * 8;
    pack_codes<bits>(codes, whole, out + begin / 8 * bits);
    for (std::size_t i = whole; i < count; ++i) write_packed_code<bits>(out + begin / 8 * bits, i, codes[i]);
  }
}

template <class T, round_mode Mode>
void pack_on(simd_path path, const float* in, std::size_t n, unsigned char* out, std::uint64_t seed,
             std::size_t first) {
#if MIXPREC_X86_SIMD
  if (path != simd_path::portable) {
    constexpr int bits = T::bits_per_value;
    constexpr std::size_t step = intn_avx2::pack_step<bits>;
    const std::size_t vectorised = n / step * step;
    if constexpr (Mode != round_mode::stochastic && Mode != round_mode::stochastic_equal) {
      intn_avx2::pack_floats<Mode, bits, T::min_value, T::max_value>(in, vectorised, out);
    } else {
      // A piece's random words from the vector Philox, then its codes in vector lanes.
      static_assert(intn_piece % step == 0, "pieces of whole steps");
      std::uint32_t random[intn_piece];
      for (std::size_t begin = 0; begin < vectorised; begin += intn_piece) {
        const std::size_t count = vectorised - begin < intn_piece ? vectorised - begin : intn_piece;
        philox_words(path, seed, 0, 0, first + begin, count, random);
        intn_avx2::pack_floats<Mode, bits, T::min_value, T::max_value>(in + begin, count, out + begin / 8 * bits,
                                                                       random);
      }
    }
    return pack_portable<T, Mode>(path, in + vectorised, n - vectorised, out + vectorised / 8 * bits, seed,
                                  first + vectorised);
  }
#endif
  pack_portable<T, Mode>(path, in, n, out, seed, first);
}

template <class T, round_mode Mode>
void pack_split(const float* in, std::size_t n, unsigned char* out, std::uint64_t seed) {
  const simd_path path = active_simd_path();
  const work_split split = split_work(n, bulk_threads(), bulk_elements_per_thread, intn_piece);
  run_chunks(split, [&](std::size_t, std::size_t begin, std::size_t end) {
    pack_on<T, Mode>(path, in + begin, end - begin, out + begin / 8 * T::bits_per_value, seed, begin);
  });
}

// The values of every 4-bit pattern (codes above the width unused).
template <class T>
struct intn_value_table {
  signed char values[16];
  constexpr intn_value_table() : values{} {
    for (unsigned c = 0; c < 16; ++c) values[c] = static_cast<signed char>(T::from_bits(c & T::code_mask).value());
  }
};

template <class T>
void unpack_on(simd_path path, const unsigned char* in, std::size_t n, float* out) {
  constexpr int bits = T::bits_per_value;
  static constexpr intn_value_table<T> table{};
  std::size_t done = 0;
#if MIXPREC_X86_SIMD
  if (path != simd_path::portable) {
    done = n / 32 * 32;
    if constexpr (bits == 4) {
      intn_avx2::unpack_nibbles(in, done, table.values, out);
    } else {
      intn_avx2::unpack_narrow<bits>(in, done, table.values, out);
    }
  }
#endif
  (void)path;
  unsigned char codes[intn_piece];
  for (; done < n; done += intn_piece) {
    const std::size_t count = n - done < intn_piece ? n - done : intn_piece;
    const std::size_t whole = count / 8 * 8;
    unpack_codes<bits>(in + done / 8 * bits, whole, codes);
    for (std::size_t i = whole; i < count; ++i)
      codes[i] = static_cast<unsigned char>(read_packed_code<bits>(in + done / 8 * bits, i));
    for (std::size_t i = 0; i < count; ++i) out[done + i] = table.values[codes[i]];
  }
}

}  // namespace detail

template <class T>
void pack_n(const float* in, std::size_t n, unsigned char* out, rounding r = rounding::nearest_even,
            overflow o = overflow::non_finite) {
  static_assert(detail::is_intn_v<T> && 8 % T::bits_per_value == 0, "pack_n<T> packs int4, int2, int1 and uint twins");
  (void)o;  // both overflow modes clamp (intn_convert.hpp)
  detail::check_intn_bulk_arguments<T>("pack_n", in, out, n);
  using detail::round_mode;
  switch (r) {
    case rounding::nearest_even:
      return detail::pack_split<T, round_mode::nearest_even>(in, n, out, 0);
    case rounding::nearest_away:
      return detail::pack_split<T, round_mode::nearest_away>(in, n, out, 0);
    case rounding::toward_zero:
      return detail::pack_split<T, round_mode::toward_zero>(in, n, out, 0);
    case rounding::upward:
      return detail::pack_split<T, round_mode::upward>(in, n, out, 0);
    case rounding::downward:
      return detail::pack_split<T, round_mode::downward>(in, n, out, 0);
    case rounding::to_odd:
      return detail::pack_split<T, round_mode::to_odd>(in, n, out, 0);
    case rounding::nearest_zero:
      return detail::pack_split<T, round_mode::nearest_zero>(in, n, out, 0);
  }
  throw invalid_argument("pack_n: rounding is " + std::to_string(static_cast<int>(r)) + ", not a rounding (0 to " +
                         std::to_string(static_cast<int>(last_rounding)) + ")");
}

template <class T>
void pack_stochastic_n(const float* in, std::size_t n, unsigned char* out, std::uint64_t seed,
                       overflow o = overflow::non_finite, stochastic_rule rule = stochastic_rule::proportional) {
  static_assert(detail::is_intn_v<T> && 8 % T::bits_per_value == 0, "pack_stochastic_n<T> packs int4, int2, int1");
  (void)o;
  detail::check_intn_bulk_arguments<T>("pack_stochastic_n", in, out, n);
  if (rule == stochastic_rule::equal_probability) {
    return detail::pack_split<T, detail::round_mode::stochastic_equal>(in, n, out, seed);
  }
  detail::pack_split<T, detail::round_mode::stochastic>(in, n, out, seed);
}

template <class T>
void unpack_n(const unsigned char* in, std::size_t n, float* out) {
  static_assert(detail::is_intn_v<T> && 8 % T::bits_per_value == 0, "unpack_n<T> unpacks int4, int2, int1");
  detail::check_intn_bulk_arguments<T>("unpack_n", out, in, n);
  const simd_path path = active_simd_path();
  const detail::work_split split = detail::split_work(n, bulk_threads(), bulk_elements_per_thread, detail::intn_piece);
  detail::run_chunks(split, [&](std::size_t, std::size_t begin, std::size_t end) {
    detail::unpack_on<T>(path, in + begin / 8 * T::bits_per_value, end - begin, out + begin);
  });
}

}  // namespace mixprec
