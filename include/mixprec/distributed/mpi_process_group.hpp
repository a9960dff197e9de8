// A precision_session's data-parallel process group over MPI (session/process_group.hpp): the
// gradient all-reduce of mpi_all_reduce.hpp (its buffers kept between steps) and the replicas'
// fingerprint comparison.
//
//   #include <mixprec/distributed/mpi_process_group.hpp>   // includes <mpi.h>
//   amp.use_process_group(std::make_shared<mixprec::mpi_process_group>(MPI_COMM_WORLD));
//
// Every rank of the communicator must make the same calls in the same order (each train_step is
// collective once a group is attached).  The communicator stays the caller's: MPI_Finalize after
// the last collective call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../session/process_group.hpp"
#include "mpi.hpp"
#include "mpi_all_reduce.hpp"

namespace mixprec {

class mpi_process_group final : public process_group {
 public:
  explicit mpi_process_group(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm), reducer_({}, comm) {
    const char* what = "mpi_process_group";
    detail::require_mpi_running(what);
    detail::mpi_check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank", what);
    detail::mpi_check(MPI_Comm_size(comm, &size_), "MPI_Comm_size", what);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm communicator() const noexcept { return comm_; }

  all_reduce_result all_reduce(const gradient_view* arrays, std::size_t count,
                               const all_reduce_options& options) override {
    reducer_.set_options(options);
    return reducer_.reduce(arrays, count);
  }

  // mpi_reduce_amax over this communicator: one MPI_Allreduce(MPI_MAX) of the float bits.
  void reduce_amax(float* amax, std::size_t count) override { mpi_reduce_amax(amax, count, comm_); }

  // One MPI_Allreduce(MPI_MAX) of the count, the fingerprints and their complements: a
  // fingerprint is the same on every rank when its maximum equals the complement of the maximum
  // of its complements (its minimum).
  std::size_t first_difference(const std::uint64_t* fingerprints, std::size_t count) override {
    const char* what = "mpi_process_group::first_difference";
    detail::require_mpi_running(what);
    std::uint64_t counts[2] = {static_cast<std::uint64_t>(count), ~static_cast<std::uint64_t>(count)};
    detail::mpi_check(MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_UINT64_T, MPI_MAX, comm_), "MPI_Allreduce(MPI_MAX)",
                      what);
    if (counts[0] != ~counts[1]) {
      throw invalid_argument(std::string(what) + ": the ranks compare between " + std::to_string(~counts[1]) + " and " +
                             std::to_string(counts[0]) + " parameters; every rank must register the same parameters");
    }
    words_.resize(2 * count);
    for (std::size_t i = 0; i < count; ++i) {
      words_[i] = fingerprints[i];
      words_[count + i] = ~fingerprints[i];
    }
    for (std::size_t done = 0; done < words_.size();) {  // in pieces of at most INT_MAX words
      const std::size_t part = std::min<std::size_t>(words_.size() - done, std::size_t{1} << 30);
      detail::mpi_check(
          MPI_Allreduce(MPI_IN_PLACE, words_.data() + done, static_cast<int>(part), MPI_UINT64_T, MPI_MAX, comm_),
          "MPI_Allreduce(MPI_MAX)", what);
      done += part;
    }
    for (std::size_t i = 0; i < count; ++i) {
      if (words_[i] != ~words_[count + i]) return i;
    }
    return count;
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 0;
  mpi_gradient_all_reducer reducer_;
  std::vector<std::uint64_t> words_;
};

}  // namespace mixprec
