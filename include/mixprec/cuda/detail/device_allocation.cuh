// One cudaMalloc'd buffer owned by an object (freed with it; moved, never copied), zeroed when made.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "../runtime.cuh"

namespace mixprec::gpu::detail {

class device_allocation {
 public:
  device_allocation() = default;
  // bytes of device memory, zeroed (cudaMemset: synchronous, so that a copy read back before any
  // kernel wrote it reads zeros, never another allocation's leftovers).
  device_allocation(std::size_t bytes, const char* function) : bytes_(bytes) {
    if (bytes == 0) return;
    check(cudaMalloc(&memory_, bytes), function, "cudaMalloc");
    const cudaError_t zeroed = cudaMemset(memory_, 0, bytes);
    if (zeroed != cudaSuccess) {
      static_cast<void>(cudaFree(memory_));
      memory_ = nullptr;
      check(zeroed, function, "cudaMemset");
    }
  }
  device_allocation(device_allocation&& other) noexcept
      : memory_(std::exchange(other.memory_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  device_allocation& operator=(device_allocation&& other) noexcept {
    if (this != &other) {
      release();
      memory_ = std::exchange(other.memory_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  device_allocation(const device_allocation&) = delete;
  device_allocation& operator=(const device_allocation&) = delete;
  ~device_allocation() { release(); }

  unsigned char* bytes() const noexcept { return static_cast<unsigned char*>(memory_); }
  std::size_t size() const noexcept { return bytes_; }

 private:
  void release() noexcept {
    if (memory_ != nullptr) static_cast<void>(cudaFree(memory_));
    memory_ = nullptr;
  }
  void* memory_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace mixprec::gpu::detail
