// Data-parallel gradient all-reduce over NCCL on float32 gradients in device memory, with
// low-precision communication and float accumulation: the scheme of all_reduce.hpp (buckets,
// shard r of each bucket owned by rank r, the owner's float sum in rank order, one rounding into
// the communication dtype), so the result is bit-identical to emulate_all_reduce and to the MPI
// form (mpi_all_reduce.hpp) for the same inputs.  A CUDA header (nvcc): it launches kernels.
//
//   #include <mixprec/distributed/nccl_all_reduce.cuh>   // includes <cuda_runtime.h>, <nccl.h>
//   mixprec::nccl_gradient_all_reducer reducer{options, comm, stream};   // keeps its buffers
//   std::vector<mixprec::gradient_view> views{{d_w, n_w}, {d_b, n_b}};    // DEVICE pointers
//   auto r = reducer.reduce(views);   // r.found_inf is the same on every rank
//
// The gradients: gradient_view with float pointers into device memory of the communicator's
// device (cudaMalloc'd or managed), float32 only, as the MPI form.  The reducer makes the
// communicator's device current for the call (ncclCommCuDevice) and restores the caller's; its
// buffers live on that device.  Call it on every rank with the same array lengths in the same
// order and the same options.  Collectives, in order, all on the given stream:
//   1. ncclAllReduce(ncclUint64, ncclMax) of 10 words: every rank's arguments accepted, and the
//      total length, bucket_bytes, dtype and averaging the same everywhere (else every rank throws);
//   2. fp8 only: ncclAllReduce(ncclUint32, ncclMax) of every bucket's amax bits (a device amax
//      kernel per array piece first); the host computes the scales from them (scales_of_bucket).
//      A NaN or inf on any rank is found_inf: the exchange is skipped;
//   3. per bucket, an all-to-all of grouped ncclSend/ncclRecv (each owner receives its shard from
//      every rank; a rank's own shard is a device copy) and an all-gather of grouped
//      ncclSend/ncclRecv (the shards have unequal lengths, m·r/p), in the communication dtype;
//   4. ncclAllReduce(ncclInt32, ncclMax) of one flag: whether any owner's reduced shard is not
//      finite.
// The host waits for the stream after 1, 2 and 4 (the found_inf it returns) and after a NaN fill; the
// gradients hold the result when reduce() returns.  Errors from CUDA or NCCL throw
// agreement_error naming the call and the library's error string, as nccl.hpp does.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "../cuda/convert_n.cuh"
#include "../cuda/detail/device_allocation.cuh"
#include "../cuda/errors.hpp"
#include "../cuda/quantize.cuh"
#include "all_reduce.hpp"
#include "detail/nccl_all_reduce_kernels.cuh"

namespace mixprec {

// The all-reduce with its device buffers: keep one per training loop, so that calls after the
// first allocate nothing.  Movable, not copyable, not thread-safe; the communicator, the stream
// and the gradients stay the caller's.
class nccl_gradient_all_reducer {
 public:
  nccl_gradient_all_reducer() noexcept = default;  // no communicator: reduce() throws agreement_error
  explicit nccl_gradient_all_reducer(all_reduce_options options, ncclComm_t comm = nullptr,
                                     cudaStream_t stream = nullptr) noexcept
      : options_(options), comm_(comm), stream_(stream) {}

  // Collective over the communicator: every float gradient (device memory) becomes the mean
  // (average) or sum over the ranks.  Throws invalid_argument on bad arguments (on every rank: a
  // rank whose own arguments were accepted throws agreement_error when another's were not) and
  // agreement_error on CUDA and NCCL errors.
  all_reduce_result reduce(const gradient_view* arrays, std::size_t count);
  all_reduce_result reduce(const std::vector<gradient_view>& arrays) { return reduce(arrays.data(), arrays.size()); }
  all_reduce_result reduce(std::initializer_list<gradient_view> arrays) {
    return reduce(arrays.begin(), arrays.size());
  }

  const all_reduce_options& options() const noexcept { return options_; }
  void set_options(const all_reduce_options& options) noexcept { options_ = options; }
  ncclComm_t communicator() const noexcept { return comm_; }
  cudaStream_t stream() const noexcept { return stream_; }

 private:
  using buffer = gpu::detail::device_allocation;
  static constexpr const char* what_ = "all_reduce_gradients (NCCL)";

  void agree(bool rejected, std::size_t total, const all_reduce_options& options);
  all_reduce_result exchange(const gradient_view* arrays, std::size_t count, std::size_t total, int rank, int world);
  void sync() { detail::nccl_all_reduce_check(cudaStreamSynchronize(stream_), what_, "cudaStreamSynchronize"); }
  void to_host(void* host, const void* device, std::size_t bytes) {
    detail::nccl_all_reduce_check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_), what_,
                                  "cudaMemcpyAsync (to the host)");
  }
  void to_device(void* device, const void* host, std::size_t bytes) {
    detail::nccl_all_reduce_check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_), what_,
                                  "cudaMemcpyAsync (to the device)");
  }
  void on_device(void* to, const void* from, std::size_t bytes) {
    if (bytes == 0) return;
    detail::nccl_all_reduce_check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_), what_,
                                  "cudaMemcpyAsync (on the device)");
  }
  // Grown, never shrunk (later calls reuse the memory); a failed cudaMalloc is agreement_error.
  void reserve(buffer& b, std::size_t bytes) {
    if (b.size() >= bytes) return;
    try {
      b = buffer(bytes, what_);
    } catch (const cuda_error& e) {
      throw agreement_error(e.what());
    }
  }
  void encode(dtype d, const float* in, std::size_t n, unsigned char* out, float scale, unsigned* amax_bits,
              bool amax_wanted);
  void decode(dtype d, const unsigned char* in, std::size_t n, float* out, float scale_inv);

  all_reduce_options options_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  buffer words_, amax_, owner_amax_, send_, pieces_, decoded_, sum_, gathered_;
  std::vector<std::uint32_t> amax_bits_, owner_amax_bits_;
};

inline void nccl_gradient_all_reducer::agree(bool rejected, std::size_t total, const all_reduce_options& options) {
  std::uint64_t words[2 * detail::all_reduce_agreed_words];
  detail::all_reduce_agreement_words(rejected, total, options, words);
  reserve(words_, sizeof words);
  to_device(words_.bytes(), words, sizeof words);
  detail::nccl_all_reduce_check(ncclAllReduce(words_.bytes(), words_.bytes(), 2 * detail::all_reduce_agreed_words,
                                              ncclUint64, ncclMax, comm_, stream_),
                                what_, "ncclAllReduce(ncclMax)");
  to_host(words, words_.bytes(), sizeof words);
  sync();
  if (!rejected) detail::check_all_reduce_agreement(words, what_);  // a rejecting rank rethrows its own error
}

// all_reduce_encode (all_reduce.hpp) on the device: a copy for float32, gpu::quantize_n with scale
// 1 and overflow::non_finite for bfloat16 and float16, with the bucket's scale and saturation for
// fp8; the same calls as the host's quantize_n, bit for bit.  *amax_bits receives max |in| (the
// owner's finiteness check), or, where nobody reads it, amax_bits is the scratch word and a
// float32 copy computes none.
inline void nccl_gradient_all_reducer::encode(dtype d, const float* in, std::size_t n, unsigned char* out, float scale,
                                              unsigned* amax_bits, bool amax_wanted) {
  detail::with_all_reduce_type(d, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same<T, float>::value) {
      on_device(out, in, n * sizeof(float));
      if (amax_wanted) detail::launch_all_reduce_amax(in, n, amax_bits, stream_, what_);
    } else if constexpr (std::is_same<T, bfloat16>::value || std::is_same<T, float16>::value) {
      gpu::quantize_n(in, n, reinterpret_cast<T*>(out), 1.0f, reinterpret_cast<float*>(amax_bits),
                      rounding::nearest_even, overflow::non_finite, stream_);
    } else {
      gpu::quantize_n(in, n, reinterpret_cast<T*>(out), scale, reinterpret_cast<float*>(amax_bits),
                      rounding::nearest_even, overflow::saturate, stream_);
    }
  });
}

// all_reduce_decode on the device: q · scale_inv (exact), or a copy for float32.
inline void nccl_gradient_all_reducer::decode(dtype d, const unsigned char* in, std::size_t n, float* out,
                                              float scale_inv) {
  detail::with_all_reduce_type(d, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same<T, float>::value) {
      on_device(out, in, n * sizeof(float));
    } else if constexpr (std::is_same<T, bfloat16>::value || std::is_same<T, float16>::value) {
      gpu::convert_n(reinterpret_cast<const T*>(in), n, out, rounding::nearest_even, overflow::non_finite, stream_);
    } else {
      gpu::dequantize_n(reinterpret_cast<const T*>(in), n, out, scale_inv, stream_);
    }
  });
}

inline all_reduce_result nccl_gradient_all_reducer::reduce(const gradient_view* arrays, std::size_t count) {
  if (comm_ == nullptr) throw agreement_error(std::string(what_) + ": no NCCL communicator was given");
  int rank = 0, world = 0;
  detail::nccl_all_reduce_check(ncclCommUserRank(comm_, &rank), what_, "ncclCommUserRank");
  detail::nccl_all_reduce_check(ncclCommCount(comm_, &world), what_, "ncclCommCount");
  const detail::nccl_device_scope device(comm_, what_);
  const all_reduce_options options = options_;
  std::size_t total = 0;
  try {
    validate(options, world);
    total = detail::all_reduce_total(arrays, count);
  } catch (const invalid_argument&) {
    agree(true, 0, options);
    throw;
  }
  agree(false, total, options);
  try {
    return exchange(arrays, count, total, rank, world);
  } catch (const cuda_error& e) {  // from the gpu:: launchers: the same family as NCCL's errors here
    throw agreement_error(std::string(what_) + ": " + e.what());
  }
}

inline all_reduce_result nccl_gradient_all_reducer::exchange(const gradient_view* arrays, std::size_t count,
                                                             std::size_t total, int rank, int world) {
  all_reduce_result result;
  const all_reduce_options options = options_;
  const dtype d = options.communication;
  const std::size_t width = detail::all_reduce_element_bytes(d);
  const std::size_t per_bucket = bucket_elements(options);
  const std::size_t buckets = (total + per_bucket - 1) / per_bucket;
  const auto p = static_cast<std::size_t>(world);
  const std::size_t largest_bucket = std::min(per_bucket, total);
  const std::size_t largest_shard = (largest_bucket + p - 1) / p;
  // Per bucket: the pre-exchange amax (fp8) and the owner's amax of its reduced shard; one more
  // word, the scratch amax of encodes whose amax nobody reads, then the found_inf flag.
  reserve(amax_, (2 * buckets + 2) * sizeof(std::uint32_t));
  auto* amax = reinterpret_cast<unsigned*>(amax_.bytes());
  unsigned* owner_amax = amax + buckets;
  unsigned* scratch = amax + 2 * buckets;
  auto* flag = reinterpret_cast<int*>(amax + 2 * buckets + 1);
  detail::nccl_all_reduce_check(cudaMemsetAsync(amax, 0, (2 * buckets + 2) * sizeof(std::uint32_t), stream_), what_,
                                "cudaMemsetAsync");
  detail::array_cursor scan(arrays, count), encoder(arrays, count), decoder(arrays, count);

  // fp8: every bucket's amax over the ranks, as magnitude bits (NaN above inf, whatever the order).
  amax_bits_.assign(detail::is_scaled_all_reduce_dtype(d) ? buckets : 0, 0u);
  if (!amax_bits_.empty()) {
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::size_t begin = b * per_bucket;
      scan.for_each(begin, std::min(per_bucket, total - begin), [&](const float* data, std::size_t, std::size_t n) {
        detail::launch_all_reduce_amax(data, n, amax + b, stream_, what_);
      });
    }
    detail::nccl_all_reduce_check(ncclAllReduce(amax, amax, buckets, ncclUint32, ncclMax, comm_, stream_), what_,
                                  "ncclAllReduce(ncclMax)");
    to_host(amax_bits_.data(), amax, buckets * sizeof(std::uint32_t));
    sync();
    for (std::uint32_t bits : amax_bits_) result.found_inf = result.found_inf || bits >= detail::float_infinity_bits;
  }

  if (!result.found_inf) {
    reserve(send_, largest_bucket * width);
    reserve(gathered_, largest_bucket * width);
    reserve(pieces_, largest_shard * p * width);
    if (d != dtype::float32) reserve(decoded_, largest_shard * p * sizeof(float));
    reserve(sum_, largest_shard * sizeof(float));
  }
  for (std::size_t b = 0; b < buckets && !result.found_inf; ++b) {
    const std::size_t begin = b * per_bucket, m = std::min(per_bucket, total - begin);
    const float amax_value = amax_bits_.empty() ? 0.0f : detail::magnitude_from_bits(amax_bits_[b]);
    const bucket_scales scale = scales_of_bucket(d, amax_value, world, options.average);
    encoder.for_each(begin, m, [&](const float* data, std::size_t offset, std::size_t n) {
      encode(d, data, n, send_.bytes() + offset * width, scale.input, scratch, false);
    });
    // Reduce-scatter: shard r of the encoded bucket to rank r; rank q's piece of mine at q.
    const std::size_t mine_begin = shard_begin(m, world, rank);
    const std::size_t mine = shard_begin(m, world, rank + 1) - mine_begin;
    detail::nccl_all_reduce_check(ncclGroupStart(), what_, "ncclGroupStart");
    for (int r = 0; r < world; ++r) {
      const std::size_t s0 = shard_begin(m, world, r), size = shard_begin(m, world, r + 1) - s0;
      if (r == rank) continue;
      if (size > 0) {
        detail::nccl_all_reduce_check(ncclSend(send_.bytes() + s0 * width, size * width, ncclUint8, r, comm_, stream_),
                                      what_, "ncclSend");
      }
      if (mine > 0) {
        detail::nccl_all_reduce_check(ncclRecv(pieces_.bytes() + static_cast<std::size_t>(r) * mine * width,
                                               mine * width, ncclUint8, r, comm_, stream_),
                                      what_, "ncclRecv");
      }
      result.bytes_sent += size * width + mine * width;  // my shard r, then my reduced shard
      result.bytes_received += mine * width + size * width;
    }
    detail::nccl_all_reduce_check(ncclGroupEnd(), what_, "ncclGroupEnd");
    on_device(pieces_.bytes() + static_cast<std::size_t>(rank) * mine * width, send_.bytes() + mine_begin * width,
              mine * width);
    // The owner's sum: decode the p pieces (contiguous, rank order) to float, add in rank order.
    const float* rows = reinterpret_cast<const float*>(pieces_.bytes());
    if (d != dtype::float32) {
      decode(d, pieces_.bytes(), mine * p, reinterpret_cast<float*>(decoded_.bytes()), 1.0f / scale.input);
      rows = reinterpret_cast<const float*>(decoded_.bytes());
    }
    auto* sum = reinterpret_cast<float*>(sum_.bytes());
    detail::launch_all_reduce_sum(rows, world, mine, options.average, sum, stream_, what_);
    // The reduced shard, rounded once, straight into its place in the gathered bucket.
    unsigned char* my_place = gathered_.bytes() + mine_begin * width;
    encode(d, sum, mine, my_place, scale.output, owner_amax + b, true);
    // All-gather: rank r's reduced shard at its offset (the same layout as the send buffer).
    detail::nccl_all_reduce_check(ncclGroupStart(), what_, "ncclGroupStart");
    for (int r = 0; r < world; ++r) {
      const std::size_t s0 = shard_begin(m, world, r), size = shard_begin(m, world, r + 1) - s0;
      if (r == rank) continue;
      if (mine > 0) {
        detail::nccl_all_reduce_check(ncclSend(my_place, mine * width, ncclUint8, r, comm_, stream_), what_,
                                      "ncclSend");
      }
      if (size > 0) {
        detail::nccl_all_reduce_check(
            ncclRecv(gathered_.bytes() + s0 * width, size * width, ncclUint8, r, comm_, stream_), what_, "ncclRecv");
      }
    }
    detail::nccl_all_reduce_check(ncclGroupEnd(), what_, "ncclGroupEnd");
    decoder.for_each(begin, m, [&](float* data, std::size_t offset, std::size_t n) {
      decode(d, gathered_.bytes() + offset * width, n, data, 1.0f / scale.output);
    });
    ++result.buckets;
  }

  if (!result.found_inf) {
    // The owner's check, all_reduce_encode_checked's: a reduced shard is not finite after encoding
    // exactly when its largest magnitude is not (rounding is monotonic), so the host function
    // applied to that one value gives the shard's answer with the host's own limits.
    owner_amax_bits_.resize(buckets);
    to_host(owner_amax_bits_.data(), owner_amax, buckets * sizeof(std::uint32_t));
    sync();
    bool local_non_finite = false;
    unsigned char encoded[sizeof(float)];
    for (std::size_t b = 0; b < buckets; ++b) {
      const float largest = detail::magnitude_from_bits(owner_amax_bits_[b]);
      const float amax_value = amax_bits_.empty() ? 0.0f : detail::magnitude_from_bits(amax_bits_[b]);
      const float output_scale = scales_of_bucket(d, amax_value, world, options.average).output;
      local_non_finite = detail::all_reduce_encode_checked(d, &largest, 1, encoded, output_scale) || local_non_finite;
    }
    int global = local_non_finite ? 1 : 0;
    to_device(flag, &global, sizeof global);
    detail::nccl_all_reduce_check(ncclAllReduce(flag, flag, 1, ncclInt32, ncclMax, comm_, stream_), what_,
                                  "ncclAllReduce(ncclMax)");
    to_host(&global, flag, sizeof global);
    sync();
    result.found_inf = global != 0;
  }
  if (result.found_inf) {  // never finite garbage: every gradient of every rank is NaN
    for (std::size_t a = 0; a < count; ++a) {
      detail::launch_all_reduce_fill_nan(static_cast<float*>(arrays[a].data()), arrays[a].size(), stream_, what_);
    }
  }
  sync();
  return result;
}

// One call with buffers of its own (nccl_gradient_all_reducer keeps them between calls).
inline all_reduce_result all_reduce_gradients(const gradient_view* arrays, std::size_t count,
                                              const all_reduce_options& options, ncclComm_t comm,
                                              cudaStream_t stream = nullptr) {
  return nccl_gradient_all_reducer(options, comm, stream).reduce(arrays, count);
}

inline all_reduce_result all_reduce_gradients(const std::vector<gradient_view>& arrays,
                                              const all_reduce_options& options, ncclComm_t comm,
                                              cudaStream_t stream = nullptr) {
  return all_reduce_gradients(arrays.data(), arrays.size(), options, comm, stream);
}

}  // namespace mixprec
