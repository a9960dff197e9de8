// The production GEMM: gpu::gemm's call (cuda/gemm.cuh) on cuBLASLt, NVIDIA's tuned kernels
// (wgmma and TMA on sm_90, which an mma.sync kernel cannot match), falling back to mixprec's own
// tensor-core kernel for what cuBLASLt does not offer.  Needs the cuBLASLt library: link
// mixprec::cuda_cublaslt (CMake) instead of mixprec::cuda.
//
//   mixprec::gpu::cublaslt_gemm blas;                  // a handle and a workspace (allocates)
//   blas.gemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream, scales);   // -> gemm_backend
//
// Same arguments, same meaning, same checks as gpu::gemm (row-major, C = alpha·A·B + beta·C in
// float).  How the row-major product maps onto cuBLASLt's column-major one: C^T = B^T · A^T, so
// cuBLASLt's "A" is our B and its "B" is our A, with m = N, n = M.  fp8 needs cuBLASLt's "TN"
// layout on sm_89 / sm_90 (its A transposed, i.e. K contiguous): our B (N contiguous) is first
// transposed into a buffer of the object's (fp8_transpose_bytes at construction, K × N bytes
// needed).  It falls back to the own kernel, and says so in the returned gemm_backend, where:
// K is 0; an fp8 B does not fit the transpose buffer; or cuBLASLt's heuristic offers no algorithm
// (e5m2 × e5m2, which cuBLASLt does not support; misaligned operands).  All of it is decided on
// the host without synchronising: the call stays graph-capturable.  Construction allocates
// (cudaMalloc): create the object before capturing.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "gemm.cuh"
#include "runtime.cuh"

namespace mixprec::gpu {

enum class gemm_backend { cublaslt, tensor_core_kernel };

namespace detail {

inline void check_cublas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw cuda_error(
      call_failure("gpu::cublaslt_gemm", call, cublasLtGetStatusName(status), cublasLtGetStatusString(status)));
}

template <class T>
constexpr cudaDataType_t cuda_data_type() {
  if constexpr (std::is_same<T, bfloat16>::value) {
    return CUDA_R_16BF;
  } else if constexpr (std::is_same<T, float16>::value) {
    return CUDA_R_16F;
  } else if constexpr (std::is_same<T, float8_e4m3fn>::value) {
    return CUDA_R_8F_E4M3;
  } else {
    return CUDA_R_8F_E5M2;
  }
}

// out[n * K + k] = in[k * ld + n]: a K × N row-major byte matrix to N × K (K contiguous), by
// 32 × 32 tiles through shared memory (coalesced on both sides).
template <int = 0>
__global__ void transpose_bytes_kernel(const unsigned char* in, long long ld, unsigned char* out, long long K,
                                       long long N) {
  __shared__ unsigned char tile[32][33];
  const long long k0 = static_cast<long long>(blockIdx.y) * 32, n0 = static_cast<long long>(blockIdx.x) * 32;
  for (int r = static_cast<int>(threadIdx.y); r < 32; r += static_cast<int>(blockDim.y)) {
    const long long k = k0 + r, n = n0 + threadIdx.x;
    if (k < K && n < N) tile[r][threadIdx.x] = in[k * ld + n];
  }
  __syncthreads();
  for (int r = static_cast<int>(threadIdx.y); r < 32; r += static_cast<int>(blockDim.y)) {
    const long long n = n0 + r, k = k0 + threadIdx.x;
    if (k < K && n < N) out[n * K + k] = tile[threadIdx.x][r];
  }
}

// Owners of cuBLASLt descriptors, destroyed on every path.
struct matmul_descriptor {
  cublasLtMatmulDesc_t value = nullptr;
  ~matmul_descriptor() {
    if (value != nullptr) static_cast<void>(cublasLtMatmulDescDestroy(value));
  }
};
struct layout_descriptor {
  cublasLtMatrixLayout_t value = nullptr;
  ~layout_descriptor() {
    if (value != nullptr) static_cast<void>(cublasLtMatrixLayoutDestroy(value));
  }
};
struct preference_descriptor {
  cublasLtMatmulPreference_t value = nullptr;
  ~preference_descriptor() {
    if (value != nullptr) static_cast<void>(cublasLtMatmulPreferenceDestroy(value));
  }
};

}  // namespace detail

class cublaslt_gemm {
 public:
  explicit cublaslt_gemm(std::size_t workspace_bytes = std::size_t{32} << 20, std::size_t fp8_transpose_bytes = 0)
      : workspace_bytes_(workspace_bytes), transpose_bytes_(fp8_transpose_bytes) {
    detail::check_cublas(cublasLtCreate(&handle_), "cublasLtCreate");
    try {
      if (workspace_bytes_ > 0) {
        detail::check(cudaMalloc(&workspace_, workspace_bytes_), "gpu::cublaslt_gemm", "cudaMalloc (workspace)");
      }
      if (transpose_bytes_ > 0) {
        detail::check(cudaMalloc(&transposed_, transpose_bytes_), "gpu::cublaslt_gemm", "cudaMalloc (fp8 transpose)");
      }
    } catch (...) {
      release();
      throw;
    }
  }
  cublaslt_gemm(const cublaslt_gemm&) = delete;
  cublaslt_gemm& operator=(const cublaslt_gemm&) = delete;
  cublaslt_gemm(cublaslt_gemm&& other) noexcept { *this = std::move(other); }
  cublaslt_gemm& operator=(cublaslt_gemm&& other) noexcept {
    if (this != &other) {
      release();
      handle_ = std::exchange(other.handle_, nullptr);
      workspace_ = std::exchange(other.workspace_, nullptr);
      transposed_ = std::exchange(other.transposed_, nullptr);
      workspace_bytes_ = std::exchange(other.workspace_bytes_, 0);
      transpose_bytes_ = std::exchange(other.transpose_bytes_, 0);
    }
    return *this;
  }
  ~cublaslt_gemm() { release(); }

  template <class TA, class TB>
  gemm_backend gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const TA* A, std::size_t lda, const TB* B,
                    std::size_t ldb, float beta, float* C, std::size_t ldc, cudaStream_t stream = nullptr,
                    gemm_scales scales = {}) {
    static_assert(detail::gemm_pair_supported<TA, TB>,
                  "gpu::cublaslt_gemm multiplies bfloat16 × bfloat16, float16 × float16, or two fp8 types");
    constexpr bool eight_bit = sizeof(TA) == 1;
    static_cast<void>(detail::checked_gemm_operands("gpu::cublaslt_gemm", M, N, K, A, lda, B, ldb, C, ldc));
    if (M == 0 || N == 0) return gemm_backend::cublaslt;
    const auto own_kernel = [&] {
      gpu::gemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream, scales);
      return gemm_backend::tensor_core_kernel;
    };
    // The transpose's grid has ceil(K / 32) rows, at most 65535.
    if (K == 0 || (eight_bit && (K * N > transpose_bytes_ || K > std::size_t{65535} * 32))) return own_kernel();

    // cuBLASLt's column-major D (m = N, n = M) = op(X) · op(Y): X is our B, Y our A.
    const auto m = static_cast<std::uint64_t>(N), n = static_cast<std::uint64_t>(M), k = static_cast<std::uint64_t>(K);
    detail::matmul_descriptor operation;
    detail::check_cublas(cublasLtMatmulDescCreate(&operation.value, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                         "cublasLtMatmulDescCreate");
    const cublasOperation_t op_x = eight_bit ? CUBLAS_OP_T : CUBLAS_OP_N, op_y = CUBLAS_OP_N;
    set(operation.value, CUBLASLT_MATMUL_DESC_TRANSA, op_x);
    set(operation.value, CUBLASLT_MATMUL_DESC_TRANSB, op_y);
    if (eight_bit && scales.b != nullptr) set(operation.value, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales.b);
    if (eight_bit && scales.a != nullptr) set(operation.value, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scales.a);
    detail::layout_descriptor x_layout, y_layout, c_layout;
    // X: 16-bit, B as stored (column-major N × K, ld = ldb); 8-bit, the transposed copy
    // (column-major K × N, ld = K), used transposed.
    if constexpr (eight_bit) {
      detail::check_cublas(cublasLtMatrixLayoutCreate(&x_layout.value, detail::cuda_data_type<TB>(), k, m, k),
                           "cublasLtMatrixLayoutCreate (B)");
    } else {
      detail::check_cublas(cublasLtMatrixLayoutCreate(&x_layout.value, detail::cuda_data_type<TB>(), m, k, ldb),
                           "cublasLtMatrixLayoutCreate (B)");
    }
    detail::check_cublas(cublasLtMatrixLayoutCreate(&y_layout.value, detail::cuda_data_type<TA>(), k, n, lda),
                         "cublasLtMatrixLayoutCreate (A)");
    detail::check_cublas(cublasLtMatrixLayoutCreate(&c_layout.value, CUDA_R_32F, m, n, ldc),
                         "cublasLtMatrixLayoutCreate (C)");
    detail::preference_descriptor preference;
    detail::check_cublas(cublasLtMatmulPreferenceCreate(&preference.value), "cublasLtMatmulPreferenceCreate");
    detail::check_cublas(
        cublasLtMatmulPreferenceSetAttribute(preference.value, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_bytes_, sizeof workspace_bytes_),
        "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(handle_, operation.value, x_layout.value, y_layout.value, c_layout.value,
                                       c_layout.value, preference.value, 1, &heuristic, &found);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) return own_kernel();

    const void* x = B;
    if constexpr (eight_bit) {
      const dim3 blocks(static_cast<unsigned>((N + 31) / 32), static_cast<unsigned>((K + 31) / 32)), threads(32, 8);
      detail::transpose_bytes_kernel<><<<blocks, threads, 0, stream>>>(
          reinterpret_cast<const unsigned char*>(B), static_cast<long long>(ldb),
          static_cast<unsigned char*>(transposed_), static_cast<long long>(K), static_cast<long long>(N));
      detail::check_launch("gpu::cublaslt_gemm (fp8 transpose)");
      x = transposed_;
    }
    detail::check_cublas(
        cublasLtMatmul(handle_, operation.value, &alpha, x, x_layout.value, A, y_layout.value, &beta, C, c_layout.value,
                       C, c_layout.value, &heuristic.algo, workspace_, workspace_bytes_, stream),
        "cublasLtMatmul");
    return gemm_backend::cublaslt;
  }

  std::size_t fp8_transpose_capacity() const noexcept { return transpose_bytes_; }

 private:
  template <class Value>
  static void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attribute, const Value& value) {
    detail::check_cublas(cublasLtMatmulDescSetAttribute(d, attribute, &value, sizeof value),
                         "cublasLtMatmulDescSetAttribute");
  }

  void release() noexcept {
    if (transposed_ != nullptr) static_cast<void>(cudaFree(transposed_));
    if (workspace_ != nullptr) static_cast<void>(cudaFree(workspace_));
    if (handle_ != nullptr) static_cast<void>(cublasLtDestroy(handle_));
    transposed_ = workspace_ = nullptr;
    handle_ = nullptr;
  }

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  void* transposed_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::size_t transpose_bytes_ = 0;
};

}  // namespace mixprec::gpu
