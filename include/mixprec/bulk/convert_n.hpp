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

}  // namespace detail

template <class From, class To>
void convert_n(const From* in, std::size_t n, To* out, rounding r = rounding::nearest_even,
               overflow o = overflow::non_finite) {
  detail::check_bulk_arguments("convert_n", in, n, out);
  detail::convert_n_on(active_simd_path(), in, n, out, r, o);
}

template <class To>
void convert_stochastic_n(const float* in, std::size_t n, To* out, std::uint64_t seed,
                          overflow o = overflow::non_finite) {
  detail::check_bulk_arguments("convert_stochastic_n", in, n, out);
  // Each thread's share knows its global offset: element i's bits depend only on (seed, i).
  const simd_path path = active_simd_path();
  detail::for_each_chunk(n, [&](std::size_t, std::size_t begin, std::size_t end) {
    detail::stochastic_serial(path, in + begin, end - begin, out + begin, o, seed, begin);
  });
}

}  // namespace mixprec
