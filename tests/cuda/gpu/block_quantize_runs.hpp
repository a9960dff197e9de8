// The device side of the block quantiser tests (block_quantize_runs.cu, nvcc): gpu::nvfp4_quantize
// and gpu::fp8_block_quantize on host data, their results read back into the host's containers;
// block_quantize_gpu_test.cpp compares them with blockscale::nvfp4_quantize and
// blockscale::fp8_block_quantize.  Every function throws mixprec::cuda_error if CUDA fails.
#pragma once

#include <mixprec/blockscale/fp8_block.hpp>
#include <mixprec/blockscale/nvfp4.hpp>

#include <cstddef>
#include <vector>

namespace gpu_runs {

// a: rows × cols, leading dimension lda (a.size() >= (rows - 1) · lda + cols), copied to the
// device.  With reuse, the device tensor first receives another quantisation (the options'
// other rule, the step after, the input negated), so that nothing of it may survive.
mixprec::blockscale::nvfp4_tensor nvfp4_quantize(const std::vector<float>& a, std::size_t rows, std::size_t cols,
                                                 std::size_t lda, const mixprec::blockscale::nvfp4_options& options,
                                                 bool reuse);

template <class T, class In>
mixprec::blockscale::fp8_block_matrix<T> fp8_block_quantize(const std::vector<In>& a, std::size_t rows,
                                                            std::size_t cols, std::size_t lda,
                                                            const mixprec::blockscale::fp8_block_options& options,
                                                            bool reuse);

}  // namespace gpu_runs
