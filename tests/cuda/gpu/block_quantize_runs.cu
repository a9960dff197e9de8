// Device side of the block quantiser tests: gpu::nvfp4_quantize and gpu::fp8_block_quantize on
// host data, on a stream of their own, read back with to_host().
#include <mixprec/cuda/fp8_block_quantize.cuh>
#include <mixprec/cuda/nvfp4_quantize.cuh>

#include "block_quantize_runs.hpp"
#include "device_memory.cuh"

using namespace mixprec;

namespace gpu_runs {

namespace {

class stream {
 public:
  stream() { check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream() { static_cast<void>(cudaStreamDestroy(s_)); }
  cudaStream_t get() const noexcept { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

template <class In>
std::vector<In> negated(const std::vector<In>& a) {
  std::vector<In> b(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) b[i] = -a[i];
  return b;
}

}  // namespace

blockscale::nvfp4_tensor nvfp4_quantize(const std::vector<float>& a, std::size_t rows, std::size_t cols,
                                        std::size_t lda, const blockscale::nvfp4_options& options, bool reuse) {
  const stream s;
  device_array<float> d_a(a, 1);  // one float past a 256-byte boundary
  gpu::nvfp4_device_tensor t(rows, cols, options);
  if (reuse) {
    blockscale::nvfp4_options other = options;
    other.rule = options.rule == blockscale::nvfp4_rule::torchao ? blockscale::nvfp4_rule::transformer_engine
                                                                 : blockscale::nvfp4_rule::torchao;
    other.stochastic.step += 1;
    device_array<float> d_b(negated(a), 3);
    gpu::nvfp4_quantize(d_b.get(), lda, t, other, s.get());
    check(cudaStreamSynchronize(s.get()), "cudaStreamSynchronize");
  }
  gpu::nvfp4_quantize(d_a.get(), lda, t, options, s.get());
  return t.to_host(s.get());
}

template <class T, class In>
blockscale::fp8_block_matrix<T> fp8_block_quantize(const std::vector<In>& a, std::size_t rows, std::size_t cols,
                                                   std::size_t lda, const blockscale::fp8_block_options& options,
                                                   bool reuse) {
  const stream s;
  device_array<In> d_a(a, 1);
  gpu::fp8_block_device_matrix<T> m(rows, cols);
  if (reuse) {
    blockscale::fp8_block_options other = options;
    other.kind = options.kind == blockscale::fp8_block_kind::row_1x128 ? blockscale::fp8_block_kind::tile_128x128
                                                                       : blockscale::fp8_block_kind::row_1x128;
    other.stochastic.step += 1;
    device_array<In> d_b(negated(a), 3);
    gpu::fp8_block_quantize(d_b.get(), lda, m, other, s.get());
    check(cudaStreamSynchronize(s.get()), "cudaStreamSynchronize");
  }
  gpu::fp8_block_quantize(d_a.get(), lda, m, options, s.get());
  return m.to_host(s.get());
}

#define GPU_RUNS_FP8_BLOCK(T, In)                                     \
  template blockscale::fp8_block_matrix<T> fp8_block_quantize<T, In>( \
      const std::vector<In>&, std::size_t, std::size_t, std::size_t, const blockscale::fp8_block_options&, bool);
GPU_RUNS_FP8_BLOCK(float8_e4m3fn, float)
GPU_RUNS_FP8_BLOCK(float8_e5m2, float)
GPU_RUNS_FP8_BLOCK(float8_e4m3fn, bfloat16)
GPU_RUNS_FP8_BLOCK(float8_e5m2, bfloat16)

}  // namespace gpu_runs
