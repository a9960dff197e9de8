// Agreement on found_inf over NCCL (see agreement.hpp for the concept), for CUDA builds whose
// processes already share an NCCL communicator for their gradients.
//
//   #include <mixprec/distributed/nccl.hpp>    // includes <cuda_runtime.h> and <nccl.h>
//   mixprec::loss_scaler<mixprec::dynamic_scaling, mixprec::nccl_agreement> scaler{
//       mixprec::dynamic_scaling{}, {}, mixprec::nccl_agreement{comm, stream}};
//
// any() copies the flag to a 4-byte device buffer, runs ncclAllReduce(ncclInt32, ncclMax) on the
// given stream, copies the result back and synchronizes the stream: one small collective and one
// host synchronization per inf check (the scaler's skip decision is made on the host).  When the
// check itself runs on the device (a found_inf tensor, as PyTorch keeps it), reduce_on_device()
// reduces it in place without a host round trip; the host then reads the agreed value once and
// passes it to loss_scaler::record_found_inf().
//
// Requirements: the buffer is allocated on the CUDA device current at the first any() (the
// communicator's device: call cudaSetDevice first); every rank of the communicator makes the same
// sequence of checks (any() is collective).  With several communicators in one process (one per
// GPU, ncclCommInitAll), any() must run on them from different threads, or the calls grouped by
// the caller: NCCL blocks until every rank has joined.  Errors throw agreement_error naming the
// call and NCCL's or CUDA's error string.
//
// In CMake: find_package(CUDAToolkit), link CUDA::cudart and the NCCL library (libnccl).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../scaling/errors.hpp"
#include "../scaling/loss_scaler.hpp"
#include "agreement.hpp"

namespace mixprec {

namespace detail {

inline void nccl_check(ncclResult_t result, const char* call) {
  if (result == ncclSuccess) return;
  throw agreement_error(std::string("nccl_agreement: ") + call + " failed: " + ncclGetErrorString(result));
}

inline void cuda_check_for_nccl(cudaError_t result, const char* call) {
  if (result == cudaSuccess) return;
  throw agreement_error(std::string("nccl_agreement: ") + call + " failed: " + cudaGetErrorString(result));
}

}  // namespace detail

// found_inf agreed over an NCCL communicator.  Movable, not copyable (it owns a device buffer);
// the communicator and the stream stay the caller's.
class nccl_agreement {
 public:
  nccl_agreement() noexcept = default;  // no communicator: any() throws agreement_error
  explicit nccl_agreement(ncclComm_t comm, cudaStream_t stream = nullptr) noexcept : comm_(comm), stream_(stream) {}

  nccl_agreement(const nccl_agreement&) = delete;
  nccl_agreement& operator=(const nccl_agreement&) = delete;
  nccl_agreement(nccl_agreement&& other) noexcept
      : comm_(std::exchange(other.comm_, nullptr)),
        stream_(std::exchange(other.stream_, nullptr)),
        flag_(std::exchange(other.flag_, nullptr)) {}
  nccl_agreement& operator=(nccl_agreement&& other) noexcept {
    if (this != &other) {
      release();
      comm_ = std::exchange(other.comm_, nullptr);
      stream_ = std::exchange(other.stream_, nullptr);
      flag_ = std::exchange(other.flag_, nullptr);
    }
    return *this;
  }
  ~nccl_agreement() { release(); }

  bool any(bool local_found_inf) {
    if (comm_ == nullptr) throw agreement_error("nccl_agreement::any: no NCCL communicator was given");
    if (flag_ == nullptr) {
      void* p = nullptr;
      detail::cuda_check_for_nccl(cudaMalloc(&p, sizeof(int)), "cudaMalloc");
      flag_ = static_cast<int*>(p);
    }
    int value = local_found_inf ? 1 : 0;
    detail::cuda_check_for_nccl(cudaMemcpyAsync(flag_, &value, sizeof(int), cudaMemcpyHostToDevice, stream_),
                                "cudaMemcpyAsync (to the device)");
    detail::nccl_check(ncclAllReduce(flag_, flag_, 1, ncclInt32, ncclMax, comm_, stream_), "ncclAllReduce(ncclMax)");
    detail::cuda_check_for_nccl(cudaMemcpyAsync(&value, flag_, sizeof(int), cudaMemcpyDeviceToHost, stream_),
                                "cudaMemcpyAsync (to the host)");
    detail::cuda_check_for_nccl(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return value != 0;
  }

  // Reduces `count` found_inf flags already in device memory (float 0/1, as PyTorch's found_inf
  // tensors) in place with ncclMax, on the stream, without synchronizing.
  void reduce_on_device(float* found_inf, std::size_t count = 1) const {
    if (comm_ == nullptr) throw agreement_error("nccl_agreement::reduce_on_device: no NCCL communicator was given");
    detail::nccl_check(ncclAllReduce(found_inf, found_inf, count, ncclFloat32, ncclMax, comm_, stream_),
                       "ncclAllReduce(ncclMax)");
  }

  // The fp8 recipes' amax agreement (scaling/fp8/delayed_scaler.hpp, update(reduce)): every
  // amax[i], in host memory, becomes its maximum over the ranks, as distributed/mpi.hpp's
  // mpi_reduce_amax: a MAX of the float bits with the sign cleared (ncclUint32), so that NaN wins
  // deterministically.  Copies through a device buffer and synchronizes the stream.
  void reduce_amax(float* amax, std::size_t count) {
    if (comm_ == nullptr) throw agreement_error("nccl_agreement::reduce_amax: no NCCL communicator was given");
    if (count == 0) return;
    std::vector<std::uint32_t> bits = detail::amax_magnitude_bits(amax, count);
    void* buffer = nullptr;
    detail::cuda_check_for_nccl(cudaMalloc(&buffer, count * sizeof(std::uint32_t)), "cudaMalloc");
    try {
      detail::cuda_check_for_nccl(
          cudaMemcpyAsync(buffer, bits.data(), count * sizeof(std::uint32_t), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync (to the device)");
      reduce_amax_on_device(static_cast<std::uint32_t*>(buffer), count);
      detail::cuda_check_for_nccl(
          cudaMemcpyAsync(bits.data(), buffer, count * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync (to the host)");
      detail::cuda_check_for_nccl(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    } catch (...) {
      static_cast<void>(cudaFree(buffer));
      throw;
    }
    static_cast<void>(cudaFree(buffer));
    detail::store_amax_bits(bits, amax);
  }

  // The same on amaxes already in device memory, as float bits with the sign bit clear (TE's
  // amax buffers hold non-negative floats): ncclMax over ncclUint32 in place, on the stream,
  // without synchronizing.
  void reduce_amax_on_device(std::uint32_t* amax_bits, std::size_t count) const {
    if (comm_ == nullptr)
      throw agreement_error("nccl_agreement::reduce_amax_on_device: no NCCL communicator was given");
    detail::nccl_check(ncclAllReduce(amax_bits, amax_bits, count, ncclUint32, ncclMax, comm_, stream_),
                       "ncclAllReduce(ncclMax)");
  }

  ncclComm_t communicator() const noexcept { return comm_; }
  cudaStream_t stream() const noexcept { return stream_; }

 private:
  void release() noexcept {
    if (flag_ != nullptr) static_cast<void>(cudaFree(flag_));
    flag_ = nullptr;
  }

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int* flag_ = nullptr;
};

}  // namespace mixprec
