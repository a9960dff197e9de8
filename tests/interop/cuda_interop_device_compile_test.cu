// interop/cuda.hpp under nvcc: every mapping in a __global__ function, compiled for each
// architecture of the build with warnings as errors.  The same __host__ __device__ round trip
// runs on the host here; where a GPU is present the kernel runs too and must give the same
// codes (every code of every type comes back unchanged).
#include <mixprec/interop/cuda.hpp>

#include <cuda_runtime.h>

#include <cstdio>

namespace {

// Code -> mixprec -> CUDA type -> mixprec -> code.  `code` is reduced to the format's width
// first (from_bits rejects wider patterns).
template <class T, class Native>
__host__ __device__ unsigned round_trip(unsigned code) {
  using storage = typename T::storage_type;
  const auto bits = static_cast<storage>(code & mixprec::format_traits<typename T::format>::code_mask);
  const Native native = static_cast<Native>(T::from_bits(bits));
  return T(native).bits();
}

constexpr int type_count = 8;

__host__ __device__ unsigned round_trip_of(int type, unsigned code) {
  using namespace mixprec;
  switch (type) {
    case 0:
      return round_trip<float16, __half>(code);
    case 1:
      return round_trip<bfloat16, __nv_bfloat16>(code);
    case 2:
      return round_trip<float8_e4m3fn, __nv_fp8_e4m3>(code);
    case 3:
      return round_trip<float8_e5m2, __nv_fp8_e5m2>(code);
#if MIXPREC_INTEROP_CUDA_HAS_MX_TYPES
    case 4:
      return round_trip<float8_e8m0fnu, __nv_fp8_e8m0>(code);
    case 5:
      return round_trip<float6_e3m2fn, __nv_fp6_e3m2>(code);
    case 6:
      return round_trip<float6_e2m3fn, __nv_fp6_e2m3>(code);
    case 7:
      return round_trip<float4_e2m1fn, __nv_fp4_e2m1>(code);
#endif
    default:
      return code;
  }
}

__host__ __device__ unsigned code_count(int type) { return type < 2 ? 65536u : type < 5 ? 256u : type < 7 ? 64u : 16u; }

__global__ void round_trip_kernel(unsigned* out) {
  const unsigned code = blockIdx.x * blockDim.x + threadIdx.x;
  if (code >= 65536u) return;
  for (int type = 0; type < type_count; ++type) {
    out[type * 65536 + code] = code < code_count(type) ? round_trip_of(type, code) : code;
  }
}

int check(const unsigned* results, const char* where) {
  int failures = 0;
  for (int type = 0; type < type_count; ++type) {
    for (unsigned code = 0; code < code_count(type); ++code) {
      if (results[type * 65536 + code] != code) {
        if (++failures <= 8) {
          std::printf("%s: type %d code 0x%x came back as 0x%x\n", where, type, code, results[type * 65536 + code]);
        }
      }
    }
  }
  return failures;
}

}  // namespace

int main() {
  static unsigned host_results[type_count * 65536];
  for (int type = 0; type < type_count; ++type) {
    for (unsigned code = 0; code < 65536u; ++code) {
      host_results[type * 65536 + code] = code < code_count(type) ? round_trip_of(type, code) : code;
    }
  }
  int failures = check(host_results, "host");

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: the kernel is compiled, not run\n");
  } else {
    unsigned* device_results = nullptr;
    static unsigned copied[type_count * 65536];
    const bool ok = cudaMalloc(&device_results, sizeof copied) == cudaSuccess &&
                    (round_trip_kernel<<<256, 256>>>(device_results), cudaDeviceSynchronize() == cudaSuccess) &&
                    cudaMemcpy(copied, device_results, sizeof copied, cudaMemcpyDeviceToHost) == cudaSuccess;
    cudaFree(device_results);
    if (!ok) {
      std::printf("device run failed: %s\n", cudaGetErrorString(cudaGetLastError()));
      ++failures;
    } else {
      const int device_failures = check(copied, "device");
      failures += device_failures;
      if (device_failures == 0) std::printf("device: every code of every type round-tripped in the kernel\n");
    }
  }
  std::printf("interop/cuda.hpp round trips: %s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
