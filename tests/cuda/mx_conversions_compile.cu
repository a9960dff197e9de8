// The conversion paths of the sm_100 family (cvt to e8m0, fp6, fp4: cuda/convert.cuh), compiled
// for sm_100a, the only architecture with those instructions that this toolkit targets.  Compile
// only: CI has no such GPU, and the default architectures (80, 89, 90) take the generic paths.
#include <mixprec/cuda/convert.cuh>

namespace {

template <class T>
__global__ void encode_and_decode(const float* in, T* out, float* back, mixprec::rounding r, mixprec::overflow o) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  T a, b;
  mixprec::gpu::convert_pair(in[2 * i], in[2 * i + 1], a, b, r, o);
  out[2 * i] = mixprec::gpu::convert<T>(in[2 * i], r, o);
  out[2 * i + 1] = b;
  back[i] = mixprec::gpu::to_float(a);
}

}  // namespace

void instantiate_mx_conversions() {
  static_cast<void>(&encode_and_decode<mixprec::float8_e8m0fnu>);
  static_cast<void>(&encode_and_decode<mixprec::float6_e2m3fn>);
  static_cast<void>(&encode_and_decode<mixprec::float6_e3m2fn>);
  static_cast<void>(&encode_and_decode<mixprec::float4_e2m1fn>);
  static_cast<void>(&encode_and_decode<mixprec::float8_e4m3fn>);
}
