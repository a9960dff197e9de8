// Every value type in __global__ code: construction, conversion in every mode, stochastic
// rounding, arithmetic, comparisons and limits.  nvcc compiles it for each target
// architecture; main() runs the same __host__ __device__ code on the host, so a build without
// a GPU still checks that nvcc's host pass computes the right bits.
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/convert.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/types.hpp>

#include <cstdio>

namespace {

template <class T>
__host__ __device__ unsigned exercise(float x, unsigned random) {
  using namespace mixprec;
  unsigned acc = 0;
  const T a(x), b(0.5f);
  acc += a.bits() + T(static_cast<double>(x)).bits() + T(3).bits();
  acc += convert<T>(x, rounding::toward_zero, overflow::saturate).bits();
  acc += convert<T>(x, rounding::to_odd).bits() + convert<T>(x, rounding::upward).bits();
  acc += convert_stochastic<T>(x, random).bits();
  acc += (a + b).bits() + (a - b).bits() + (a * b).bits() + (a / b).bits() + (-a).bits();
  acc += (a < b) + (a == b) + (a >= b);
  acc += static_cast<unsigned>(static_cast<float>(a) != 0.0f);
  acc += std::numeric_limits<T>::max().bits() + std::numeric_limits<T>::min().bits();
  acc += float16(a).bits();  // between formats
  acc += static_cast<unsigned>(detail::philox_bits(42, random) & 1u);
  return acc;
}

__host__ __device__ unsigned exercise_all(float x, unsigned random) {
  using namespace mixprec;
  return exercise<float16>(x, random) + exercise<bfloat16>(x, random) + exercise<float8_e4m3fn>(x, random) +
         exercise<float8_e5m2>(x, random) + exercise<float8_e4m3fnuz>(x, random) +
         exercise<float8_e5m2fnuz>(x, random) + exercise<float6_e3m2fn>(x, random) +
         exercise<float6_e2m3fn>(x, random) + exercise<float4_e2m1fn>(x, random) + exercise<float8_e8m0fnu>(x, random) +
         exercise<float8_ue4m3>(x, random) + exercise<float8_e4m3>(x, random) + exercise<float8_e3m4>(x, random) +
         exercise<float8_e4m3b11fnuz>(x, random) + exercise<tfloat32>(x, random);
}

__global__ void exercise_kernel(const float* in, unsigned* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  __shared__ mixprec::bfloat16 tile[32];  // trivial default construction: allowed in __shared__
  if (i >= n) return;
  tile[threadIdx.x % 32] = mixprec::bfloat16(in[i]);
  __syncwarp();
  out[i] = exercise_all(in[i], static_cast<unsigned>(i) * 2654435761u) + tile[threadIdx.x % 32].bits();
}

}  // namespace

int main() {
  using namespace mixprec;
  // Host side of the nvcc build: the contract's values.
  int failures = 0;
  failures += float8_e4m3fn(464.f).bits() != 0x7E;
  failures += convert<float16>(65520.f, rounding::toward_zero).bits() != 0x7BFF;
  failures += static_cast<float>(bfloat16(1.5f) * bfloat16(2.0f)) != 3.0f;
  failures += std::numeric_limits<float8_e5m2>::max().bits() != 0x7B;
  volatile unsigned sink = exercise_all(1.2345f, 7u);
  (void)sink;
  (void)&exercise_kernel;
  std::printf("nvcc host pass: %s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
