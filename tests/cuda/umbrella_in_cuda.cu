// The host umbrella inside a .cu file, as a CUDA user includes it: nvcc with -Werror all-warnings
// (and the host compiler with -Wall -Wextra -Werror) must accept every host header, for sm_80 and
// sm_90 (tests/cuda/CMakeLists.txt).  The value types are used in a kernel too.
#include <mixprec/mixprec.hpp>

__global__ void round_through_bfloat16(float* x) { x[0] = static_cast<float>(mixprec::bfloat16(x[0])); }

// A host function that instantiates a bulk conversion and a gemm, as a .cu file of a user would.
void umbrella_host_use(const float* in, mixprec::bfloat16* out, float* c) {
  mixprec::convert_n(in, 4, out);
  mixprec::gemm(2, 2, 2, 1.0f, out, 2, out, 2, 0.0f, c, 2);
}
