// How the multi-tensor unscale kernel (cuda/unscale.cuh) sees a list of gradient arrays: plain
// C++, tested on any host (tests/cuda/multi_tensor_test.cpp).
//
// As PyTorch's multi_tensor_apply (aten/src/ATen/native/cuda/MultiTensorApply.cuh), the arrays
// are cut into chunks of tensor_chunk_elements, and one launch handles a *batch* of up to
// batch_tensors arrays, described by a struct that travels as the kernel's parameter (no device
// memory, no copy: graph-capturable).  A list of more arrays is split over several launches on
// the same stream.
//
// Unlike PyTorch's, a batch lists arrays, not chunks: each array with the number of chunks
// before it in the batch, so that a batch holds any number of chunks and the kernel's blocks find
// their array by walking that prefix.  (A list of chunks capped a batch at 320 chunks; 64 arrays
// of 2^20 bfloat16 values then took four launches of 2.4 waves each, and the bfloat16 unscale ran
// at 0.63 of a copy's bandwidth on an H200, docs/performance.md.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../../errors.hpp"
#include "../../scaling/unscale.hpp"

namespace mixprec::gpu::detail {

// PyTorch's kChunkSize.
constexpr std::uint64_t tensor_chunk_elements = 65536;
constexpr int batch_tensors = 64;

struct tensor_batch {
  void* data[batch_tensors];
  std::uint64_t size[batch_tensors];
  // chunks_before[t]: the chunks of arrays 0 .. t-1; chunks_before[tensors]: the batch's chunks.
  std::uint64_t chunks_before[batch_tensors + 1];
  std::uint8_t type[batch_tensors];  // the view's dtype (float32, bfloat16 or float16)
  int tensors;
};

// A kernel's parameters may take 4096 bytes (CUDA C++ Programming Guide, "Function Parameters",
// for every architecture this library targets without the CUDA 12.1 extension); the batch and
// the unscale kernel's few other parameters fit.
static_assert(sizeof(tensor_batch) <= 4096 - 64, "a tensor batch is a kernel parameter");

// The largest array (2^48 elements): a batch's chunk count then stays far inside 64 bits, and
// every index the kernel computes too.
constexpr std::uint64_t max_tensor_elements = tensor_chunk_elements << 32;

inline std::uint64_t chunks_of(std::uint64_t elements) noexcept {
  return (elements + tensor_chunk_elements - 1) / tensor_chunk_elements;
}

// Calls launch(const tensor_batch&) for each batch, in order; arrays of size 0 are skipped.
// Throws invalid_argument (before any launch) for an array of more than max_tensor_elements.
template <class Launch>
void for_each_tensor_batch(const gradient_view* arrays, std::size_t count, Launch&& launch) {
  for (std::size_t a = 0; a < count; ++a) {
    if (arrays[a].size() > max_tensor_elements) {
      throw invalid_argument("unscale_and_check: array " + std::to_string(a) + " has " +
                             std::to_string(arrays[a].size()) + " elements, the limit is " +
                             std::to_string(max_tensor_elements) + " (2^48)");
    }
  }
  tensor_batch batch{};
  for (std::size_t a = 0; a < count; ++a) {
    const gradient_view& v = arrays[a];
    if (v.size() == 0) continue;
    const int t = batch.tensors++;
    batch.data[t] = v.data();
    batch.size[t] = v.size();
    batch.type[t] = static_cast<std::uint8_t>(v.type());
    batch.chunks_before[t + 1] = batch.chunks_before[t] + chunks_of(v.size());
    if (batch.tensors == batch_tensors) {
      launch(static_cast<const tensor_batch&>(batch));
      batch = tensor_batch{};
    }
  }
  if (batch.tensors > 0) launch(static_cast<const tensor_batch&>(batch));
}

}  // namespace mixprec::gpu::detail
