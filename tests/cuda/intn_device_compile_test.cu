// The narrow integers (intn.hpp, intn_convert.hpp, intn_packing.hpp) in __global__ code:
// construction, every rounding mode, stochastic rounding, arithmetic, limits and packed access.
// main() runs the same __host__ __device__ code on the host and checks its values.
#include <mixprec/intn.hpp>
#include <mixprec/intn_convert.hpp>
#include <mixprec/intn_packing.hpp>

#include <cstdio>

namespace {

template <class T>
__host__ __device__ int exercise(float x, unsigned random) {
  using namespace mixprec;
  int acc = 0;
  const T a(x), b(3);
  acc += a.value() + T(static_cast<double>(x)).value();
  for (int r = 0; r <= static_cast<int>(last_rounding); ++r) acc += convert<T>(x, static_cast<rounding>(r)).value();
  acc += convert<T>(static_cast<double>(x), rounding::to_odd, overflow::saturate).value();
  acc += convert_stochastic<T>(x, random).value();
  acc += (a + b).value() + (a - b).value() + (a * b).value() + (a / b).value() + (a % b).value() + (-a).value();
  acc += (a < b) + (a == b) + (a >= 1);
  acc += static_cast<int>(static_cast<float>(a));
  acc += std::numeric_limits<T>::max().value() + std::numeric_limits<T>::min().value();
  unsigned char packed[2] = {0, 0};
  write_packed<T>(packed, 1, a);
  acc += read_packed<T>(packed, 1).value();
  return acc;
}

// CUDA's vector types int4, uint4, int2, uint2, int1 and uint1 live in the global namespace: with
// `using namespace mixprec` the bare names are ambiguous, so CUDA code spells mixprec::int4.
__host__ __device__ int exercise_all(float x, unsigned random) {
  namespace mp = mixprec;
  return exercise<mp::int4>(x, random) + exercise<mp::uint4>(x, random) + exercise<mp::int2>(x, random) +
         exercise<mp::uint2>(x, random) + exercise<mp::int1>(x, random) + exercise<mp::uint1>(x, random);
}

__global__ void exercise_kernel(const float* in, int* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  __shared__ mixprec::int4 tile[32];  // trivial default construction: allowed in __shared__
  if (i >= n) return;
  tile[threadIdx.x % 32] = mixprec::convert<mixprec::int4>(in[i]);
  __syncwarp();
  out[i] = exercise_all(in[i], static_cast<unsigned>(i) * 2654435761u) + tile[threadIdx.x % 32].value();
}

}  // namespace

int main() {
  using mixprec::convert;
  using mixprec::rounding;
  int failures = 0;
  failures += convert<mixprec::int4>(2.5f).value() != 2;
  failures += convert<mixprec::int4>(-9.7f, rounding::upward).value() != -8;
  failures += mixprec::int4(7.9f).value() != 7;
  failures += (mixprec::int4(7) + mixprec::int4(1)).value() != -8;
  volatile int sink = exercise_all(1.2345f, 7u);
  (void)sink;
  (void)&exercise_kernel;
  std::printf("nvcc host pass: %s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
