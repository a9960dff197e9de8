// Bulk conversion of device arrays on a stream:
//
//   mixprec::gpu::convert_n(in, n, out, rounding, overflow, stream)
//   mixprec::gpu::convert_n(in, n, out, rounding, overflow, subnormals, stream)
//   mixprec::gpu::convert_stochastic_n(in, n, out, seed, overflow, stochastic_rule, subnormals, stream)
//
// any pair of {float, every mixprec type}, as the host's convert_n (bulk/convert_n.hpp), with
// the same bits: float -> T and T -> float through gpu::convert / gpu::to_float (the conversion
// instructions where they are exact, cuda/convert.cuh), T -> U through the generic conversion;
// under subnormals::flush every element through the scalar conversion (mixprec::convert, which
// is __host__ __device__).  convert_stochastic_n rounds float element i with the word
// philox_bits(seed, i), as the host's convert_stochastic_n: the same bits on either side, for
// either stochastic_rule and subnormal policy.
// 16-byte vector loads and stores, grid-stride (detail/launch_geometry.hpp).  Asynchronous: it
// returns once the kernel is queued; no allocation, no synchronisation (graph-capturable).
//
// in and out are device (or managed) memory and must not overlap: invalid_argument, checked on
// the host before anything is launched, as are null pointers with n > 0.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "../bulk/convert_n.hpp"
#include "detail/elementwise.cuh"

namespace mixprec::gpu {

template <class From, class To>
void convert_n(const From* in, std::size_t n, To* out, rounding r, overflow o, subnormals s,
               cudaStream_t stream = nullptr) {
  static_assert((std::is_same<From, float>::value || detail::is_minifloat<From>::value) &&
                    (std::is_same<To, float>::value || detail::is_minifloat<To>::value),
                "gpu::convert_n converts between float and the mixprec types");
  mixprec::detail::check_bulk_arguments("gpu::convert_n", in, n, out);
  detail::launch_elementwise<false>("gpu::convert_n", in, n, out, detail::convert_op<From, To>{r, o, s}, nullptr,
                                    stream);
}

template <class From, class To>
void convert_n(const From* in, std::size_t n, To* out, rounding r = rounding::nearest_even,
               overflow o = overflow::non_finite, cudaStream_t stream = nullptr) {
  convert_n(in, n, out, r, o, subnormals::keep, stream);
}

template <class To>
void convert_stochastic_n(const float* in, std::size_t n, To* out, std::uint64_t seed,
                          overflow o = overflow::non_finite, stochastic_rule rule = stochastic_rule::proportional,
                          subnormals s = subnormals::keep, cudaStream_t stream = nullptr) {
  static_assert(detail::is_minifloat<To>::value, "gpu::convert_stochastic_n rounds floats to a mixprec type");
  mixprec::detail::check_bulk_arguments("gpu::convert_stochastic_n", in, n, out);
  detail::launch_elementwise<false>("gpu::convert_stochastic_n", in, n, out,
                                    detail::stochastic_convert_op<To>{seed, o, rule, s}, nullptr, stream);
}

}  // namespace mixprec::gpu
