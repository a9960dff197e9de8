// Unscaling gradients on the device with the non-finite check fused in, over many arrays in one
// launch (the role of PyTorch's _amp_foreach_non_finite_check_and_unscale_, whose CUDA kernel is
// in aten/src/ATen/native/cuda/AmpKernels.cu):
//
//   mixprec::gpu::unscale_and_check(arrays, count, inv_scale, found_inf, stream, options)
//
// arrays: gradient_views (scaling/unscale.hpp) of device arrays of float, bfloat16 or float16.
// inv_scale: device pointer to one float (the scaler's float(1.0 / double(scale))).
// found_inf: device pointer to one float, set to 1.0f if any value is inf or NaN and otherwise
// left as it was (PyTorch's convention: the caller zeroes it; device_loss_scaler does so in its
// update).  Each value is read as float and checked before the multiply; the product is float;
// bfloat16/float16 are rounded back with options.gradient_rounding; when *inv_scale is exactly 1
// nothing is written (the check only), as the host's unscale_and_check does.  Every bit equals
// the host function's (NaN products as the host makes them: detail::multiply_like_host).
//
// Arrays are packed into batches of up to 64 arrays / 320 chunks of 65536 elements (four blocks
// a chunk), each one launch whose description travels as the kernel's parameter
// (detail/multi_tensor.hpp): no device memory, no copy, no synchronisation: graph-capturable.
// options.threads is a host setting and is ignored here.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "../scaling/unscale.hpp"
#include "convert.cuh"
#include "detail/elementwise.cuh"
#include "detail/multi_tensor.hpp"
#include "runtime.cuh"

namespace mixprec::gpu {
namespace detail {

constexpr unsigned unscale_block_threads = 256;
// Blocks per chunk of the batch, each taking an equal part: a batch's 320 chunks as 320 blocks
// left an H100 at 29 % occupancy, latency-bound at 0.41 of a copy's bandwidth for bfloat16
// (docs/performance.md); four blocks per chunk give the multiprocessors about four times the
// warps to switch between.
constexpr unsigned unscale_blocks_per_chunk = 4;
constexpr std::uint64_t unscale_part_elements = tensor_chunk_elements / unscale_blocks_per_chunk;
static_assert(tensor_chunk_elements % unscale_blocks_per_chunk == 0 && unscale_part_elements % 8 == 0,
              "parts of a chunk start on 16-byte boundaries of an aligned array");

// One chunk of one array (float, bfloat16 or float16): 16-byte vectors where the array is 16-byte
// aligned (its chunks then are too), one element at a time otherwise and for the tail.  Returns
// whether a value was inf or NaN.
template <class T>
__device__ bool unscale_chunk(T* data, std::uint64_t begin, std::uint64_t end, float inv_scale, bool multiply,
                              rounding r) {
  constexpr unsigned group = vector_bytes / sizeof(T);
  bool non_finite = false;
  const auto one = [&](T& g) {
    const float x = gpu::to_float(g);
    non_finite |= (bit_cast<std::uint32_t>(x) & float_infinity_bits) == float_infinity_bits;
    if (multiply) g = gpu::convert<T>(multiply_like_host(x, inv_scale), r, overflow::non_finite);
  };
  // The common case takes a short path per vector: nearest-even, a finite scale and finite
  // values.  There the products are never NaN (no fix-up) and the pair instruction rounds two at
  // a time; the result is the same bits as one() gives, which every other vector goes through.
  // (Per element, the fix-ups' compares and branches made the bfloat16 kernel compute-bound:
  // 0.54 of a copy's bandwidth on an H100.)
  const bool short_path = multiply && r == rounding::nearest_even &&
                          (bit_cast<std::uint32_t>(inv_scale) & float_infinity_bits) != float_infinity_bits;
  std::uint64_t i = begin;
  if (reinterpret_cast<std::uintptr_t>(data) % vector_bytes == 0) {
    // Each thread loads chunks_in_flight vectors before it converts any (one at a time left most
    // of the bandwidth unused: bfloat16 ran at 0.44 of a copy's on an H100, docs/performance.md).
    const std::uint64_t vectors = (end - begin) / group;
    auto* base = reinterpret_cast<uint4*>(data + begin);
    for (std::uint64_t v = threadIdx.x; v < vectors; v += chunks_in_flight * blockDim.x) {
      uint4 raw[chunks_in_flight] = {};
#pragma unroll
      for (unsigned u = 0; u < chunks_in_flight; ++u) {
        if (v + u * blockDim.x < vectors) raw[u] = base[v + u * blockDim.x];
      }
#pragma unroll
      for (unsigned u = 0; u < chunks_in_flight; ++u) {
        if (v + u * blockDim.x >= vectors) break;
        T values[group];
        std::memcpy(values, &raw[u], sizeof values);
        float x[group];
        bool finite = true;
#pragma unroll
        for (unsigned e = 0; e < group; ++e) {
          x[e] = gpu::to_float(values[e]);
          finite &= (bit_cast<std::uint32_t>(x[e]) & float_infinity_bits) != float_infinity_bits;
        }
        if (short_path && finite) {
#pragma unroll
          for (unsigned e = 0; e < group; e += 2) {
            gpu::convert_pair(multiply_nearest(x[e], inv_scale), multiply_nearest(x[e + 1], inv_scale), values[e],
                              values[e + 1], rounding::nearest_even, overflow::non_finite);
          }
        } else {
#pragma unroll
          for (unsigned e = 0; e < group; ++e) one(values[e]);
        }
        if (multiply) {
          std::memcpy(&raw[u], values, sizeof values);
          base[v + u * blockDim.x] = raw[u];
        }
      }
    }
    i = begin + vectors * group;
  }
  for (std::uint64_t k = i + threadIdx.x; k < end; k += blockDim.x) one(data[k]);
  return non_finite;
}

// (A template only so that the header can define it in every translation unit.)
template <int = 0>
__global__ void __launch_bounds__(unscale_block_threads)
    unscale_kernel(tensor_batch batch, const float* inv_scale, float* found_inf, rounding r) {
  const unsigned entry = blockIdx.x / unscale_blocks_per_chunk, part = blockIdx.x % unscale_blocks_per_chunk;
  const int t = batch.tensor_of_block[entry];
  const std::uint64_t begin =
      static_cast<std::uint64_t>(batch.chunk_of_block[entry]) * tensor_chunk_elements + part * unscale_part_elements;
  const std::uint64_t size = batch.size[t];
  if (begin >= size) return;  // a part past the end of the array's last chunk
  const std::uint64_t end = begin + unscale_part_elements < size ? begin + unscale_part_elements : size;
  const float inv = *inv_scale;
  const bool multiply = inv != 1.0f;
  bool non_finite = false;
  switch (static_cast<dtype>(batch.type[t])) {
    case dtype::float32:
      non_finite = unscale_chunk(static_cast<float*>(batch.data[t]), begin, end, inv, multiply, r);
      break;
    case dtype::bfloat16:
      non_finite = unscale_chunk(static_cast<bfloat16*>(batch.data[t]), begin, end, inv, multiply, r);
      break;
    case dtype::float16:
      non_finite = unscale_chunk(static_cast<float16*>(batch.data[t]), begin, end, inv, multiply, r);
      break;
    default:  // a gradient_view holds no other dtype
      break;
  }
  if (non_finite) *found_inf = 1.0f;  // every writer writes the same value
}

inline void check_unscale_arguments(const char* function, const gradient_view* arrays, std::size_t count,
                                    const float* inv_scale, const float* found_inf, const unscale_options& options) {
  mixprec::detail::check_gradient_views(function, arrays, count);
  if (inv_scale == nullptr) throw invalid_argument(std::string(function) + ": null inv_scale pointer");
  if (found_inf == nullptr) throw invalid_argument(std::string(function) + ": null found_inf pointer");
  const auto rounding_value = static_cast<int>(options.gradient_rounding);
  if (rounding_value < static_cast<int>(rounding::nearest_even) ||
      rounding_value > static_cast<int>(rounding::to_odd)) {
    throw invalid_argument(std::string(function) + ": options.gradient_rounding is " + std::to_string(rounding_value) +
                           ", not a rounding mode");
  }
}

}  // namespace detail

inline void unscale_and_check(const gradient_view* arrays, std::size_t count, const float* inv_scale, float* found_inf,
                              cudaStream_t stream = nullptr, const unscale_options& options = {}) {
  constexpr const char* function = "gpu::unscale_and_check";
  detail::check_unscale_arguments(function, arrays, count, inv_scale, found_inf, options);
  detail::for_each_tensor_batch(arrays, count, [&](const detail::tensor_batch& batch) {
    const auto blocks = static_cast<unsigned>(batch.blocks) * detail::unscale_blocks_per_chunk;
    detail::unscale_kernel<>
        <<<blocks, detail::unscale_block_threads, 0, stream>>>(batch, inv_scale, found_inf, options.gradient_rounding);
    detail::check_launch(function);
  });
}

inline void unscale_and_check(std::initializer_list<gradient_view> arrays, const float* inv_scale, float* found_inf,
                              cudaStream_t stream = nullptr, const unscale_options& options = {}) {
  unscale_and_check(arrays.begin(), arrays.size(), inv_scale, found_inf, stream, options);
}

inline void unscale_and_check(const std::vector<gradient_view>& arrays, const float* inv_scale, float* found_inf,
                              cudaStream_t stream = nullptr, const unscale_options& options = {}) {
  unscale_and_check(arrays.data(), arrays.size(), inv_scale, found_inf, stream, options);
}

}  // namespace mixprec::gpu
