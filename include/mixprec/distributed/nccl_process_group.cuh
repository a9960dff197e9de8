// A precision_session's data-parallel process group over NCCL (session/process_group.hpp): the
// gradient all-reduce of nccl_all_reduce.cuh and the replicas' fingerprint comparison, for a
// session whose gradients live in host memory.
//
//   #include <mixprec/distributed/nccl_process_group.cuh>   // includes <cuda_runtime.h>, <nccl.h>
//   amp.use_process_group(std::make_shared<mixprec::nccl_process_group>(comm, stream));
//
// all_reduce copies the host float gradients into a device staging buffer (one
// cudaMemcpyAsync per array), runs nccl_gradient_all_reducer on it and copies the result back:
// two host-device copies of every gradient per step, over PCIe or NVLink-C2C, on top of the
// exchange.  The result is the device all-reduce's, bit-identical to emulate_all_reduce and to
// mpi_process_group's.  A training loop whose gradients are already on the device calls
// nccl_gradient_all_reducer directly.  The staging buffer is kept between steps on the
// communicator's device.
//
// Every rank of the communicator must make the same calls in the same order.  The communicator
// and the stream stay the caller's: ncclCommDestroy after the last collective call.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../session/process_group.hpp"
#include "agreement.hpp"
#include "nccl_all_reduce.cuh"

namespace mixprec {

class nccl_process_group final : public process_group {
 public:
  explicit nccl_process_group(ncclComm_t comm, cudaStream_t stream = nullptr) : comm_(comm), stream_(stream) {
    if (comm == nullptr) throw agreement_error(std::string(what_) + ": no NCCL communicator was given");
    detail::nccl_all_reduce_check(ncclCommUserRank(comm, &rank_), what_, "ncclCommUserRank");
    detail::nccl_all_reduce_check(ncclCommCount(comm, &size_), what_, "ncclCommCount");
    reducer_ = nccl_gradient_all_reducer({}, comm, stream);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  ncclComm_t communicator() const noexcept { return comm_; }
  cudaStream_t stream() const noexcept { return stream_; }

  // Host float32 gradients: staged through the device (see above).  Argument errors are the
  // reducer's, so that the rank that has them still joins its agreement (else the others wait
  // for it): a list it cannot stage goes to the reducer as it is, a bfloat16/float16 view keeps
  // its type, and the reducer throws invalid_argument on this rank and agreement_error on the
  // others.
  all_reduce_result all_reduce(const gradient_view* arrays, std::size_t count,
                               const all_reduce_options& options) override {
    reducer_.set_options(options);
    bool stageable = true;
    try {
      detail::check_gradient_views("all_reduce_gradients", arrays, count);
    } catch (const invalid_argument&) {
      stageable = false;
    }
    if (!stageable) return reducer_.reduce(arrays, count);
    std::size_t total = 0;
    for (std::size_t a = 0; a < count; ++a) total += arrays[a].size();
    const detail::nccl_device_scope device(comm_, what_);
    reserve(total * sizeof(float), what_);
    auto* staged = reinterpret_cast<float*>(staging_.bytes());
    device_views_.clear();
    std::size_t offset = 0;
    for (std::size_t a = 0; a < count; ++a) {
      const std::size_t n = arrays[a].size();
      if (arrays[a].type() == dtype::float32 && n > 0) {
        detail::nccl_all_reduce_check(
            cudaMemcpyAsync(staged + offset, arrays[a].data(), n * sizeof(float), cudaMemcpyHostToDevice, stream_),
            what_, "cudaMemcpyAsync (to the device)");
      }
      device_views_.push_back(arrays[a].type() == dtype::float32 ? gradient_view(staged + offset, n) : arrays[a]);
      offset += n;
    }
    const all_reduce_result result = reducer_.reduce(device_views_);
    offset = 0;
    for (std::size_t a = 0; a < count; ++a) {
      const std::size_t n = arrays[a].size();
      if (n > 0) {
        detail::nccl_all_reduce_check(
            cudaMemcpyAsync(arrays[a].data(), staged + offset, n * sizeof(float), cudaMemcpyDeviceToHost, stream_),
            what_, "cudaMemcpyAsync (to the host)");
      }
      offset += n;
    }
    detail::nccl_all_reduce_check(cudaStreamSynchronize(stream_), what_, "cudaStreamSynchronize");
    return result;
  }

  // The fp8 amax agreement: the float bits with the sign cleared, widened to the 64-bit words
  // of reduce_max (the integer order of magnitudes' bits is their numeric order, NaN above inf,
  // as mpi_reduce_amax), one ncclAllReduce(ncclMax).
  void reduce_amax(float* amax, std::size_t count) override {
    const char* what = "nccl_process_group::reduce_amax";
    if (count > 0 && amax == nullptr) {
      throw agreement_error(std::string(what) + ": null amax pointer with count " + std::to_string(count));
    }
    const detail::nccl_device_scope device(comm_, what);
    const std::vector<std::uint32_t> bits = detail::amax_magnitude_bits(amax, count);
    words_.assign(bits.begin(), bits.end());
    reserve(words_.size() * sizeof(std::uint64_t), what);
    reduce_max(staging_.bytes(), count, what);
    std::vector<std::uint32_t> reduced(count);
    for (std::size_t i = 0; i < count; ++i) reduced[i] = static_cast<std::uint32_t>(words_[i]);
    detail::store_amax_bits(reduced, amax);
  }

  // One ncclAllReduce(ncclMax) of the count and its complement, then one of the fingerprints and
  // their complements: a fingerprint is the same on every rank when its maximum equals the
  // complement of the maximum of its complements (its minimum).  As mpi_process_group.
  std::size_t first_difference(const std::uint64_t* fingerprints, std::size_t count) override {
    const char* what = "nccl_process_group::first_difference";
    const detail::nccl_device_scope device(comm_, what);
    words_.resize(2 * count + 2);
    words_[0] = static_cast<std::uint64_t>(count);
    words_[1] = ~static_cast<std::uint64_t>(count);
    reserve(words_.size() * sizeof(std::uint64_t), what);
    void* device_words = staging_.bytes();
    reduce_max(device_words, 2, what);
    if (words_[0] != ~words_[1]) {
      throw invalid_argument(std::string(what) + ": the ranks compare between " + std::to_string(~words_[1]) + " and " +
                             std::to_string(words_[0]) + " parameters; every rank must register the same parameters");
    }
    for (std::size_t i = 0; i < count; ++i) {
      words_[i] = fingerprints[i];
      words_[count + i] = ~fingerprints[i];
    }
    reduce_max(device_words, 2 * count, what);
    for (std::size_t i = 0; i < count; ++i) {
      if (words_[i] != ~words_[count + i]) return i;
    }
    return count;
  }

 private:
  static constexpr const char* what_ = "nccl_process_group";

  // The staging buffer, grown to `bytes` (a failed cudaMalloc is agreement_error).
  void reserve(std::size_t bytes, const char* what) {
    if (staging_.size() >= bytes) return;
    try {
      staging_ = gpu::detail::device_allocation(bytes, what);
    } catch (const cuda_error& e) {
      throw agreement_error(e.what());
    }
  }

  // words_[0, n) becomes its maximum over the ranks, through device memory.
  void reduce_max(void* device_words, std::size_t n, const char* what) {
    if (n == 0) return;
    const std::size_t bytes = n * sizeof(std::uint64_t);
    detail::nccl_all_reduce_check(cudaMemcpyAsync(device_words, words_.data(), bytes, cudaMemcpyHostToDevice, stream_),
                                  what, "cudaMemcpyAsync (to the device)");
    detail::nccl_all_reduce_check(ncclAllReduce(device_words, device_words, n, ncclUint64, ncclMax, comm_, stream_),
                                  what, "ncclAllReduce(ncclMax)");
    detail::nccl_all_reduce_check(cudaMemcpyAsync(words_.data(), device_words, bytes, cudaMemcpyDeviceToHost, stream_),
                                  what, "cudaMemcpyAsync (to the host)");
    detail::nccl_all_reduce_check(cudaStreamSynchronize(stream_), what, "cudaStreamSynchronize");
  }

  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_ = 0, size_ = 0;
  nccl_gradient_all_reducer reducer_;
  gpu::detail::device_allocation staging_;
  std::vector<gradient_view> device_views_;
  std::vector<std::uint64_t> words_;
};

}  // namespace mixprec
