// How the multi-tensor unscale kernel (cuda/unscale.cuh) sees a list of gradient arrays: plain
// C++, tested on any host (tests/cuda/multi_tensor_test.cpp).
//
// As PyTorch's multi_tensor_apply (aten/src/ATen/native/cuda/MultiTensorApply.cuh), the arrays
// are cut into chunks of tensor_chunk_elements, and one launch handles a *batch*: up to
// batch_tensors arrays and batch_blocks chunks, one block per chunk, described by a struct that
// travels as the kernel's parameter (no device memory, no copy: graph-capturable).  A list that
// does not fit is split over several launches on the same stream; an array whose chunks do not
// fit continues in the next batch.
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
constexpr int batch_blocks = 320;

struct tensor_batch {
  void* data[batch_tensors];
  std::uint64_t size[batch_tensors];
  std::uint8_t type[batch_tensors];  // the view's dtype (float32, bfloat16 or float16)
  std::uint8_t tensor_of_block[batch_blocks];
  std::uint32_t chunk_of_block[batch_blocks];
  int tensors;
  int blocks;
};

// A kernel's parameters may take 4096 bytes (CUDA C++ Programming Guide, "Function Parameters",
// for every architecture this library targets without the CUDA 12.1 extension); the batch and
// the unscale kernel's few other parameters fit.
static_assert(sizeof(tensor_batch) <= 4096 - 64, "a tensor batch is a kernel parameter");

// The largest array: its chunk indices fit the batch's 32-bit fields.
constexpr std::uint64_t max_tensor_elements = tensor_chunk_elements << 32;

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
  const auto start_with = [&batch](const gradient_view& v) {
    batch.data[batch.tensors] = v.data();
    batch.size[batch.tensors] = v.size();
    batch.type[batch.tensors] = static_cast<std::uint8_t>(v.type());
    ++batch.tensors;
  };
  for (std::size_t a = 0; a < count; ++a) {
    const gradient_view& v = arrays[a];
    if (v.size() == 0) continue;
    start_with(v);
    const std::uint64_t chunks = (v.size() + tensor_chunk_elements - 1) / tensor_chunk_elements;
    for (std::uint64_t c = 0; c < chunks; ++c) {
      batch.tensor_of_block[batch.blocks] = static_cast<std::uint8_t>(batch.tensors - 1);
      batch.chunk_of_block[batch.blocks] = static_cast<std::uint32_t>(c);
      ++batch.blocks;
      const bool last_chunk = c + 1 == chunks;
      if (batch.blocks == batch_blocks || (batch.tensors == batch_tensors && last_chunk)) {
        launch(static_cast<const tensor_batch&>(batch));
        batch = tensor_batch{};
        if (!last_chunk) start_with(v);  // the array's remaining chunks go on in the next batch
      }
    }
  }
  if (batch.blocks > 0) launch(static_cast<const tensor_batch&>(batch));
}

}  // namespace mixprec::gpu::detail
