// What the block quantisers' kernels (gpu::nvfp4_quantize, gpu::fp8_block_quantize) share: the
// host's NaN results for their float arithmetic, a block-wide maximum, and the grid size.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "../../scaling/fp8/scale_rules.hpp"
#include "elementwise.cuh"

namespace mixprec::gpu::detail {

// A float quotient as the host computes it, from the IEEE quotient q of a / b.  CUDA's div.rn
// returns the canonical NaN 0x7FFFFFFF for a NaN result; x86 (SSE/AVX) and AArch64 return the
// first NaN operand, quieted, with its sign and payload, and x86 gives its default NaN 0xFFC00000
// for an invalid quotient (0 / 0, inf / inf; Intel SDM vol. 1 §4.8.3.7): the same rule as
// fix_product_nan (instruction_fixups.hpp).  Only a NaN q is changed, so this also fixes a rule
// function's result that is exactly one such quotient (blockscale: torchao's p = amax / 2688,
// te_reference_block_scale's fp8_max / amax).
MIXPREC_HOST_DEVICE constexpr std::uint32_t fix_quotient_nan(std::uint32_t a_bits, std::uint32_t b_bits,
                                                             std::uint32_t quotient_bits) noexcept {
  constexpr std::uint32_t quiet_bit = 0x0040'0000u;
  constexpr std::uint32_t x86_default_nan = 0xFFC0'0000u;
  if (!float_bits_are_nan(quotient_bits)) return quotient_bits;
  if (float_bits_are_nan(a_bits)) return a_bits | quiet_bit;
  if (float_bits_are_nan(b_bits)) return b_bits | quiet_bit;
  return x86_default_nan;
}

MIXPREC_HOST_DEVICE inline float quotient_like_host(float a, float b, float quotient) noexcept {
  return bit_cast<float>(
      fix_quotient_nan(bit_cast<std::uint32_t>(a), bit_cast<std::uint32_t>(b), bit_cast<std::uint32_t>(quotient)));
}

// a / b rounded to nearest (div.rn: no approximation whatever the flags), NaN results as the host's.
MIXPREC_HOST_DEVICE inline float divide_like_host(float a, float b) noexcept {
  return quotient_like_host(a, b, mixprec::detail::divide_nearest(a, b));
}

// The largest of the block's x (blockDim.x a multiple of 32, at most 1024), in every thread.  Every
// thread of the block must call it.
__device__ inline std::uint32_t block_max_bits(std::uint32_t x) {
  __shared__ std::uint32_t warp_largest[32];
  NV_IF_ELSE_TARGET(NV_PROVIDES_SM_80, (x = __reduce_max_sync(0xFFFF'FFFFu, x);),
                    (for (int offset = 16; offset > 0; offset /= 2) {
                      const std::uint32_t other = __shfl_xor_sync(0xFFFF'FFFFu, x, offset);
                      x = other > x ? other : x;
                    }))
  __syncthreads();  // an earlier call's readers are done with warp_largest
  if (threadIdx.x % 32 == 0) warp_largest[threadIdx.x / 32] = x;
  __syncthreads();
  std::uint32_t largest = 0;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) largest = warp_largest[w] > largest ? warp_largest[w] : largest;
  return largest;
}

// Blocks for a grid-stride loop over `items` pieces of work of one block each (or, with
// per_block > 1, of per_block threads' work each): at least 1, at most enough to fill the device.
inline unsigned grid_blocks(std::uint64_t items, std::uint64_t per_block, int multiprocessors) {
  const std::uint64_t wanted = (items + per_block - 1) / per_block;
  const std::uint64_t most = static_cast<std::uint64_t>(std::max(multiprocessors, 1)) * 16;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(wanted, most)));
}

}  // namespace mixprec::gpu::detail
