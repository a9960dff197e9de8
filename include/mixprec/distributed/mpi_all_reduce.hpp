// Data-parallel gradient all-reduce over MPI in low-precision communication with float
// accumulation (issue 19; the scheme, its order and its error bound: all_reduce.hpp and
// docs/distributed.md).
//
//   #include <mixprec/distributed/mpi_all_reduce.hpp>   // includes <mpi.h>
//   mixprec::all_reduce_options options;                 // bfloat16, 25 MiB buckets, averaged
//   mixprec::mpi_gradient_all_reducer reducer{options, MPI_COMM_WORLD};  // keeps its buffers
//   auto r = reducer.reduce(views);                      // or all_reduce_gradients(views, options)
//   // r.found_inf is the same on every rank; when true every gradient is NaN
//   scaler.unscale(views);                               // as in one process
//
// Call it on every rank of the communicator after the backward pass and before unscale(), with
// the same arrays (the same lengths in the same order) and the same options: it replaces each
// float gradient by the mean (or sum) over the ranks, bit-identical on every rank.  Collectives:
//   1. MPI_Allreduce(MPI_MAX) of 10 64-bit words: every rank's arguments accepted, and the total
//      length, bucket_bytes, dtype and averaging the same everywhere (else every rank throws);
//   2. fp8 only: MPI_Allreduce(MPI_MAX) of each bucket's amax bits (one message for all buckets).
//      A NaN or inf on any rank is found_inf: the exchange is skipped;
//   3. per bucket, MPI_Alltoallv (each owner receives its shard from every rank) and
//      MPI_Allgatherv (every rank receives every reduced shard), in the communication dtype;
//   4. MPI_Allreduce(MPI_MAX) of one int: whether any owner's reduced shard is not finite.
// MPI errors throw agreement_error (with MPI_ERRORS_RETURN on the communicator) as mpi.hpp does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "all_reduce.hpp"
#include "mpi.hpp"

namespace mixprec {

namespace detail {

inline void all_reduce_agree(bool rejected, std::size_t total, const all_reduce_options& options, MPI_Comm comm) {
  const char* what = "all_reduce_gradients";
  std::uint64_t words[2 * all_reduce_agreed_words];
  all_reduce_agreement_words(rejected, total, options, words);
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, words, 2 * all_reduce_agreed_words, MPI_UINT64_T, MPI_MAX, comm),
            "MPI_Allreduce(MPI_MAX)", what);
  if (!rejected) check_all_reduce_agreement(words, what);  // a rejecting rank rethrows its own error
}

}  // namespace detail

// The all-reduce with its buffers: keep one per training loop (a session), so that calls after the
// first allocate nothing (a fresh buffer costs its page faults on every call).  Not thread-safe;
// the communicator and the gradients stay the caller's.
class mpi_gradient_all_reducer {
 public:
  explicit mpi_gradient_all_reducer(all_reduce_options options = {}, MPI_Comm comm = MPI_COMM_WORLD) noexcept
      : options_(options), comm_(comm) {}

  // Collective over the communicator: every float gradient becomes the mean (average) or sum over
  // the ranks, reduced in float in rank order and communicated in options().communication.
  // Throws invalid_argument on bad arguments (on every rank: a rank whose own arguments were
  // accepted throws agreement_error when another's were not) and agreement_error on MPI errors;
  // the gradients are then unchanged unless the error came from MPI during the exchange.
  all_reduce_result reduce(const gradient_view* arrays, std::size_t count);
  all_reduce_result reduce(const std::vector<gradient_view>& arrays) { return reduce(arrays.data(), arrays.size()); }
  all_reduce_result reduce(std::initializer_list<gradient_view> arrays) {
    return reduce(arrays.begin(), arrays.size());
  }

  const all_reduce_options& options() const noexcept { return options_; }
  void set_options(const all_reduce_options& options) noexcept { options_ = options; }
  MPI_Comm communicator() const noexcept { return comm_; }

 private:
  all_reduce_options options_;
  MPI_Comm comm_;
  std::vector<unsigned char> send_, pieces_, gathered_;
  std::vector<float> sum_;
  std::vector<std::uint32_t> amax_bits_;
  std::vector<int> send_counts_, send_offsets_, receive_counts_, receive_offsets_;
};

inline all_reduce_result mpi_gradient_all_reducer::reduce(const gradient_view* arrays, std::size_t count) {
  const char* what = "all_reduce_gradients";
  const MPI_Comm comm = comm_;
  const all_reduce_options options = options_;
  detail::require_mpi_running(what);
  int rank = 0, world = 0;
  detail::mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", what);
  detail::mpi_check(MPI_Comm_size(comm, &world), "MPI_Comm_size", what);
  std::size_t total = 0;
  try {
    validate(options, world);
    total = detail::all_reduce_total(arrays, count);
  } catch (const invalid_argument&) {
    detail::all_reduce_agree(true, 0, options, comm);
    throw;
  }
  detail::all_reduce_agree(false, total, options, comm);

  all_reduce_result result;
  const dtype d = options.communication;
  const std::size_t width = detail::all_reduce_element_bytes(d);
  const std::size_t per_bucket = bucket_elements(options);
  const std::size_t buckets = (total + per_bucket - 1) / per_bucket;

  // fp8: every bucket's amax over the ranks, as magnitude bits (NaN above inf, whatever the order).
  amax_bits_.assign(detail::is_scaled_all_reduce_dtype(d) ? buckets : 0, 0u);
  if (!amax_bits_.empty()) {
    detail::array_cursor cursor(arrays, count);
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::size_t begin = b * per_bucket;
      cursor.for_each(begin, std::min(per_bucket, total - begin), [&](const float* data, std::size_t, std::size_t n) {
        amax_bits_[b] = std::max(amax_bits_[b], detail::magnitude_bits(amax_n(data, n)));
      });
    }
    for (std::size_t done = 0; done < buckets; done += static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      const auto part = static_cast<int>(std::min<std::size_t>(std::numeric_limits<int>::max(), buckets - done));
      detail::mpi_check(MPI_Allreduce(MPI_IN_PLACE, amax_bits_.data() + done, part, MPI_UINT32_T, MPI_MAX, comm),
                        "MPI_Allreduce(MPI_MAX)", what);
    }
    for (std::uint32_t bits : amax_bits_) result.found_inf = result.found_inf || bits >= detail::float_infinity_bits;
  }

  const auto p = static_cast<std::size_t>(world);
  const std::size_t largest_bucket = std::min(per_bucket, total);
  const std::size_t largest_shard = (largest_bucket + p - 1) / p;
  if (!result.found_inf) {  // grown, never shrunk: later calls reuse the pages
    if (send_.size() < largest_bucket * width) send_.resize(largest_bucket * width);
    if (gathered_.size() < largest_bucket * width) gathered_.resize(largest_bucket * width);
    if (pieces_.size() < largest_shard * p * width) pieces_.resize(largest_shard * p * width);
    if (sum_.size() < largest_shard) sum_.resize(largest_shard);
  }
  send_counts_.resize(p);
  send_offsets_.resize(p);
  receive_counts_.resize(p);
  receive_offsets_.resize(p);
  detail::array_cursor encoder(arrays, count), decoder(arrays, count);
  bool local_non_finite = false;
  for (std::size_t b = 0; b < buckets && !result.found_inf; ++b) {
    const std::size_t begin = b * per_bucket, m = std::min(per_bucket, total - begin);
    const float amax = amax_bits_.empty() ? 0.0f : detail::magnitude_from_bits(amax_bits_[b]);
    const bucket_scales scale = scales_of_bucket(d, amax, world, options.average);
    encoder.for_each(begin, m, [&](const float* data, std::size_t offset, std::size_t n) {
      detail::all_reduce_encode(d, data, n, send_.data() + offset * width, scale.input);
    });
    // Reduce-scatter: shard r of the encoded bucket to rank r; rank q's piece of mine at q.
    const std::size_t mine = shard_begin(m, world, rank + 1) - shard_begin(m, world, rank);
    for (int r = 0; r < world; ++r) {
      const std::size_t s0 = shard_begin(m, world, r), size = shard_begin(m, world, r + 1) - s0;
      const auto i = static_cast<std::size_t>(r);
      send_counts_[i] = static_cast<int>(size * width);
      send_offsets_[i] = static_cast<int>(s0 * width);
      receive_counts_[i] = static_cast<int>(mine * width);
      receive_offsets_[i] = static_cast<int>(i * mine * width);
      if (r != rank) {
        result.bytes_sent += size * width + mine * width;  // my shard r, then my reduced shard
        result.bytes_received += mine * width + size * width;
      }
    }
    detail::mpi_check(MPI_Alltoallv(send_.data(), send_counts_.data(), send_offsets_.data(), MPI_BYTE, pieces_.data(),
                                    receive_counts_.data(), receive_offsets_.data(), MPI_BYTE, comm),
                      "MPI_Alltoallv", what);
    detail::all_reduce_sum(d, pieces_.data(), world, mine, 1.0f / scale.input, options.average, sum_.data());
    // The reduced shard, rounded once, straight into its place in the gathered bucket.
    unsigned char* my_place = gathered_.data() + shard_begin(m, world, rank) * width;
    local_non_finite =
        detail::all_reduce_encode_checked(d, sum_.data(), mine, my_place, scale.output) || local_non_finite;
    // All-gather: rank r's reduced shard at its offset (the same layout as the send buffer).
    detail::mpi_check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, gathered_.data(), send_counts_.data(),
                                     send_offsets_.data(), MPI_BYTE, comm),
                      "MPI_Allgatherv", what);
    decoder.for_each(begin, m, [&](float* data, std::size_t offset, std::size_t n) {
      detail::all_reduce_decode(d, gathered_.data() + offset * width, n, data, 1.0f / scale.output);
    });
    ++result.buckets;
  }
  if (!result.found_inf) {
    int local = local_non_finite ? 1 : 0, global = 0;
    detail::mpi_check(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce(MPI_MAX)", what);
    result.found_inf = global != 0;
  }
  if (result.found_inf) {  // never finite garbage: every gradient of every rank is NaN
    for (std::size_t a = 0; a < count; ++a) {
      auto* data = static_cast<float*>(arrays[a].data());
      std::fill(data, data + arrays[a].size(), std::numeric_limits<float>::quiet_NaN());
    }
  }
  return result;
}

// One call with buffers of its own (mpi_gradient_all_reducer keeps them between calls).
inline all_reduce_result all_reduce_gradients(const gradient_view* arrays, std::size_t count,
                                              const all_reduce_options& options = {}, MPI_Comm comm = MPI_COMM_WORLD) {
  return mpi_gradient_all_reducer(options, comm).reduce(arrays, count);
}

inline all_reduce_result all_reduce_gradients(const std::vector<gradient_view>& arrays,
                                              const all_reduce_options& options = {}, MPI_Comm comm = MPI_COMM_WORLD) {
  return all_reduce_gradients(arrays.data(), arrays.size(), options, comm);
}

inline all_reduce_result all_reduce_gradients(std::initializer_list<gradient_view> arrays,
                                              const all_reduce_options& options = {}, MPI_Comm comm = MPI_COMM_WORLD) {
  return all_reduce_gradients(arrays.begin(), arrays.size(), options, comm);
}

}  // namespace mixprec
