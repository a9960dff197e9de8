// Device side of the GEMM tests: gpu::gemm and gpu::cublaslt_gemm on host matrices.
#include <mixprec/cuda/gemm.cuh>
#include <mixprec/cuda/gemm_cublaslt.cuh>

#include "device_memory.cuh"
#include "gpu_runs.hpp"

using namespace mixprec;

namespace gpu_runs {

template <class TA, class TB>
void gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const std::vector<TA>& A, std::size_t lda,
          const std::vector<TB>& B, std::size_t ldb, float beta, std::vector<float>& C, std::size_t ldc, float scale_a,
          float scale_b, gemm_path path, gemm_path* used) {
  device_array<TA> d_a(A);
  device_array<TB> d_b(B);
  device_array<float> d_c(C), d_sa(std::vector<float>{scale_a}), d_sb(std::vector<float>{scale_b});
  gpu::gemm_scales scales;
  if (scale_a != 1.0f) scales.a = d_sa.get();
  if (scale_b != 1.0f) scales.b = d_sb.get();
  if (path == gemm_path::own_kernel) {
    gpu::gemm(M, N, K, alpha, d_a.get(), lda, d_b.get(), ldb, beta, d_c.get(), ldc, nullptr, scales);
    *used = gemm_path::own_kernel;
  } else {
    gpu::cublaslt_gemm blas(std::size_t{32} << 20, K * N);
    const gpu::gemm_backend backend =
        blas.gemm(M, N, K, alpha, d_a.get(), lda, d_b.get(), ldb, beta, d_c.get(), ldc, nullptr, scales);
    *used = backend == gpu::gemm_backend::cublaslt ? gemm_path::cublaslt : gemm_path::own_kernel;
  }
  C = d_c.download();
}

#define GPU_RUNS_GEMM(TA, TB)                                                                                     \
  template void gemm<TA, TB>(std::size_t, std::size_t, std::size_t, float, const std::vector<TA>&, std::size_t,   \
                             const std::vector<TB>&, std::size_t, float, std::vector<float>&, std::size_t, float, \
                             float, gemm_path, gemm_path*);
GPU_RUNS_GEMM(bfloat16, bfloat16)
GPU_RUNS_GEMM(float16, float16)
GPU_RUNS_GEMM(float8_e4m3fn, float8_e4m3fn)
GPU_RUNS_GEMM(float8_e4m3fn, float8_e5m2)
GPU_RUNS_GEMM(float8_e5m2, float8_e4m3fn)
GPU_RUNS_GEMM(float8_e5m2, float8_e5m2)

}  // namespace gpu_runs
