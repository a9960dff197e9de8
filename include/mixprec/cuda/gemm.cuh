// Tensor-core matrix product on the GPU, dependency-free (no cuBLAS):
//
//   mixprec::gpu::gemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream, scales)
//
// C = alpha · A · B + beta · C, row-major as the CPU gemm (DESIGN.md): A is M × K (lda), B is K × N
// (ldb), C is M × N float (ldc), all device memory.  Products accumulate in float on the tensor
// cores (mma.sync):
//   bfloat16 × bfloat16, float16 × float16     mma.m16n8k16, sm_80 and newer
//   e4m3 / e5m2 × e4m3 / e5m2 (any pair)       mma.m16n8k32, sm_89 and newer (sm_89, sm_90)
// fp8 inputs take per-tensor dequantisation scales (device pointers, as cuBLASLt's
// A/B_SCALE_POINTER and Transformer Engine's scale_inv): C = alpha · (sa A)(sb B) + beta · C.
// As in BLAS, C is not read when beta is 0.  Accuracy: docs/cuda.md ("GEMM"), with the bound the
// GPU test checks against a float64 reference.
//
// Asynchronous on the stream, no allocation (graph-capturable).  Arguments are checked on the host
// first (detail/gemm_arguments.hpp: invalid_argument naming the value and the limit); an fp8
// product on a device older than sm_89 throws unsupported_device.  cuda/gemm_cublaslt.cuh offers
// the same call on cuBLASLt.  The kernel's layout and its checks on a model of the instructions:
// detail/gemm_layout.hpp, tests/cuda/gemm_layout_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <nv/target>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../types.hpp"
#include "detail/gemm_arguments.hpp"
#include "detail/gemm_layout.hpp"
#include "runtime.cuh"

namespace mixprec::gpu {

// Dequantisation scales of fp8 operands: device pointers to one float each (nullptr: 1).
struct gemm_scales {
  const float* a = nullptr;
  const float* b = nullptr;
};

namespace detail {

template <class T>
struct gemm_input : std::false_type {};
template <>
struct gemm_input<bfloat16> : std::true_type {};
template <>
struct gemm_input<float16> : std::true_type {};
template <>
struct gemm_input<float8_e4m3fn> : std::true_type {};
template <>
struct gemm_input<float8_e5m2> : std::true_type {};

template <class TA, class TB>
constexpr bool gemm_pair_supported = gemm_input<TA>::value&& gemm_input<TB>::value &&
                                     (sizeof(TA) == 1 ? sizeof(TB) == 1 : std::is_same<TA, TB>::value);

template <class TA, class TB>
struct gemm_problem {
  long long M, N, K;
  float alpha, beta;
  const TA* A;
  long long lda;
  const TB* B;
  long long ldb;
  float* C;
  long long ldc;
  const float* a_scale;
  const float* b_scale;
  int tiles_m, tiles_n;
};

__device__ inline std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronously; bytes past src_bytes (0 or 16) are zero-filled.
__device__ inline void copy_async_16(std::uint32_t destination, const void* source, std::uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(destination), "l"(source), "r"(src_bytes)
               : "memory");
}
__device__ inline void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int Pending>
__device__ inline void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

__device__ inline void load_matrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
}
__device__ inline void load_matrix_x4_transposed(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
}

// d += a · b on one 16 × 8 tile (PTX ISA, mma.sync.aligned, .row.col, f32 accumulators).
template <class TA, class TB>
__device__ inline void mma_tile(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
#define MIXPREC_GPU_MMA(shape_and_types)                                            \
  asm volatile("mma.sync.aligned." shape_and_types                                  \
               " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                     \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
  if constexpr (std::is_same<TA, bfloat16>::value) {
    MIXPREC_GPU_MMA("m16n8k16.row.col.f32.bf16.bf16.f32");
  } else if constexpr (std::is_same<TA, float16>::value) {
    MIXPREC_GPU_MMA("m16n8k16.row.col.f32.f16.f16.f32");
  } else {
    NV_IF_ELSE_TARGET(
        NV_PROVIDES_SM_89,
        (
            if constexpr (std::is_same<TA, float8_e4m3fn>::value && std::is_same<TB, float8_e4m3fn>::value) {
              MIXPREC_GPU_MMA("m16n8k32.row.col.f32.e4m3.e4m3.f32");
            } else if constexpr (std::is_same<TA, float8_e4m3fn>::value) {
              MIXPREC_GPU_MMA("m16n8k32.row.col.f32.e4m3.e5m2.f32");
            } else if constexpr (std::is_same<TB, float8_e4m3fn>::value) {
              MIXPREC_GPU_MMA("m16n8k32.row.col.f32.e5m2.e4m3.f32");
            } else { MIXPREC_GPU_MMA("m16n8k32.row.col.f32.e5m2.e5m2.f32"); }),
        (__trap();))  // the launcher refuses fp8 below sm_89
  }
#undef MIXPREC_GPU_MMA
}

// The bytes of one 16-byte chunk of a row, element by element (zero past the matrix).
template <class T>
__device__ inline ::uint4 gather_chunk(const T* row, long long first, long long limit) {
  constexpr int per_chunk = 16 / static_cast<int>(sizeof(T));
  unsigned char bytes[16] = {};
  for (int e = 0; e < per_chunk; ++e) {
    if (first + e < limit) {
      const auto code = row[first + e].bits();
      for (int b = 0; b < static_cast<int>(sizeof(T)); ++b)
        bytes[e * sizeof(T) + b] = static_cast<unsigned char>(code >> (8 * b));
    }
  }
  ::uint4 v;
  memcpy(&v, bytes, 16);
  return v;
}

template <class TA, class TB, bool VectorLoads>
__global__ void __launch_bounds__(gemm_tiling::threads, gemm_tiling::blocks_per_multiprocessor)
    gemm_kernel(gemm_problem<TA, TB> p) {
  using tiling = gemm_tiling;
  constexpr bool eight_bit = sizeof(TA) == 1;
  constexpr int stage_k = tiling::stage_k_bytes / static_cast<int>(sizeof(TA));  // elements of K per stage
  extern __shared__ __align__(128) unsigned char shared[];

  const int thread = static_cast<int>(threadIdx.x), warp = thread / 32, lane = thread % 32;
  const block_tile tile = tile_of_block(blockIdx.x, p.tiles_m, p.tiles_n);
  const long long m0 = static_cast<long long>(tile.row) * tiling::block_m;
  const long long n0 = static_cast<long long>(tile.col) * tiling::block_n;
  const int k_tiles = static_cast<int>((p.K + stage_k - 1) / stage_k);
  const std::uint32_t shared_base = shared_address(shared);
  const auto a_stage = [&](int s) { return s * tiling::stage_bytes; };
  const auto b_stage = [&](int s) { return s * tiling::stage_bytes + tiling::a_stage_bytes; };

  // A, and 16-bit B: 16-byte chunks, by cp.async where rows are aligned.  row is the matrix row
  // the chunk comes from (nullptr past the matrix: zeros), [first, first + 16 bytes) its elements,
  // limit the row's length.
  const auto copy_chunk = [&](int offset, const auto* matrix, const auto* row, long long first, long long limit) {
    if constexpr (VectorLoads) {
      const bool inside = row != nullptr && first < limit;  // rows are whole chunks: in or out
      copy_async_16(shared_base + offset, inside ? static_cast<const void*>(row + first) : matrix, inside ? 16 : 0);
    } else {
      const ::uint4 v = row != nullptr ? gather_chunk(row, first, limit) : ::uint4{0, 0, 0, 0};
      *reinterpret_cast<::uint4*>(shared + offset) = v;
    }
  };
  const auto load_a = [&](int stage, int kt) {
#pragma unroll
    for (int copy = 0; copy < tiling::copies_per_thread; ++copy) {
      const tile_chunk c = kmajor_copy_chunk(thread, copy);
      const long long row = m0 + c.row;
      const long long k = static_cast<long long>(kt) * stage_k + c.chunk * 16 / static_cast<int>(sizeof(TA));
      copy_chunk(a_stage(stage) + kmajor_offset(c.row, c.chunk * 16), p.A, row < p.M ? p.A + row * p.lda : nullptr, k,
                 p.K);
    }
  };
  const auto load_b16 = [&](int stage, int kt) {
#pragma unroll
    for (int copy = 0; copy < tiling::copies_per_thread; ++copy) {
      const tile_chunk c = nmajor_copy_chunk(thread, copy);
      const long long k = static_cast<long long>(kt) * stage_k + c.row;
      copy_chunk(b_stage(stage) + nmajor_offset(c.row, c.chunk * 16), p.B, k < p.K ? p.B + k * p.ldb : nullptr,
                 n0 + c.chunk * 8, p.N);
    }
  };
  // 8-bit B: 4 rows × 8 bytes per thread into registers, transposed into the [n][k] stage.
  std::uint32_t b_rows[2][4] = {};
  const auto fetch_b8 = [&](int kt) {
    const long long k0 = static_cast<long long>(kt) * stage_k + fp8_b_row0(thread), n = n0 + fp8_b_col0(thread);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const long long k = k0 + i;
      if constexpr (VectorLoads) {
        ::uint2 v{0, 0};
        if (k < p.K && n < p.N) v = *reinterpret_cast<const ::uint2*>(p.B + k * p.ldb + n);
        b_rows[0][i] = v.x;
        b_rows[1][i] = v.y;
      } else {
        std::uint32_t words[2] = {0, 0};
        for (int e = 0; e < 8; ++e) {
          if (k < p.K && n + e < p.N)
            words[e / 4] |= static_cast<std::uint32_t>(p.B[k * p.ldb + n + e].bits()) << (8 * (e % 4));
        }
        b_rows[0][i] = words[0];
        b_rows[1][i] = words[1];
      }
    }
  };
  const auto store_b8 = [&](int stage) {
    std::uint32_t words[8];
    const auto permute = [](std::uint32_t x, std::uint32_t y, std::uint32_t s) { return __byte_perm(x, y, s); };
    std::uint32_t low[4], high[4];
    transpose_4x4_bytes(b_rows[0], low, permute);
    transpose_4x4_bytes(b_rows[1], high, permute);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      words[j] = low[j];
      words[4 + j] = high[j];
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int w = fp8_b_store_word(thread, j);
      // words[w] with w = j or j ^ 1: a select, so that the array stays in registers.
      const std::uint32_t word = (w == j) ? words[j] : words[j ^ 1];
      *reinterpret_cast<std::uint32_t*>(shared + b_stage(stage) +
                                        kmajor_offset(fp8_b_col0(thread) + w, fp8_b_row0(thread))) = word;
    }
  };

  float acc[tiling::m_tiles][tiling::n_tiles][4] = {};
  const int row0 = warp_row0(warp), col0 = warp_col0(warp);
  const auto compute = [&](int stage) {
#pragma unroll
    for (int step = 0; step < tiling::steps_per_stage; ++step) {
      std::uint32_t a[tiling::m_tiles][4], b[tiling::n_tiles / 2][4];
#pragma unroll
      for (int mi = 0; mi < tiling::m_tiles; ++mi) {
        load_matrix_x4(a[mi], shared_base + a_stage(stage) + a_fragment_offset(row0, mi, step, lane));
      }
#pragma unroll
      for (int pair = 0; pair < tiling::n_tiles / 2; ++pair) {
        if constexpr (eight_bit) {
          load_matrix_x4(b[pair], shared_base + b_stage(stage) + b_fragment_offset_kmajor(col0, pair, step, lane));
        } else {
          load_matrix_x4_transposed(b[pair],
                                    shared_base + b_stage(stage) + b_fragment_offset_nmajor(col0, pair, step, lane));
        }
      }
#pragma unroll
      for (int mi = 0; mi < tiling::m_tiles; ++mi) {
#pragma unroll
        for (int ni = 0; ni < tiling::n_tiles; ++ni) {
          mma_tile<TA, TB>(acc[mi][ni], a[mi], b[ni / 2][b_register(ni, 0)], b[ni / 2][b_register(ni, 1)]);
        }
      }
    }
  };

  // The pipeline: stages - 1 tiles in flight while one is computed.
  for (int s = 0; s < tiling::stages - 1; ++s) {
    if (s < k_tiles) {
      load_a(s, s);
      if constexpr (eight_bit) {
        fetch_b8(s);
        store_b8(s);
      } else {
        load_b16(s, s);
      }
    }
    copy_async_commit();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    copy_async_wait<tiling::stages - 2>();
    __syncthreads();  // tile kt is in shared memory; every warp is done with tile kt - 1's stage
    const int next = kt + tiling::stages - 1;
    const bool prefetch = next < k_tiles;
    if (prefetch) {
      load_a(next % tiling::stages, next);
      if constexpr (eight_bit) {
        fetch_b8(next);  // global loads in flight during compute
      } else {
        load_b16(next % tiling::stages, next);
      }
    }
    copy_async_commit();
    compute(kt % tiling::stages);
    if constexpr (eight_bit) {
      if (prefetch) store_b8(next % tiling::stages);  // the stage of tile kt - 1, which no warp reads now
    }
  }

  // Epilogue: C = (alpha sa sb) · acc + beta · C.
  float alpha = p.alpha;
  if (p.a_scale != nullptr) alpha *= *p.a_scale;
  if (p.b_scale != nullptr) alpha *= *p.b_scale;
#pragma unroll
  for (int mi = 0; mi < tiling::m_tiles; ++mi) {
#pragma unroll
    for (int ni = 0; ni < tiling::n_tiles; ++ni) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long row = m0 + row0 + accumulator_row(mi, lane, h);
        if (row >= p.M) continue;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const long long col = n0 + col0 + accumulator_col(ni, lane, j);
          if (col >= p.N) continue;
          float* c = p.C + row * p.ldc + col;
          const float product = alpha * acc[mi][ni][2 * h + j];
          *c = p.beta != 0.0f ? fmaf(p.beta, *c, product) : product;
        }
      }
    }
  }
}

template <class T>
constexpr const char* gemm_input_name() {
  if constexpr (std::is_same<T, float8_e4m3fn>::value) {
    return "float8_e4m3fn inputs";
  } else {
    return "float8_e5m2 inputs";
  }
}

}  // namespace detail

template <class TA, class TB>
void gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const TA* A, std::size_t lda, const TB* B,
          std::size_t ldb, float beta, float* C, std::size_t ldc, cudaStream_t stream = nullptr,
          gemm_scales scales = {}) {
  static_assert(detail::gemm_pair_supported<TA, TB>,
                "gpu::gemm multiplies bfloat16 × bfloat16, float16 × float16, or two of float8_e4m3fn / float8_e5m2");
  constexpr const char* function = "gpu::gemm";
  const detail::gemm_operands x = detail::checked_gemm_operands(function, M, N, K, A, lda, B, ldb, C, ldc);
  if (M == 0 || N == 0) return;
  if constexpr (sizeof(TA) == 1) {
    const device_properties device = current_device(function);
    detail::require_capability(function, detail::gemm_input_name<TA>(), 89, device.device, device.capability);
  }
  using tiling = detail::gemm_tiling;
  detail::gemm_problem<TA, TB> problem{static_cast<long long>(M),
                                       static_cast<long long>(N),
                                       static_cast<long long>(K),
                                       alpha,
                                       beta,
                                       A,
                                       static_cast<long long>(lda),
                                       B,
                                       static_cast<long long>(ldb),
                                       C,
                                       static_cast<long long>(ldc),
                                       scales.a,
                                       scales.b,
                                       static_cast<int>((M + tiling::block_m - 1) / tiling::block_m),
                                       static_cast<int>((N + tiling::block_n - 1) / tiling::block_n)};
  const unsigned blocks = static_cast<unsigned>(problem.tiles_m) * static_cast<unsigned>(problem.tiles_n);
  if (detail::gemm_vector_loads(x.a, x.b)) {
    detail::gemm_kernel<TA, TB, true><<<blocks, tiling::threads, tiling::shared_bytes, stream>>>(problem);
  } else {
    detail::gemm_kernel<TA, TB, false><<<blocks, tiling::threads, tiling::shared_bytes, stream>>>(problem);
  }
  detail::check_launch(function);
}

}  // namespace mixprec::gpu
