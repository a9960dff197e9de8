// How an element-wise kernel (convert_n, quantize_n, dequantize_n on the GPU) splits an array:
// plain C++, so that it is tested on any host (tests/cuda/launch_geometry_test.cpp).
//
// The middle of the arrays is cut into *groups*: as many elements as fill 16 bytes of the
// narrower type (float -> bfloat16: 8 elements, float -> e4m3: 16).  The kernel
// (detail/elementwise.cuh) walks the groups in smaller chunks, 16 bytes of the wider type, so
// that each warp's loads and stores are contiguous.  Both arrays must be 16-byte aligned at the
// first group, so a short head of elements before it, and the tail after the last whole group,
// are converted one at a time.  When no head aligns both arrays (their
// misalignments differ), every element goes one at a time.
//
//   [0, head)                      one at a time
//   [head, head + groups * group)  groups, 16-byte vectors
//   [tail_begin, n)                one at a time
//
// The grid is one thread per group (or per single element, if there are more of those), capped
// at a few blocks per multiprocessor; the kernels loop over the rest (grid-stride).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../../config.hpp"

namespace mixprec::gpu::detail {

constexpr unsigned vector_bytes = 16;
constexpr unsigned elementwise_block_threads = 256;
// Resident blocks of 256 threads per multiprocessor that fill it (2048 threads on sm_80/sm_90).
constexpr unsigned elementwise_blocks_per_multiprocessor = 8;

// Elements per 16-byte group for a pass reading From (from_size bytes) and writing To.
constexpr unsigned group_elements(std::size_t from_size, std::size_t to_size) noexcept {
  return static_cast<unsigned>(vector_bytes / std::min(from_size, to_size));
}

struct elementwise_plan {
  std::uint64_t n = 0;
  std::uint64_t head = 0;    // elements converted one at a time before the first group
  std::uint64_t groups = 0;  // whole groups converted with 16-byte vectors
  unsigned group = 1;        // elements per group

  MIXPREC_HOST_DEVICE constexpr std::uint64_t tail_begin() const noexcept { return head + groups * group; }
  // Elements converted one at a time: the head and the tail.
  MIXPREC_HOST_DEVICE constexpr std::uint64_t single_count() const noexcept { return head + (n - tail_begin()); }
  // The i-th single element's index (i < single_count()).
  MIXPREC_HOST_DEVICE constexpr std::uint64_t single_index(std::uint64_t i) const noexcept {
    return i < head ? i : tail_begin() + (i - head);
  }
};

// in and out are the arrays' addresses; every element of each is naturally aligned.
constexpr elementwise_plan plan_elementwise(std::uintptr_t in, std::size_t in_size, std::uintptr_t out,
                                            std::size_t out_size, std::uint64_t n) noexcept {
  elementwise_plan plan;
  plan.n = n;
  plan.group = group_elements(in_size, out_size);
  // The alignments of in + k * in_size and out + k * out_size repeat with periods dividing
  // `group`, so if no k below it aligns both, none does.
  for (unsigned k = 0; k < plan.group && k <= n; ++k) {
    if ((in + k * in_size) % vector_bytes == 0 && (out + k * out_size) % vector_bytes == 0) {
      plan.head = k;
      plan.groups = (n - k) / plan.group;
      return plan;
    }
  }
  plan.head = n;  // every element one at a time
  plan.groups = 0;
  return plan;
}

struct launch_shape {
  unsigned blocks = 1;
  unsigned threads = elementwise_block_threads;
};

// One thread per work item, at most `blocks_per_multiprocessor` blocks per multiprocessor (and
// at least one block, so that a kernel with nothing to do still launches validly).
constexpr launch_shape grid_for(std::uint64_t work_items, int multiprocessors,
                                unsigned blocks_per_multiprocessor = elementwise_blocks_per_multiprocessor,
                                unsigned threads = elementwise_block_threads) noexcept {
  const std::uint64_t wanted = (work_items + threads - 1) / threads;
  const std::uint64_t cap = static_cast<std::uint64_t>(std::max(multiprocessors, 1)) * blocks_per_multiprocessor;
  launch_shape shape;
  shape.threads = threads;
  shape.blocks = static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(wanted, cap)));
  return shape;
}

constexpr launch_shape grid_for(const elementwise_plan& plan, int multiprocessors) noexcept {
  return grid_for(std::max(plan.groups, plan.single_count()), multiprocessors);
}

}  // namespace mixprec::gpu::detail
