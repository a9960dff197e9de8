// The device pieces of the NCCL gradient all-reduce (distributed/nccl_all_reduce.cuh) that the
// CUDA backend does not already have: the largest magnitude of an array, the owner's rank-ordered
// float sum, and the NaN fill of found_inf; the error checks that turn a CUDA or NCCL failure into
// agreement_error; and a scoped switch to the communicator's device.  The encodings themselves
// are gpu::quantize_n, gpu::convert_n and gpu::dequantize_n (cuda/quantize.cuh, convert_n.cuh),
// tested bit for bit against the host functions that all_reduce.hpp calls.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../../cuda/detail/elementwise.cuh"
#include "../../cuda/detail/launch_geometry.hpp"
#include "../../cuda/runtime.cuh"
#include "../../scaling/errors.hpp"
#include "../../scaling/fp8/scale_rules.hpp"

namespace mixprec::detail {

inline void nccl_all_reduce_check(ncclResult_t result, const char* function, const char* call) {
  if (result == ncclSuccess) return;
  throw agreement_error(std::string(function) + ": " + call + " failed: " + ncclGetErrorString(result));
}

inline void nccl_all_reduce_check(cudaError_t result, const char* function, const char* call) {
  if (result == cudaSuccess) return;
  throw agreement_error(std::string(function) + ": " + call + " failed: " + cudaGetErrorName(result) + " (" +
                        cudaGetErrorString(result) + ")");
}

// Makes the communicator's device current for the scope of a call and restores the caller's.
class nccl_device_scope {
 public:
  nccl_device_scope(ncclComm_t comm, const char* function) {
    int device = 0;
    nccl_all_reduce_check(ncclCommCuDevice(comm, &device), function, "ncclCommCuDevice");
    nccl_all_reduce_check(cudaGetDevice(&previous_), function, "cudaGetDevice");
    if (device != previous_) nccl_all_reduce_check(cudaSetDevice(device), function, "cudaSetDevice");
    switched_ = device != previous_;
  }
  nccl_device_scope(const nccl_device_scope&) = delete;
  nccl_device_scope& operator=(const nccl_device_scope&) = delete;
  ~nccl_device_scope() {
    if (switched_) static_cast<void>(cudaSetDevice(previous_));
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// a + b rounded to nearest with subnormals kept, whatever -ftz or --use_fast_math say, and never
// fused with a neighbouring multiply: the host's float addition, one rounding.  (The division is
// scale_rules.hpp's divide_nearest, the multiplication elementwise.cuh's multiply_nearest.)
__device__ inline float all_reduce_add_nearest(float a, float b) {
  float s;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(s) : "f"(a), "f"(b));
  return s;
}

// The kernels are templates on the float type (always float) so that, header-only, they may be
// defined in several translation units of one program.

// *amax_bits = max(*amax_bits, the largest magnitude bits of in[0, n)), as amax_n's (NaN as the
// canonical NaN's bits, above infinity's).  Launched with elementwise_block_threads threads.
template <class Float>
__global__ void __launch_bounds__(gpu::detail::elementwise_block_threads)
    all_reduce_amax_kernel(const Float* __restrict__ in, std::size_t n, unsigned* amax_bits) {
  std::uint32_t largest = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const std::uint32_t m = gpu::detail::magnitude_bits(in[i]);
    largest = m > largest ? m : largest;
  }
  gpu::detail::reduce_amax(largest, amax_bits);
}

// The owner's reduction (all_reduce_sum in all_reduce.hpp, on floats already decoded): rows holds
// p rows of n floats, rank 0's first; sum[i] = ((row_0[i] + row_1[i]) + ...) + row_{p-1}[i], then
// × factor (divide == 1: 1/p for a power-of-two p, exact) or / factor (divide == 2: p).
template <class Float>
__global__ void all_reduce_rank_ordered_sum_kernel(const Float* __restrict__ rows, int p, std::size_t n, int divide,
                                                   Float factor, Float* __restrict__ sum) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    float s = rows[i];
    for (int r = 1; r < p; ++r) s = all_reduce_add_nearest(s, rows[static_cast<std::size_t>(r) * n + i]);
    if (divide == 1) s = gpu::detail::multiply_nearest(s, factor);
    if (divide == 2) s = divide_nearest(s, factor);
    sum[i] = s;
  }
}

// Every element the canonical quiet NaN (std::numeric_limits<float>::quiet_NaN(), 0x7FC0'0000).
template <class Float>
__global__ void all_reduce_fill_nan_kernel(Float* data, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    data[i] = bit_cast<float>(0x7FC0'0000u);
  }
}

// Blocks of elementwise_block_threads for n elements, a few per multiprocessor at most (the
// kernels loop over the rest).
inline unsigned all_reduce_blocks(std::size_t n, const char* function) {
  const std::size_t threads = gpu::detail::elementwise_block_threads;
  const auto most = static_cast<std::size_t>(gpu::current_device(function).multiprocessors) *
                    gpu::detail::elementwise_blocks_per_multiprocessor;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min((n + threads - 1) / threads, most)));
}

inline void launch_all_reduce_amax(const float* in, std::size_t n, unsigned* amax_bits, cudaStream_t stream,
                                   const char* function) {
  if (n == 0) return;
  all_reduce_amax_kernel<float>
      <<<all_reduce_blocks(n, function), gpu::detail::elementwise_block_threads, 0, stream>>>(in, n, amax_bits);
  nccl_all_reduce_check(cudaGetLastError(), function, "all_reduce_amax_kernel launch");
}

inline void launch_all_reduce_fill_nan(float* data, std::size_t n, cudaStream_t stream, const char* function) {
  if (n == 0) return;
  all_reduce_fill_nan_kernel<float>
      <<<all_reduce_blocks(n, function), gpu::detail::elementwise_block_threads, 0, stream>>>(data, n);
  nccl_all_reduce_check(cudaGetLastError(), function, "all_reduce_fill_nan_kernel launch");
}

// The division exactly as all_reduce_sum (all_reduce.hpp) does it: none for p = 1 or a sum; a
// multiplication by 1/p (exact) for a power-of-two p; else a division by p.
inline void launch_all_reduce_sum(const float* rows, int p, std::size_t n, bool average, float* sum,
                                  cudaStream_t stream, const char* function) {
  if (n == 0) return;
  const bool divide = average && p > 1;
  const auto divisor = static_cast<float>(p);
  const bool power_of_two = (p & (p - 1)) == 0;
  const int mode = !divide ? 0 : power_of_two ? 1 : 2;
  const float factor = mode == 1 ? 1.0f / divisor : divisor;
  all_reduce_rank_ordered_sum_kernel<float>
      <<<all_reduce_blocks(n, function), gpu::detail::elementwise_block_threads, 0, stream>>>(rows, p, n, mode, factor,
                                                                                              sum);
  nccl_all_reduce_check(cudaGetLastError(), function, "all_reduce_rank_ordered_sum_kernel launch");
}

}  // namespace mixprec::detail
