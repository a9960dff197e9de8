// The exceptions of the CUDA backend (include/mixprec/cuda/), both derived from mixprec::error.
// Plain C++: no CUDA header is needed to catch them.
//
//   cuda_error          a CUDA runtime or cuBLASLt call failed; the message names the call and the
//                       library's own error name and text
//   unsupported_device  the operation needs a newer GPU than the current device (fp8 tensor-core
//                       GEMM on sm_80); the message names both compute capabilities
//
// Bad arguments (null pointers, sizes, leading dimensions, alignment) are
// mixprec::invalid_argument, as everywhere in the library; they are checked on the host before
// anything is launched.
#pragma once

#include <string>

#include "../errors.hpp"

namespace mixprec {

class cuda_error : public error {
 public:
  using error::error;
};

class unsupported_device : public error {
 public:
  using error::error;
};

namespace gpu::detail {

// "convert_n: cudaLaunchKernel failed: cudaErrorInvalidValue (invalid argument)"
inline std::string call_failure(const char* function, const char* call, const char* error_name,
                                const char* error_text) {
  return std::string(function) + ": " + call + " failed: " + error_name + " (" + error_text + ")";
}

// A compute capability as CUDA prints it: 89 -> "8.9".
inline std::string capability_text(int capability) {
  return std::to_string(capability / 10) + "." + std::to_string(capability % 10);
}

// "gemm: float8_e4m3fn inputs need compute capability 8.9 or newer (the fp8 mma.sync); device 0 is 8.0"
inline std::string device_too_old(const char* function, const std::string& what, int needed, int device,
                                  int capability) {
  return std::string(function) + ": " + what + " need compute capability " + capability_text(needed) +
         " or newer; device " + std::to_string(device) + " is " + capability_text(capability);
}

}  // namespace gpu::detail
}  // namespace mixprec
