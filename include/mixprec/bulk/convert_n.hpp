// Bulk conversion (DESIGN.md, "Conversion"): convert_n over arrays of any pair of
// {float, double, every minifloat}, and convert_stochastic_n from float.
//
// float -> minifloat and minifloat -> float (and minifloat -> minifloat, staged through float,
// which holds every value of the library's formats exactly) run on the SIMD path that
// simd_path.hpp selects; everything else, and the portable path, is a loop over the scalar
// conversion.  Every path gives the scalar function's bits; dispatch.hpp says how large arrays
// are streamed and split over threads.  Element i of convert_stochastic_n draws its random bits
// from Philox-4x32-10 keyed by the seed, at counter i (computed in vector lanes on the SIMD
// paths), so the result depends only on (seed, i, in[i]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include "../convert.hpp"
#include "../detail/subnormal_flush.hpp"
#include "../detail/constexpr_math.hpp"
#include "../detail/extent.hpp"
#include "../detail/philox.hpp"
#include "../errors.hpp"
#include "../types.hpp"
#include "dispatch.hpp"
#include "simd_path.hpp"

namespace mixprec {
namespace detail {

template <class From, class To>
void check_bulk_arguments(const char* function, const From* in, std::size_t n, const To* out) {
  if (n == 0) return;
  if (in == nullptr || out == nullptr) {
    throw invalid_argument(std::string(function) + ": null " + (in == nullptr ? "input" : "output") +
                           " pointer with n = " + std::to_string(n));
  }
  check_array_extent(function, "input", in, n);
  check_array_extent(function, "output", out, n);
  const auto in_begin = reinterpret_cast<std::uintptr_t>(in);
  const auto out_begin = reinterpret_cast<std::uintptr_t>(out);
  if (in_begin < out_begin + n * sizeof(To) && out_begin < in_begin + n * sizeof(From)) {
    throw invalid_argument(std::string(function) + ": the output array overlaps the input array (n = " +
                           std::to_string(n) + "); convert into a separate buffer");
  }
}

// subnormals::flush in bulk: the conversion as under keep, in pieces that stay in the first-level
// cache, each followed by a pass that redoes with the scalar flushing conversion the few inputs
// that rule changes (detail/subnormal_flush.hpp).  `convert(begin, end)` converts a piece;
// `random(i)` is element i's random word (stochastic rounding) or 0.
constexpr std::size_t flush_piece = 4096;
template <class From, class To, class Convert, class Random>
void convert_flushing(simd_path path, const From* in, std::size_t begin, std::size_t end, To* out, round_mode mode,
                      overflow o, Convert convert, Random random) {
  using from = format_of_t<From>;
  using to = format_of_t<To>;
  const auto redo = [&](std::size_t i) {
    const auto code = code_access::code(in[i]);
    if (flush_applies<from, to>(code)) {
      out[i] = code_access::make<To>(convert_bits_flushing<from, to>(code, mode, o, random(i)));
    }
  };
  for (std::size_t piece = begin; piece < end; piece += flush_piece) {
    const std::size_t last = end - piece < flush_piece ? end : piece + flush_piece;
    convert(piece, last);
    bool scanned = false;
    if constexpr (std::is_same<From, float>::value && format_traits<to>::min_exponent >= -126) {
      // From float, the vector kernels list the inputs with |x| in (0, 2^min_exponent): about
      // one in 80 for Gaussian data into e4m3fn, where testing each element cost twice the
      // conversion itself.
      std::uint32_t found[flush_piece];
      std::size_t count = 0;
      constexpr auto smallest_normal = static_cast<std::uint32_t>(format_traits<to>::min_exponent + 127) << 23;
      scanned = with_kernels(path, [&](auto target) {
        count = decltype(target)::find_small_magnitudes(in + piece, last - piece, smallest_normal, found);
      });
      for (std::size_t k = 0; k < count; ++k) redo(piece + found[k]);
    }
    if (!scanned) {
      for (std::size_t i = piece; i < last; ++i) redo(i);
    }
  }
}

// convert_n and convert_stochastic_n on a given path (which the caller has checked this CPU
// supports): the public functions run them on active_simd_path(), the tests on every path.
template <class From, class To>
void convert_n_on(simd_path path, const From* in, std::size_t n, To* out, rounding r, overflow o, subnormals s) {
  if (s == subnormals::keep) return convert_n_on(path, in, n, out, r, o);
  for_each_chunk(n, [&](std::size_t, std::size_t begin, std::size_t end) {
    convert_flushing(
        path, in, begin, end, out, to_round_mode(r), o,
        [&](std::size_t first, std::size_t last) {
          convert_n_serial(path, in + first, last - first, out + first, r, o, false);
        },
        [](std::size_t) { return std::uint32_t{0}; });
  });
}

template <class To>
void convert_stochastic_n_on(simd_path path, const float* in, std::size_t n, To* out, std::uint64_t seed, overflow o,
                             stochastic_rule rule, subnormals s) {
  // Each thread's share knows its global offset: element i's bits depend only on (seed, i).
  for_each_chunk(n, [&](std::size_t, std::size_t begin, std::size_t end) {
    if (s == subnormals::keep)
      return stochastic_serial(path, in + begin, end - begin, out + begin, o, seed, begin, rule);
    convert_flushing(
        path, in, begin, end, out, stochastic_mode(rule), o,
        [&](std::size_t first, std::size_t last) {
          stochastic_serial(path, in + first, last - first, out + first, o, seed, first, rule);
        },
        [seed](std::size_t i) { return philox_bits(seed, i); });
  });
}

}  // namespace detail

// convert_n(in, n, out) is convert_n(in, n, out, rounding::nearest_even): the same bits, but a file
// that calls only this form compiles the nearest-even kernels alone, not the kernel of the other
// modes and the subnormal-flushing path as well (docs/performance.md, "Compile time").  Under the
// compiled mode it calls the general form, which mixprec::compiled holds.
template <class From, class To>
void convert_n(const From* in, std::size_t n, To* out) {
  detail::check_bulk_arguments("convert_n", in, n, out);
#if defined(MIXPREC_COMPILED)
  detail::convert_n_on(active_simd_path(), in, n, out, rounding::nearest_even, overflow::non_finite);
#else
  detail::convert_n_on(active_simd_path(), in, n, out, detail::nearest_even_only{}, overflow::non_finite);
#endif
}

template <class From, class To>
void convert_n(const From* in, std::size_t n, To* out, rounding r, overflow o = overflow::non_finite,
               subnormals s = subnormals::keep) {
  detail::check_bulk_arguments("convert_n", in, n, out);
  detail::convert_n_on(active_simd_path(), in, n, out, r, o, s);
}

// Element i rounds with the random word philox_bits(seed, i) (detail/philox.hpp), so the result
// depends only on (seed, i, in[i]), whatever the path and the thread count.
template <class To>
void convert_stochastic_n(const float* in, std::size_t n, To* out, std::uint64_t seed,
                          overflow o = overflow::non_finite, stochastic_rule rule = stochastic_rule::proportional,
                          subnormals s = subnormals::keep) {
  detail::check_bulk_arguments("convert_stochastic_n", in, n, out);
  detail::convert_stochastic_n_on(active_simd_path(), in, n, out, seed, o, rule, s);
}

}  // namespace mixprec
