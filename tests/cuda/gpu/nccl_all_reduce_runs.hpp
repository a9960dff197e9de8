// The device side of the NCCL all-reduce GPU tests (nccl_all_reduce_runs.cu, nvcc, built where
// NCCL is found): distributed/nccl_all_reduce.cuh and nccl_process_group.cuh on a one-rank
// communicator over device 0 (ncclCommInitAll, made at the first call and kept for the process).
// nccl_all_reduce_gpu_test.cpp compares the results with emulate_all_reduce on the host.  Every
// function throws mixprec::cuda_error or mixprec::agreement_error if CUDA or NCCL fails.
#pragma once

#include <mixprec/scaling/all_reduce_options.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpu_runs {

struct nccl_reduction {
  std::vector<std::vector<float>> arrays;  // the gradients after the last call
  mixprec::all_reduce_result result;       // and its result
};

// nccl_gradient_all_reducer on device copies of `arrays` (array a placed a % 4 elements past a
// 256-byte boundary), `calls` times with one reducer, each call on fresh copies (the calls after
// the first reuse its buffers).
nccl_reduction nccl_all_reduce(const std::vector<std::vector<float>>& arrays,
                               const mixprec::all_reduce_options& options, int calls);

// nccl_process_group::all_reduce on host arrays (staged through the device), in place.
mixprec::all_reduce_result nccl_process_group_all_reduce(std::vector<std::vector<float>>& arrays,
                                                         const mixprec::all_reduce_options& options);

// nccl_process_group::first_difference on one rank.
std::size_t nccl_first_difference(const std::vector<std::uint64_t>& fingerprints);

// The weights' bits after `steps` float32 SGD steps of a precision_session (recipe=fp32,
// reduce_dtype=fp32) with a one-rank nccl_process_group (with_group) or without a group.
std::vector<std::uint32_t> nccl_session_weights(bool with_group, int steps);

}  // namespace gpu_runs
