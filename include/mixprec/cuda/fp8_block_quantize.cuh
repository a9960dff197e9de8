// fp8 block quantisation of a device matrix (issue 16, item 9): the bytes of the host's
// blockscale::fp8_block_quantize (blockscale/fp8_block.hpp), float8_e4m3fn or float8_e5m2 codes
// from float or bfloat16 input, 1×128 or 128×128 blocks, the three rules (transformer_engine,
// transformer_engine_reference, deepseek_v3), power_2_scales, amax_epsilon and stochastic
// rounding, from the same rule functions (fp8_block_rules.hpp, block_stochastic_rounding.hpp).
//
//   mixprec::gpu::fp8_block_device_matrix<mixprec::float8_e4m3fn> q(rows, cols);  // cudaMalloc
//   mixprec::gpu::fp8_block_quantize(a, lda, q, options, stream);   // a: device, row-major
//   mixprec::blockscale::fp8_block_matrix<mixprec::float8_e4m3fn> h = q.to_host(stream);
//
// Or the launcher on device pointers: codes (rows · cols, row-major) and scale_invs (row-major over
// the block grid), the layout of blockscale::fp8_block_matrix.  One thread block of 128 threads per
// block, thread t on column c0 + t: the block's amax (a block-wide maximum of magnitude bits and
// whether a NaN was seen), its scale, then its codes.  Asynchronous on the stream,
// allocation-free, graph-capturable; docs/cuda.md ("NVFP4 and fp8 block quantisers on the device").
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../blockscale/fp8_block.hpp"
#include "detail/block_kernel_support.cuh"
#include "detail/device_allocation.cuh"

namespace mixprec::gpu {

namespace detail {

constexpr unsigned fp8_block_threads = 128;  // one per column of a block
static_assert(fp8_block_threads == blockscale::fp8_block_size, "thread t quantises column c0 + t of its block");

template <class In>
__device__ inline float fp8_block_input(In x) {
  if constexpr (std::is_same<In, float>::value) {
    return x;
  } else {
    return gpu::to_float(x);  // bfloat16: exact, NaN as the host's static_cast<float>
  }
}

// The host's block amax (blockscale::detail::block_amax) from the block's largest magnitude among
// its non-NaN elements and whether it has a NaN: fmaxf-style rules skip NaNs, so their amax is that
// largest magnitude; transformer_engine_reference's torch.amax gives the host's NaN, 0x7FC00000.
MIXPREC_HOST_DEVICE inline float fp8_block_amax(std::uint32_t largest_non_nan, bool has_nan,
                                                blockscale::fp8_block_rule rule) noexcept {
  if (has_nan && rule == blockscale::fp8_block_rule::transformer_engine_reference) return bit_cast<float>(0x7FC0'0000u);
  return bit_cast<float>(largest_non_nan);
}

struct fp8_block_job {
  std::size_t rows, cols, lda;
  std::size_t height;  // 1 or 128
  std::uint64_t block_cols, blocks;
  blockscale::fp8_block_options options;
  float fp8_max, value_for_inf;
};

template <class T, class In>
__global__ void __launch_bounds__(fp8_block_threads)
    fp8_block_kernel(const In* __restrict__ a, T* __restrict__ codes, float* __restrict__ scale_invs,
                     fp8_block_job job) {
  namespace bs = blockscale;
  const bs::fp8_block_options& o = job.options;
  for (std::uint64_t block = blockIdx.x; block < job.blocks; block += gridDim.x) {
    const std::size_t r0 = (block / job.block_cols) * job.height;
    const std::size_t r1 = r0 + job.height < job.rows ? r0 + job.height : job.rows;
    const std::size_t c = (block % job.block_cols) * bs::fp8_block_size + threadIdx.x;
    const bool inside = c < job.cols;
    std::uint32_t largest = 0;
    bool nan = false;
    for (std::size_t r = r0; inside && r < r1; ++r) {
      const std::uint32_t m = bit_cast<std::uint32_t>(fp8_block_input(a[r * job.lda + c])) & float_magnitude_bits;
      if (m > float_infinity_bits) {
        nan = true;
      } else {
        largest = m > largest ? m : largest;
      }
    }
    largest = block_max_bits(largest);
    nan = __syncthreads_or(nan) != 0;
    const float amax = fp8_block_amax(largest, nan, o.rule);

    // The rule's scale (what the elements are multiplied by, or for deepseek_v3 divided by) and the
    // decode scale kept with the block, as fp8_block_quantize_block_rows computes them.
    const bool divide = o.rule == bs::fp8_block_rule::deepseek_v3;
    float scale = 0.0f, scale_inv = 0.0f;
    if (divide) {
      scale = bs::deepseek_block_scale(amax, job.fp8_max);  // amax has no NaN here: never NaN
      scale_inv = scale;
    } else {
      if (o.rule == bs::fp8_block_rule::transformer_engine) {
        scale = bs::te_block_scale(amax, job.fp8_max, o.power_2_scales, o.amax_epsilon, job.value_for_inf);
      } else {
        // NaN only as fl(fp8_max / amax) for a NaN amax: the host's NaN of that quotient.
        scale = quotient_like_host(
            job.fp8_max, amax,
            bs::te_reference_block_scale(amax, job.fp8_max, o.power_2_scales, o.amax_epsilon, job.value_for_inf));
      }
      scale_inv = divide_like_host(1.0f, scale);
    }
    if (threadIdx.x == 0) scale_invs[block] = scale_inv;

    for (std::size_t r = r0; inside && r < r1; ++r) {
      const float x = fp8_block_input(a[r * job.lda + c]);
      const float scaled = divide ? divide_like_host(x, scale) : multiply_like_host(x, scale);
      const std::size_t at = r * job.cols + c;
      codes[at] = o.stochastic.enabled ? convert_stochastic<T>(scaled, o.stochastic.word(at), overflow::saturate)
                                       : gpu::convert<T>(scaled, rounding::nearest_even, overflow::saturate);
    }
  }
}

}  // namespace detail

// Quantises the rows × cols device matrix a (row-major, leading dimension lda; float or bfloat16)
// into codes (rows · cols, row-major) and scale_invs (one float per block, row-major over the
// block grid: rows or ceil(rows / 128) block rows, ceil(cols / 128) block columns).  Every
// argument is checked, invalid_argument thrown, before any CUDA call.
template <class T, class In>
void fp8_block_quantize(const In* a, std::size_t rows, std::size_t cols, std::size_t lda, T* codes, float* scale_invs,
                        const blockscale::fp8_block_options& options = {}, cudaStream_t stream = nullptr) {
  static_assert(std::is_same<T, float8_e4m3fn>::value || std::is_same<T, float8_e5m2>::value,
                "gpu::fp8_block_quantize stores float8_e4m3fn or float8_e5m2");
  static_assert(std::is_same<In, float>::value || std::is_same<In, bfloat16>::value,
                "gpu::fp8_block_quantize reads float or bfloat16");
  const char* function = "gpu::fp8_block_quantize";
  blockscale::detail::check_fp8_block_options(function, options);
  blockscale::detail::check_float_matrix(function, "input", a, rows, cols, lda, sizeof(In));
  if (rows == 0 || cols == 0) return;
  using matrix = blockscale::fp8_block_matrix<T>;
  const std::size_t height = options.kind == blockscale::fp8_block_kind::row_1x128 ? 1 : blockscale::fp8_block_size;
  const std::uint64_t block_cols = matrix::blocks_over(cols);
  const std::uint64_t blocks = (height == 1 ? rows : matrix::blocks_over(rows)) * block_cols;
  if (codes == nullptr) {
    throw invalid_argument(std::string(function) + ": null codes pointer for " + std::to_string(rows) + " × " +
                           std::to_string(cols) + " elements");
  }
  if (scale_invs == nullptr) {
    throw invalid_argument(std::string(function) + ": null scale_invs pointer for " + std::to_string(blocks) +
                           " blocks");
  }
  const detail::fp8_block_job job{rows,
                                  cols,
                                  lda,
                                  height,
                                  block_cols,
                                  blocks,
                                  options,
                                  mixprec::fp8_max(fp8_element_of<T>()),
                                  blockscale::value_for_inf<In>()};
  const unsigned grid = detail::grid_blocks(blocks, 1, current_device(function).multiprocessors);
  detail::fp8_block_kernel<T, In><<<grid, detail::fp8_block_threads, 0, stream>>>(a, codes, scale_invs, job);
  detail::check_launch(function);
}

// Device memory for the codes and block scales of one rows × cols matrix (either block kind),
// allocated (and zeroed) once; to_host() reads back what the last fp8_block_quantize wrote.
template <class T>
class fp8_block_device_matrix {
  static_assert(std::is_same<T, float8_e4m3fn>::value || std::is_same<T, float8_e5m2>::value,
                "fp8 block scaling stores float8_e4m3fn or float8_e5m2");

 public:
  fp8_block_device_matrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols) {
    if (rows != 0 && cols > mixprec::detail::max_array_elements(sizeof(T)) / rows) {
      throw invalid_argument("gpu::fp8_block_device_matrix: " + std::to_string(rows) + " × " + std::to_string(cols) +
                             " elements do not fit in memory");
    }
    // 1×128 blocks have the larger grid: rows × ceil(cols / 128) scales serve both kinds.
    const std::size_t scale_count = rows * blockscale::fp8_block_matrix<T>::blocks_over(cols);
    memory_ = detail::device_allocation(scale_count * sizeof(float) + rows * cols * sizeof(T),
                                        "gpu::fp8_block_device_matrix");
    scale_invs_ = reinterpret_cast<float*>(memory_.bytes());
    codes_ = reinterpret_cast<T*>(memory_.bytes() + scale_count * sizeof(float));
  }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  T* codes() const noexcept { return codes_; }
  float* scale_invs() const noexcept { return scale_invs_; }

  // The matrix as blockscale::fp8_block_quantize returns it, read back after the stream's work
  // (cudaStreamSynchronize); kind and rule are those of the last fp8_block_quantize.
  blockscale::fp8_block_matrix<T> to_host(cudaStream_t stream = nullptr) const {
    const char* function = "gpu::fp8_block_device_matrix::to_host";
    detail::check(cudaStreamSynchronize(stream), function, "cudaStreamSynchronize");
    blockscale::fp8_block_matrix<T> m(rows_, cols_, kind_, rule_);
    static_assert(sizeof(T) == 1, "an fp8 code is one byte");
    if (rows_ != 0 && cols_ != 0) {
      detail::check(cudaMemcpy(m.data(), codes_, rows_ * cols_, cudaMemcpyDeviceToHost), function, "cudaMemcpy");
      detail::check(cudaMemcpy(m.scale_invs(), scale_invs_, m.block_rows() * m.block_cols() * sizeof(float),
                               cudaMemcpyDeviceToHost),
                    function, "cudaMemcpy");
    }
    return m;
  }

  // What the next to_host() says the matrix holds (fp8_block_quantize sets it).
  void set_blocks(blockscale::fp8_block_kind kind, blockscale::fp8_block_rule rule) noexcept {
    kind_ = kind;
    rule_ = rule;
  }

 private:
  std::size_t rows_, cols_;
  blockscale::fp8_block_kind kind_ = blockscale::fp8_block_kind::row_1x128;
  blockscale::fp8_block_rule rule_ = blockscale::fp8_block_rule::transformer_engine;
  detail::device_allocation memory_;
  float* scale_invs_ = nullptr;
  T* codes_ = nullptr;
};

// fp8_block_quantize into m, whose shape is the input's.
template <class T, class In>
void fp8_block_quantize(const In* a, std::size_t lda, fp8_block_device_matrix<T>& m,
                        const blockscale::fp8_block_options& options = {}, cudaStream_t stream = nullptr) {
  fp8_block_quantize(a, m.rows(), m.cols(), lda, m.codes(), m.scale_invs(), options, stream);
  m.set_blocks(options.kind, options.rule);
}

}  // namespace mixprec::gpu
