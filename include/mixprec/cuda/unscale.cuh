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
// Arrays are packed into batches of up to 64 arrays, each one launch whose description travels as
// the kernel's parameter (detail/multi_tensor.hpp): no device memory, no copy, no
// synchronisation: graph-capturable.  The grid is what the device holds at once (occupancy asked
// once per device), its blocks walking the batch's chunks in four parts each.
// options.threads is a host setting and is ignored here.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
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
// The kernel's variants (its tuning knobs, below): the default, and the one for batches of 16-bit
// arrays only.
constexpr unsigned unscale_min_blocks = 1;
constexpr unsigned unscale_vectors_in_flight = chunks_in_flight;
constexpr unsigned unscale_16_bit_min_blocks = 8;
constexpr unsigned unscale_16_bit_vectors_in_flight = 2;
// Blocks per chunk, each taking an equal part (a block per chunk left too few warps in flight to
// hide the memory's latency: 29 % occupancy on an H100).
constexpr unsigned unscale_blocks_per_chunk = 4;
constexpr std::uint64_t unscale_part_elements = tensor_chunk_elements / unscale_blocks_per_chunk;
static_assert(tensor_chunk_elements % unscale_blocks_per_chunk == 0 && unscale_part_elements % 8 == 0,
              "parts of a chunk start on 16-byte boundaries of an aligned array");

// One 16-byte vector of T multiplied by inv_scale one element at a time, with the host's NaN
// products and any rounding mode: the path of vectors that hold an inf or NaN, or of a directed
// mode.  Out of line, so that the kernel's loop keeps only the short path (with the exact path
// unrolled inline, half of a warp's stall cycles were instruction fetch on an H100:
// docs/results/2026-11-26-h100/ncu_unscale_bf16.txt).
template <class T>
__device__ __noinline__ ::uint4 unscale_vector_exact(::uint4 raw, float inv_scale, rounding r) {
  constexpr unsigned group = vector_bytes / sizeof(T);
  T values[group];
  std::memcpy(values, &raw, sizeof values);
#pragma unroll
  for (unsigned e = 0; e < group; ++e) {
    values[e] = gpu::convert<T>(multiply_like_host(gpu::to_float(values[e]), inv_scale), r, overflow::non_finite);
  }
  std::memcpy(&raw, values, sizeof values);
  return raw;
}

// One part of one array (float, bfloat16 or float16): 16-byte vectors where the array is 16-byte
// aligned (its parts then are too), one element at a time otherwise and for the tail.  Returns
// whether a value was inf or NaN.  Every bit equals the host's: values are checked before the
// multiply, and when multiply is false (inv_scale 1) nothing is written.
template <unsigned InFlight, class T>
__device__ bool unscale_range(T* data, std::uint64_t begin, std::uint64_t end, float inv_scale, bool multiply,
                              rounding r) {
  constexpr unsigned group = vector_bytes / sizeof(T);
  bool non_finite = false;
  // The common case takes a short path per vector: nearest-even, a finite scale and finite
  // values.  There the products are never NaN (no fix-up) and the pair instruction rounds two at
  // a time: the same bits as unscale_vector_exact gives.  (Per element, the fix-ups' compares and
  // branches made the bfloat16 kernel compute-bound: 0.54 of a copy's bandwidth on an H100.)
  const bool short_path =
      r == rounding::nearest_even && (bit_cast<std::uint32_t>(inv_scale) & float_infinity_bits) != float_infinity_bits;
  std::uint64_t i = begin;
  if (reinterpret_cast<std::uintptr_t>(data) % vector_bytes == 0) {
    // Each thread loads InFlight vectors before it converts any (one at a time left most of the
    // bandwidth unused: bfloat16 ran at 0.44 of a copy's on an H100, docs/performance.md).
    const std::uint64_t vectors = (end - begin) / group;
    auto* base = reinterpret_cast<::uint4*>(data + begin);
    for (std::uint64_t v = threadIdx.x; v < vectors; v += InFlight * blockDim.x) {
      ::uint4 raw[InFlight] = {};
#pragma unroll
      for (unsigned u = 0; u < InFlight; ++u) {
        if (v + u * blockDim.x < vectors) raw[u] = base[v + u * blockDim.x];
      }
#pragma unroll
      for (unsigned u = 0; u < InFlight; ++u) {
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
        non_finite |= !finite;
        if (!multiply) continue;
        if (short_path && finite) {
#pragma unroll
          for (unsigned e = 0; e < group; e += 2) {
            gpu::convert_pair(multiply_nearest(x[e], inv_scale), multiply_nearest(x[e + 1], inv_scale), values[e],
                              values[e + 1], rounding::nearest_even, overflow::non_finite);
          }
          std::memcpy(&raw[u], values, sizeof values);
        } else {
          raw[u] = unscale_vector_exact<T>(raw[u], inv_scale, r);
        }
        base[v + u * blockDim.x] = raw[u];
      }
    }
    i = begin + vectors * group;
  }
  for (std::uint64_t k = i + threadIdx.x; k < end; k += blockDim.x) {
    const float x = gpu::to_float(data[k]);
    non_finite |= (bit_cast<std::uint32_t>(x) & float_infinity_bits) == float_infinity_bits;
    if (multiply) data[k] = gpu::convert<T>(multiply_like_host(x, inv_scale), r, overflow::non_finite);
  }
  return non_finite;
}

// Each block walks the batch's parts (unscale_blocks_per_chunk per chunk) with a stride of the
// grid, which the launcher sizes to what the device holds at once: one launch per batch of up to
// 64 arrays, whatever their sizes, and no partly filled waves but the last.  MinBlocks (blocks
// per multiprocessor that the compiler must fit in registers) and InFlight (vectors each thread
// loads before converting) are the tuning knobs; benchmarks/cuda_benchmark.cu times variants.
template <unsigned MinBlocks, unsigned InFlight>
__global__ void __launch_bounds__(unscale_block_threads, MinBlocks)
    unscale_kernel(tensor_batch batch, const float* inv_scale, float* found_inf, rounding r) {
  const float inv = *inv_scale;
  const bool multiply = inv != 1.0f;
  const std::uint64_t parts = batch.chunks_before[batch.tensors] * unscale_blocks_per_chunk;
  bool non_finite = false;
  int t = 0;  // the array of the part: parts only grow along a block's walk
  for (std::uint64_t p = blockIdx.x; p < parts; p += gridDim.x) {
    const std::uint64_t chunk = p / unscale_blocks_per_chunk;
    while (batch.chunks_before[t + 1] <= chunk) ++t;
    const std::uint64_t begin = (chunk - batch.chunks_before[t]) * tensor_chunk_elements +
                                (p % unscale_blocks_per_chunk) * unscale_part_elements;
    const std::uint64_t size = batch.size[t];
    if (begin >= size) continue;  // a part past the end of the array's last chunk
    const std::uint64_t end = begin + unscale_part_elements < size ? begin + unscale_part_elements : size;
    switch (static_cast<dtype>(batch.type[t])) {
      case dtype::float32:
        non_finite |= unscale_range<InFlight>(static_cast<float*>(batch.data[t]), begin, end, inv, multiply, r);
        break;
      case dtype::bfloat16:
        non_finite |= unscale_range<InFlight>(static_cast<bfloat16*>(batch.data[t]), begin, end, inv, multiply, r);
        break;
      case dtype::float16:
        non_finite |= unscale_range<InFlight>(static_cast<float16*>(batch.data[t]), begin, end, inv, multiply, r);
        break;
      default:  // a gradient_view holds no other dtype
        break;
    }
  }
  if (non_finite) *found_inf = 1.0f;  // every writer writes the same value
}

// The blocks of a variant of unscale_kernel that the current device holds at once (asked once per
// device).
template <unsigned MinBlocks, unsigned InFlight>
unsigned unscale_grid_capacity(const char* function) {
  constexpr int cached_devices = 64;
  static std::atomic<unsigned> capacity[cached_devices];
  const device_properties device = current_device(function);
  const bool cacheable = device.device >= 0 && device.device < cached_devices;
  if (cacheable) {
    const unsigned known = capacity[device.device].load(std::memory_order_relaxed);
    if (known != 0) return known;
  }
  int per_multiprocessor = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, unscale_kernel<MinBlocks, InFlight>,
                                                      unscale_block_threads, 0),
        function, "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const unsigned blocks = static_cast<unsigned>(std::max(per_multiprocessor, 1) * std::max(device.multiprocessors, 1));
  if (cacheable) capacity[device.device].store(blocks, std::memory_order_relaxed);
  return blocks;
}

inline void check_unscale_arguments(const char* function, const gradient_view* arrays, std::size_t count,
                                    const float* inv_scale, const float* found_inf, const unscale_options& options) {
  mixprec::detail::check_gradient_views(function, arrays, count);
  if (inv_scale == nullptr) throw invalid_argument(std::string(function) + ": null inv_scale pointer");
  if (found_inf == nullptr) throw invalid_argument(std::string(function) + ": null found_inf pointer");
  const auto rounding_value = static_cast<int>(options.gradient_rounding);
  if (rounding_value < static_cast<int>(rounding::nearest_even) || rounding_value > static_cast<int>(last_rounding)) {
    throw invalid_argument(std::string(function) + ": options.gradient_rounding is " + std::to_string(rounding_value) +
                           ", not a rounding mode");
  }
}

// One batch through a variant of the kernel.
template <unsigned MinBlocks, unsigned InFlight>
void launch_unscale_batch(const char* function, const tensor_batch& batch, const float* inv_scale, float* found_inf,
                          rounding r, cudaStream_t stream) {
  const std::uint64_t parts = batch.chunks_before[batch.tensors] * unscale_blocks_per_chunk;
  const auto blocks =
      static_cast<unsigned>(std::min<std::uint64_t>(parts, unscale_grid_capacity<MinBlocks, InFlight>(function)));
  unscale_kernel<MinBlocks, InFlight><<<blocks, unscale_block_threads, 0, stream>>>(batch, inv_scale, found_inf, r);
  check_launch(function);
}

// unscale_and_check with every batch through one variant of the kernel (benchmarks/cuda_benchmark.cu).
template <unsigned MinBlocks, unsigned InFlight>
void launch_unscale(const gradient_view* arrays, std::size_t count, const float* inv_scale, float* found_inf,
                    cudaStream_t stream, const unscale_options& options) {
  constexpr const char* function = "gpu::unscale_and_check";
  check_unscale_arguments(function, arrays, count, inv_scale, found_inf, options);
  for_each_tensor_batch(arrays, count, [&](const tensor_batch& batch) {
    launch_unscale_batch<MinBlocks, InFlight>(function, batch, inv_scale, found_inf, options.gradient_rounding, stream);
  });
}

inline bool only_16_bit(const tensor_batch& batch) noexcept {
  for (int t = 0; t < batch.tensors; ++t) {
    if (static_cast<dtype>(batch.type[t]) == dtype::float32) return false;
  }
  return true;
}

}  // namespace detail

// A batch of bfloat16/float16 arrays only runs a variant of the kernel with a quarter of the
// registers (8 blocks per multiprocessor, 2 vectors in flight): on an H200 it moved 64 arrays of
// 2^20 bfloat16 values in 92 us against 105 us for the default, which float arrays keep (150 us
// against 159 us for the 16-bit variant): docs/performance.md.
inline void unscale_and_check(const gradient_view* arrays, std::size_t count, const float* inv_scale, float* found_inf,
                              cudaStream_t stream = nullptr, const unscale_options& options = {}) {
  constexpr const char* function = "gpu::unscale_and_check";
  detail::check_unscale_arguments(function, arrays, count, inv_scale, found_inf, options);
  detail::for_each_tensor_batch(arrays, count, [&](const detail::tensor_batch& batch) {
    if (detail::only_16_bit(batch)) {
      detail::launch_unscale_batch<detail::unscale_16_bit_min_blocks, detail::unscale_16_bit_vectors_in_flight>(
          function, batch, inv_scale, found_inf, options.gradient_rounding, stream);
    } else {
      detail::launch_unscale_batch<detail::unscale_min_blocks, detail::unscale_vectors_in_flight>(
          function, batch, inv_scale, found_inf, options.gradient_rounding, stream);
    }
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
