// The CUDA runtime as the kernels' launchers use it: error checks that throw mixprec::cuda_error,
// and the properties of the current device (compute capability, multiprocessor count), read
// once per device.  Nothing here synchronises or touches a stream, so every launcher stays
// usable inside CUDA graph capture.
#pragma once

#include <cuda_runtime.h>

#include <atomic>

#include "errors.hpp"

namespace mixprec::gpu {

namespace detail {

inline void check(cudaError_t result, const char* function, const char* call) {
  if (result == cudaSuccess) return;
  throw cuda_error(call_failure(function, call, cudaGetErrorName(result), cudaGetErrorString(result)));
}

// After a <<<...>>> launch: a launch error (bad configuration, no device, no kernel image for
// this architecture) is reported by cudaGetLastError.
inline void check_launch(const char* function) { check(cudaGetLastError(), function, "kernel launch"); }

}  // namespace detail

struct device_properties {
  int device = 0;
  int capability = 0;       // major * 10 + minor: 80, 89, 90, ...
  int multiprocessors = 0;  // streaming multiprocessors
};

// The current device (cudaGetDevice) and its properties.  cudaDeviceGetAttribute is asked once
// per device and the answer kept: launchers call this on every launch.
inline device_properties current_device(const char* function) {
  constexpr int cached_devices = 64;
  static std::atomic<int> capabilities[cached_devices];
  static std::atomic<int> multiprocessors[cached_devices];
  device_properties p;
  detail::check(cudaGetDevice(&p.device), function, "cudaGetDevice");
  const bool cacheable = p.device >= 0 && p.device < cached_devices;
  if (cacheable) {
    p.capability = capabilities[p.device].load(std::memory_order_relaxed);
    p.multiprocessors = multiprocessors[p.device].load(std::memory_order_relaxed);
    if (p.capability != 0 && p.multiprocessors != 0) return p;
  }
  int major = 0, minor = 0;
  detail::check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, p.device), function,
                "cudaDeviceGetAttribute(cudaDevAttrComputeCapabilityMajor)");
  detail::check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, p.device), function,
                "cudaDeviceGetAttribute(cudaDevAttrComputeCapabilityMinor)");
  detail::check(cudaDeviceGetAttribute(&p.multiprocessors, cudaDevAttrMultiProcessorCount, p.device), function,
                "cudaDeviceGetAttribute(cudaDevAttrMultiProcessorCount)");
  p.capability = major * 10 + minor;
  if (cacheable) {
    capabilities[p.device].store(p.capability, std::memory_order_relaxed);
    multiprocessors[p.device].store(p.multiprocessors, std::memory_order_relaxed);
  }
  return p;
}

}  // namespace mixprec::gpu
