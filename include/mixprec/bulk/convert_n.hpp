// Bulk conversion (DESIGN.md, "Conversion"): convert_n over arrays of any pair of
// {float, double, every minifloat}, and convert_stochastic_n from float.
//
// This header is the portable path: a loop over the scalar conversion, which compilers unroll
// and partly vectorise.  Every other path must give the same bits.  Element i of
// convert_stochastic_n draws its random bits from Philox-4x32-10 keyed by the seed, at
// counter i, so the result depends only on (seed, i, in[i]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "../convert.hpp"
#include "../detail/philox.hpp"
#include "../errors.hpp"

namespace mixprec {
namespace detail {

template <class From, class To>
void check_bulk_arguments(const char* function, const From* in, std::size_t n, const To* out) {
  if (n == 0) return;
  if (in == nullptr || out == nullptr) {
    throw invalid_argument(std::string(function) + ": null " + (in == nullptr ? "input" : "output") +
                           " pointer with n = " + std::to_string(n));
  }
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
  const detail::round_mode mode = detail::to_round_mode(r);
  for (std::size_t i = 0; i < n; ++i) out[i] = detail::convert_value<To>(in[i], mode, o, 0);
}

template <class To>
void convert_stochastic_n(const float* in, std::size_t n, To* out, std::uint64_t seed,
                          overflow o = overflow::non_finite) {
  detail::check_bulk_arguments("convert_stochastic_n", in, n, out);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = detail::convert_value<To>(in[i], detail::round_mode::stochastic, o, detail::philox_bits(seed, i));
  }
}

}  // namespace mixprec
