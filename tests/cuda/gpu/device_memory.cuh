// Device buffers for the GPU tests: allocated with cudaMalloc, freed on scope exit; copies to and
// from host vectors.  Errors throw mixprec::cuda_error.
#pragma once

#include <mixprec/cuda/runtime.cuh>

#include <cstddef>
#include <utility>
#include <vector>

namespace gpu_runs {

inline void check(cudaError_t result, const char* call) { mixprec::gpu::detail::check(result, "gpu test", call); }

template <class T>
class device_array {
 public:
  // n elements, placed `offset` elements past the start of a 256-byte aligned allocation (to
  // test misaligned arrays).  The bytes start as 0xA5 (a poison: an element a kernel should
  // have written but did not reads as a NaN or an unlikely code, never as a plausible zero).
  explicit device_array(std::size_t n, std::size_t offset = 0) : n_(n), offset_(offset) {
    const std::size_t bytes = (n + offset) * sizeof(T) + 16;
    check(cudaMalloc(&base_, bytes), "cudaMalloc");
    check(cudaMemset(base_, 0xA5, bytes), "cudaMemset (poison)");
  }
  device_array(const std::vector<T>& host, std::size_t offset = 0) : device_array(host.size(), offset) { upload(host); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  ~device_array() { static_cast<void>(cudaFree(base_)); }

  T* get() const noexcept { return static_cast<T*>(base_) + offset_; }
  std::size_t size() const noexcept { return n_; }
  void upload(const std::vector<T>& host) {
    check(cudaMemcpy(get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy (upload)");
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaMemcpy(host.data(), get(), n_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy (download)");
    return host;
  }

 private:
  void* base_ = nullptr;
  std::size_t n_, offset_;
};

}  // namespace gpu_runs
