// Quantisation of device arrays for fp8 training, fused as on the host (bulk/quantize.hpp):
//
//   mixprec::gpu::quantize_n(in, n, out, scale, amax, rounding, overflow, stream)
//       out[i] = To(in[i] × scale), and *amax = max |in[i]| (NaN if any in[i] is NaN), in one pass
//   mixprec::gpu::dequantize_n(in, n, out, scale, stream)
//       out[i] = float(in[i]) × scale
//
// The scale is a float, or a pointer to a float in device memory (Transformer Engine's delayed
// scaling computes it on the device from the amax history; reading it there needs no host
// round trip).  amax is device memory: quantize_n sets it to 0 (cudaMemsetAsync) and the kernel
// max-reduces into it, so it holds the host quantize_n's return value bit for bit once the stream
// reaches it.  The products are float, rounded to nearest, NaN operands kept as the host keeps
// them (detail::multiply_like_host), so every output equals the host function's.  Saturating by
// default, as on the host.  Asynchronous, allocation-free, graph-capturable.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include <string>

#include "../bulk/convert_n.hpp"
#include "detail/elementwise.cuh"

namespace mixprec::gpu {

namespace detail {

template <class To>
void quantize_on(const float* in, std::size_t n, To* out, scale_source scale, float* amax, rounding r, overflow o,
                 cudaStream_t stream) {
  static_assert(is_minifloat<To>::value, "gpu::quantize_n quantises to a mixprec type");
  mixprec::detail::check_bulk_arguments("gpu::quantize_n", in, n, out);
  if (amax == nullptr) throw invalid_argument("gpu::quantize_n: null amax pointer (device memory for one float)");
  check(cudaMemsetAsync(amax, 0, sizeof(float), stream), "gpu::quantize_n", "cudaMemsetAsync(amax)");
  launch_elementwise<true>("gpu::quantize_n", in, n, out, quantize_op<To>{{scale, 1.0f}, r, o},
                           reinterpret_cast<unsigned*>(amax), stream);
}

template <class From>
void dequantize_on(const From* in, std::size_t n, float* out, scale_source scale, cudaStream_t stream) {
  static_assert(is_minifloat<From>::value, "gpu::dequantize_n decodes a mixprec type");
  mixprec::detail::check_bulk_arguments("gpu::dequantize_n", in, n, out);
  launch_elementwise<false>("gpu::dequantize_n", in, n, out, dequantize_op<From>{{scale, 1.0f}}, nullptr, stream);
}

inline scale_source device_scale(const char* function, const float* scale_on_device) {
  if (scale_on_device == nullptr) throw invalid_argument(std::string(function) + ": null scale pointer");
  return {scale_on_device, 1.0f};
}

}  // namespace detail

template <class To>
void quantize_n(const float* in, std::size_t n, To* out, float scale, float* amax, rounding r = rounding::nearest_even,
                overflow o = overflow::saturate, cudaStream_t stream = nullptr) {
  detail::quantize_on(in, n, out, {nullptr, scale}, amax, r, o, stream);
}

template <class To>
void quantize_n(const float* in, std::size_t n, To* out, const float* scale_on_device, float* amax,
                rounding r = rounding::nearest_even, overflow o = overflow::saturate, cudaStream_t stream = nullptr) {
  detail::quantize_on(in, n, out, detail::device_scale("gpu::quantize_n", scale_on_device), amax, r, o, stream);
}

template <class From>
void dequantize_n(const From* in, std::size_t n, float* out, float scale, cudaStream_t stream = nullptr) {
  detail::dequantize_on(in, n, out, {nullptr, scale}, stream);
}

template <class From>
void dequantize_n(const From* in, std::size_t n, float* out, const float* scale_on_device,
                  cudaStream_t stream = nullptr) {
  detail::dequantize_on(in, n, out, detail::device_scale("gpu::dequantize_n", scale_on_device), stream);
}

}  // namespace mixprec::gpu
