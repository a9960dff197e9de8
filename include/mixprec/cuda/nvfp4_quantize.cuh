// NVFP4 quantisation of a device float matrix (issue 16, item 9): the bytes of the host's
// blockscale::nvfp4_quantize (blockscale/nvfp4.hpp), both rules, 1×16 and 16×16 blocks, the
// row-wise and column-wise copies, stochastic rounding and the column-wise random Hadamard
// transform, from the same rule functions (nvfp4_rules.hpp, hadamard.hpp, detail/philox.hpp).
//
//   mixprec::blockscale::nvfp4_options o;
//   o.columnwise = true;
//   mixprec::gpu::nvfp4_device_tensor t(rows, cols, o);        // device memory (cudaMalloc)
//   mixprec::gpu::nvfp4_quantize(a, lda, t, o, stream);        // a: device, row-major
//   mixprec::blockscale::nvfp4_tensor h = t.to_host(stream);   // waits for the stream
//
// Or, with memory of one's own, the launcher on device pointers (nvfp4_device_copy: the layout of
// blockscale::nvfp4_matrix) and a workspace of nvfp4_workspace_words(rows, cols) 32-bit words.
//
// Two passes, as the host: (1) the matrix's amax (and, with 16×16 tiles, each tile's; with the
// transform, the transform's), one thread block per 16×16 tile, atomicMax on magnitude bits;
// (2) one thread per block of 16 of a copy: its amax, ue4m3 scale, 16 codes packed into 8 bytes.
// Every launch is asynchronous on the stream and allocation-free: graph-capturable.
// docs/cuda.md ("NVFP4 and fp8 block quantisers on the device") says what is bit for bit the host's
// and why.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "../blockscale/nvfp4.hpp"
#include "detail/block_kernel_support.cuh"
#include "detail/device_allocation.cuh"

namespace mixprec::gpu {

// Where one copy goes in device memory, as blockscale::nvfp4_matrix lays it out: block j of line l
// at data + (l · blocks_per_line + j) · 8 (8-byte aligned) and scales[l · blocks_per_line + j] (a
// ue4m3 code); tensor_floats: the copy's amax, tensor_scale and decode_scale, 3 floats.
struct nvfp4_device_copy {
  unsigned char* data = nullptr;
  unsigned char* scales = nullptr;
  float* tensor_floats = nullptr;
};

// The 16×16 tiles of a rows × cols matrix, and the workspace nvfp4_quantize needs (32-bit words).
inline std::size_t nvfp4_tile_count(std::size_t rows, std::size_t cols) noexcept {
  constexpr std::size_t b = blockscale::nvfp4_block_size;
  return ((rows + b - 1) / b) * ((cols + b - 1) / b);
}
inline std::size_t nvfp4_workspace_words(std::size_t rows, std::size_t cols) noexcept {
  return 2 + 2 * nvfp4_tile_count(rows, cols);
}

namespace detail {

constexpr unsigned nvfp4_threads = 256;
constexpr std::size_t nvfp4_packed_bytes = blockscale::nvfp4_block_size / 2;

// A block's 16 e2m1 codes packed into 8 bytes, element 2k in the low nibble of byte k: the layout
// of mx/packing.hpp's pack_codes<4>, which the host quantiser packs with.
MIXPREC_HOST_DEVICE inline void nvfp4_pack_block(const unsigned char (&codes)[blockscale::nvfp4_block_size],
                                                 unsigned char (&packed)[nvfp4_packed_bytes]) noexcept {
  for (std::size_t k = 0; k < nvfp4_packed_bytes; ++k) {
    packed[k] = static_cast<unsigned char>((codes[2 * k] & 0xFu) | (codes[2 * k + 1] & 0xFu) << 4);
  }
}

// Pass 1.  One thread block per 16×16 tile (thread t: row t / 16, column t % 16): the matrix's
// largest magnitude bits into global[0]; with the transform, the transform's into global[1] (the
// tile's 16 column chunks transformed by 16 threads, as nvfp4_rht_amax_bits); with record_tiles,
// each tile's into tiles[t] (and the transform's into tiles[tile_count + t]).  (Kernels in a header
// are templates, so that every translation unit may instantiate them.)
template <bool Rht>
__global__ void __launch_bounds__(nvfp4_threads)
    nvfp4_amax_kernel(const float* __restrict__ a, std::size_t rows, std::size_t cols, std::size_t lda,
                      std::uint64_t tiles_across, std::uint64_t tile_count, std::uint32_t negative, bool record_tiles,
                      std::uint32_t* __restrict__ global, std::uint32_t* __restrict__ tiles) {
  constexpr unsigned b = blockscale::nvfp4_block_size;
  __shared__ float tile[b][b + 1];
  const unsigned rr = threadIdx.x / b, cc = threadIdx.x % b;
  std::uint32_t raw = 0, transformed = 0;
  for (std::uint64_t t = blockIdx.x; t < tile_count; t += gridDim.x) {
    const std::size_t r0 = (t / tiles_across) * b, c0 = (t % tiles_across) * b;
    const bool inside = r0 + rr < rows && c0 + cc < cols;
    const float x = inside ? a[(r0 + rr) * lda + c0 + cc] : 0.0f;
    std::uint32_t tile_raw = inside ? blockscale::nvfp4_magnitude_bits(x) : 0u;
    std::uint32_t tile_transformed = 0;
    if constexpr (Rht) {  // rows is a multiple of 16: every row of the tile is inside
      tile[rr][cc] = x;
      __syncthreads();
      if (threadIdx.x < b && c0 + threadIdx.x < cols) {
        float v[b];
        for (unsigned i = 0; i < b; ++i) v[i] = tile[i][threadIdx.x];
        blockscale::detail::rht16(v, negative);
        for (const float y : v) tile_transformed = max(tile_transformed, blockscale::nvfp4_magnitude_bits(y));
      }
      __syncthreads();  // the tile is read before the next one is written
    }
    if (record_tiles) {
      tile_raw = block_max_bits(tile_raw);
      if (Rht) tile_transformed = block_max_bits(tile_transformed);
      if (threadIdx.x == 0) {
        tiles[t] = tile_raw;
        if (Rht) tiles[tile_count + t] = tile_transformed;
      }
    }
    raw = max(raw, tile_raw);
    transformed = max(transformed, tile_transformed);
  }
  raw = block_max_bits(raw);
  transformed = block_max_bits(transformed);
  if (threadIdx.x == 0) {
    if (raw != 0) atomicMax(&global[0], raw);
    if (transformed != 0) atomicMax(&global[1], transformed);
  }
}

// What pass 2 quantises: one copy.
struct nvfp4_copy_job {
  const float* a;
  std::size_t rows, cols, lda;
  bool columnwise;
  std::uint32_t negative;
  blockscale::nvfp4_rule rule;
  const std::uint32_t* amax_bits;  // the copy's amax (pass 1)
  const std::uint32_t* tile_amax;  // its 16×16 tiles' (row-major over the tiles), or null for 1×16
  std::uint64_t tiles_across;
  block_stochastic_rounding stochastic;
  nvfp4_device_copy out;
};

// Pass 2: blockscale::detail::nvfp4_quantize_lines, one thread per block of 16.  The per-tensor
// floats come from the rule functions, NaN results as the host's (quotient_like_host); the
// elements' x · e (TE) and x / fl(p · s) (torchao) are multiply_like_host and divide_like_host, the
// host's operations with its NaNs.  Consecutive threads take consecutive lines of a column-wise
// copy (consecutive columns: coalesced reads) and consecutive blocks of a row-wise line.
template <bool Rht>
__global__ void __launch_bounds__(nvfp4_threads) nvfp4_blocks_kernel(nvfp4_copy_job job) {
  namespace bs = blockscale;
  constexpr std::size_t b = bs::nvfp4_block_size;
  const bool te = job.rule == bs::nvfp4_rule::transformer_engine;
  const float amax = bit_cast<float>(*job.amax_bits);
  float tensor_scale = 0.0f, decode_scale = 0.0f;
  if (te) {
    tensor_scale = bs::te_nvfp4_encode_scale(amax);
    decode_scale = divide_like_host(1.0f, tensor_scale);
  } else {
    tensor_scale = quotient_like_host(amax, bs::detail::nvfp4_range, bs::torchao_nvfp4_tensor_scale(amax));
    decode_scale = tensor_scale;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    job.out.tensor_floats[0] = amax;
    job.out.tensor_floats[1] = tensor_scale;
    job.out.tensor_floats[2] = decode_scale;
  }
  const float multiplier = bs::te_nvfp4_block_multiplier(tensor_scale);
  const std::size_t lines = job.columnwise ? job.cols : job.rows, length = job.columnwise ? job.rows : job.cols;
  const std::size_t per_line = (length + b - 1) / b;
  const std::uint64_t total = static_cast<std::uint64_t>(lines) * per_line;
  const std::uint64_t index_base = job.columnwise ? static_cast<std::uint64_t>(job.rows) * job.cols : 0;
  const block_stochastic_rounding& sr = job.stochastic;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t w = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; w < total; w += stride) {
    const std::size_t line = job.columnwise ? w % lines : w / per_line;
    const std::size_t j = job.columnwise ? w / lines : w % per_line;
    const std::size_t p0 = j * b, p1 = p0 + b < length ? p0 + b : length;
    float x[b];
    for (std::size_t p = 0; p < b; ++p) {
      const std::size_t at = p0 + p;
      x[p] = at >= p1 ? 0.0f : job.columnwise ? job.a[at * job.lda + line] : job.a[line * job.lda + at];
    }
    if constexpr (Rht) bs::detail::rht16(x, job.negative);
    std::uint32_t amax_bits = 0;
    for (const float v : x) amax_bits = max(amax_bits, bs::nvfp4_magnitude_bits(v));
    if (job.tile_amax != nullptr) {
      const std::size_t tile_row = job.columnwise ? j : line / b, tile_col = job.columnwise ? line / b : j;
      amax_bits = job.tile_amax[tile_row * job.tiles_across + tile_col];
    }
    const float block_amax = bit_cast<float>(amax_bits);
    const float8_ue4m3 s =
        te ? bs::te_nvfp4_block_scale(block_amax, multiplier) : bs::torchao_nvfp4_block_scale(block_amax, tensor_scale);
    const float factor =
        te ? bs::te_nvfp4_element_multiplier(s, decode_scale) : bs::torchao_nvfp4_block_divisor(s, tensor_scale);
    const bool nan_scale = s.bits() == bs::detail::ue4m3_nan_code;
    unsigned char codes[b];
    for (std::size_t p = 0; p < b; ++p) {
      codes[p] = 0;
      if (nan_scale || p0 + p >= p1) continue;
      const float scaled = te ? multiply_like_host(x[p], factor) : divide_like_host(x[p], factor);
      std::uint32_t word = 0;
      if (sr.enabled) {
        const std::uint64_t r = job.columnwise ? p0 + p : line, c = job.columnwise ? line : p0 + p;
        word = sr.word(index_base + (job.columnwise ? c * job.rows + r : r * job.cols + c));
      }
      codes[p] = bs::nvfp4_element_code(scaled, sr.enabled, word);
    }
    const std::uint64_t block = static_cast<std::uint64_t>(line) * per_line + j;
    unsigned char packed[nvfp4_packed_bytes];
    mixprec::detail::pack_codes<4>(codes, b, packed);
    ::uint2 word;
    std::memcpy(&word, packed, sizeof word);
    reinterpret_cast<::uint2*>(job.out.data)[block] = word;
    job.out.scales[block] = s.bits();
  }
}

inline void check_nvfp4_destination(const char* copy, const nvfp4_device_copy* d, std::size_t blocks) {
  const char* function = "gpu::nvfp4_quantize";
  if (d == nullptr || d->tensor_floats == nullptr) {
    throw invalid_argument(std::string(function) + ": the options ask for the " + copy +
                           " copy and its destination (or its tensor_floats) is null");
  }
  if (blocks != 0 && (d->data == nullptr || d->scales == nullptr)) {
    throw invalid_argument(std::string(function) + ": the " + copy + " copy's " +
                           (d->data == nullptr ? "data" : "scales") + " pointer is null for " + std::to_string(blocks) +
                           " blocks");
  }
  if (reinterpret_cast<std::uintptr_t>(d->data) % nvfp4_packed_bytes != 0) {
    throw invalid_argument(std::string(function) + ": the " + copy +
                           " copy's data pointer is not 8-byte aligned (each block is stored as 8 bytes)");
  }
}

}  // namespace detail

// Quantises the rows × cols device matrix a (row-major, leading dimension lda) into the copies the
// options ask for: rowwise and columnwise point to their destinations (one that is not asked for
// may be null); workspace: nvfp4_workspace_words(rows, cols) words of device memory, overwritten.
// Every argument is checked, invalid_argument thrown, before any CUDA call.
inline void nvfp4_quantize(const float* a, std::size_t rows, std::size_t cols, std::size_t lda,
                           const nvfp4_device_copy* rowwise, const nvfp4_device_copy* columnwise,
                           std::uint32_t* workspace, const blockscale::nvfp4_options& options = {},
                           cudaStream_t stream = nullptr) {
  namespace bs = blockscale;
  const char* function = "gpu::nvfp4_quantize";
  mixprec::detail::check_mx_arguments(function, a, rows, cols, lda);
  bs::detail::check_nvfp4_options(options);
  const bool rht = options.columnwise && options.columnwise_rht.enabled;
  if (rht && rows % bs::hadamard_size != 0) {
    throw invalid_argument(std::string(function) +
                           ": columnwise_rht transforms each column in chunks of 16 rows; rows = " +
                           std::to_string(rows) + " is not a multiple of 16");
  }
  constexpr std::size_t b = bs::nvfp4_block_size;
  if (options.rowwise) detail::check_nvfp4_destination("rowwise", rowwise, rows * ((cols + b - 1) / b));
  if (options.columnwise) detail::check_nvfp4_destination("columnwise", columnwise, cols * ((rows + b - 1) / b));
  if (workspace == nullptr) {
    throw invalid_argument(std::string(function) + ": null workspace (device memory for nvfp4_workspace_words(" +
                           std::to_string(rows) + ", " + std::to_string(cols) +
                           ") = " + std::to_string(nvfp4_workspace_words(rows, cols)) + " words)");
  }
  const std::uint32_t negative = rht ? bs::detail::rht_negative_mask(function, options.columnwise_rht.signs) : 0u;

  const std::size_t tiles_across = (cols + b - 1) / b, tile_count = nvfp4_tile_count(rows, cols);
  const bool square = options.tile == bs::nvfp4_tile::square_16;
  const int multiprocessors = current_device(function).multiprocessors;
  detail::check(cudaMemsetAsync(workspace, 0, 2 * sizeof(std::uint32_t), stream), function,
                "cudaMemsetAsync(workspace)");
  if (tile_count != 0) {
    const unsigned grid = detail::grid_blocks(tile_count, 1, multiprocessors);
    if (rht) {
      detail::nvfp4_amax_kernel<true><<<grid, detail::nvfp4_threads, 0, stream>>>(
          a, rows, cols, lda, tiles_across, tile_count, negative, square, workspace, workspace + 2);
    } else {
      detail::nvfp4_amax_kernel<false><<<grid, detail::nvfp4_threads, 0, stream>>>(
          a, rows, cols, lda, tiles_across, tile_count, negative, square, workspace, workspace + 2);
    }
    detail::check_launch(function);
  }
  const auto quantize_copy = [&](bool by_columns, const nvfp4_device_copy& out) {
    const bool transformed = by_columns && rht;
    detail::nvfp4_copy_job job{a,
                               rows,
                               cols,
                               lda,
                               by_columns,
                               negative,
                               options.rule,
                               workspace + (transformed ? 1 : 0),
                               square ? workspace + 2 + (transformed ? tile_count : 0) : nullptr,
                               tiles_across,
                               options.stochastic,
                               out};
    const std::size_t lines = by_columns ? cols : rows, length = by_columns ? rows : cols;
    const std::uint64_t blocks = static_cast<std::uint64_t>(lines) * ((length + b - 1) / b);
    const unsigned grid = detail::grid_blocks(blocks, detail::nvfp4_threads, multiprocessors);
    if (transformed) {
      detail::nvfp4_blocks_kernel<true><<<grid, detail::nvfp4_threads, 0, stream>>>(job);
    } else {
      detail::nvfp4_blocks_kernel<false><<<grid, detail::nvfp4_threads, 0, stream>>>(job);
    }
    detail::check_launch(function);
  };
  if (options.rowwise) quantize_copy(false, *rowwise);
  if (options.columnwise) quantize_copy(true, *columnwise);
}

// Device memory for the copies of one rows × cols matrix (those the options ask for) and the
// workspace, allocated (and zeroed) once; nvfp4_quantize into it from step to step allocates
// nothing.  to_host() reads what the last nvfp4_quantize wrote back into the host's containers.
class nvfp4_device_tensor {
 public:
  nvfp4_device_tensor(std::size_t rows, std::size_t cols, const blockscale::nvfp4_options& options = {})
      : rows_(rows), cols_(cols), rowwise_(options.rowwise), columnwise_(options.columnwise) {
    blockscale::detail::check_nvfp4_options(options);
    if (rows != 0 && cols > mixprec::detail::max_array_elements(sizeof(float)) / rows) {
      throw invalid_argument("gpu::nvfp4_device_tensor: " + std::to_string(rows) + " × " + std::to_string(cols) +
                             " elements do not fit in memory");
    }
    const std::size_t row_blocks = blocks(false), column_blocks = blocks(true);
    const std::size_t workspace_bytes = nvfp4_workspace_words(rows, cols) * sizeof(std::uint32_t);
    // [6 floats][workspace][row data][column data][row scales][column scales]: the data 8-aligned.
    const std::size_t floats_bytes = 8 * sizeof(float);
    memory_ = detail::device_allocation(
        floats_bytes + workspace_bytes + (row_blocks + column_blocks) * (detail::nvfp4_packed_bytes + 1),
        "gpu::nvfp4_device_tensor");
    unsigned char* p = memory_.bytes();
    float* floats = reinterpret_cast<float*>(p);
    workspace_ = reinterpret_cast<std::uint32_t*>(p + floats_bytes);
    p += floats_bytes + workspace_bytes;  // 32 + 8 · (1 + tiles) bytes: the data starts 8-aligned
    row_.data = p;
    column_.data = p + row_blocks * detail::nvfp4_packed_bytes;
    row_.scales = column_.data + column_blocks * detail::nvfp4_packed_bytes;
    column_.scales = row_.scales + row_blocks;
    row_.tensor_floats = floats;
    column_.tensor_floats = floats + 3;
  }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  bool has_rowwise() const noexcept { return rowwise_; }
  bool has_columnwise() const noexcept { return columnwise_; }
  // The copies' device arrays (null pointers for a copy the tensor does not hold) and the workspace.
  nvfp4_device_copy rowwise() const noexcept { return rowwise_ ? row_ : nvfp4_device_copy{}; }
  nvfp4_device_copy columnwise() const noexcept { return columnwise_ ? column_ : nvfp4_device_copy{}; }
  std::uint32_t* workspace() const noexcept { return workspace_; }

  // The copies as blockscale::nvfp4_quantize returns them, read back after the stream's work
  // (cudaStreamSynchronize): those the last nvfp4_quantize wrote (before any, every copy the tensor
  // holds, zero), with its rule and transform.
  blockscale::nvfp4_tensor to_host(cudaStream_t stream = nullptr) const {
    const char* function = "gpu::nvfp4_device_tensor::to_host";
    detail::check(cudaStreamSynchronize(stream), function, "cudaStreamSynchronize");
    float floats[6] = {};
    detail::check(cudaMemcpy(floats, row_.tensor_floats, sizeof floats, cudaMemcpyDeviceToHost), function,
                  "cudaMemcpy");
    blockscale::nvfp4_tensor t;
    t.rows = rows_;
    t.cols = cols_;
    const auto read = [&](bool by_columns, const nvfp4_device_copy& d) {
      blockscale::nvfp4_matrix m(rows_, cols_, by_columns, rule_, by_columns && transformed_);
      const std::size_t n = blocks(by_columns);
      if (n != 0) {
        detail::check(cudaMemcpy(m.block_data(0, 0), d.data, n * detail::nvfp4_packed_bytes, cudaMemcpyDeviceToHost),
                      function, "cudaMemcpy");
        static_assert(sizeof(float8_ue4m3) == 1, "a ue4m3 scale is one byte");
        detail::check(cudaMemcpy(&m.scale(0, 0), d.scales, n, cudaMemcpyDeviceToHost), function, "cudaMemcpy");
      }
      const float* f = floats + (by_columns ? 3 : 0);
      m.set_tensor_scale(f[0], f[1], f[2]);
      return m;
    };
    if (written_rowwise_) t.rowwise = read(false, row_);
    if (written_columnwise_) t.columnwise = read(true, column_);
    return t;
  }

 private:
  friend void nvfp4_quantize(const float*, std::size_t, nvfp4_device_tensor&, const blockscale::nvfp4_options&,
                             cudaStream_t);
  std::size_t blocks(bool by_columns) const noexcept {
    if (!(by_columns ? columnwise_ : rowwise_)) return 0;
    constexpr std::size_t b = blockscale::nvfp4_block_size;
    return by_columns ? cols_ * ((rows_ + b - 1) / b) : rows_ * ((cols_ + b - 1) / b);
  }

  std::size_t rows_, cols_;
  bool rowwise_, columnwise_;
  blockscale::nvfp4_rule rule_ = blockscale::nvfp4_rule::transformer_engine;
  bool transformed_ = false;
  bool written_rowwise_ = rowwise_, written_columnwise_ = columnwise_;
  detail::device_allocation memory_;
  std::uint32_t* workspace_ = nullptr;
  nvfp4_device_copy row_, column_;
};

// nvfp4_quantize into t, whose shape is the input's; the options may ask only for copies t holds.
inline void nvfp4_quantize(const float* a, std::size_t lda, nvfp4_device_tensor& t,
                           const blockscale::nvfp4_options& options = {}, cudaStream_t stream = nullptr) {
  const nvfp4_device_copy row = t.rowwise(), column = t.columnwise();
  nvfp4_quantize(a, t.rows(), t.cols(), lda, t.has_rowwise() ? &row : nullptr, t.has_columnwise() ? &column : nullptr,
                 t.workspace(), options, stream);
  t.rule_ = options.rule;
  t.transformed_ = options.columnwise && options.columnwise_rht.enabled;
  t.written_rowwise_ = options.rowwise;
  t.written_columnwise_ = options.columnwise;
}

}  // namespace mixprec::gpu
