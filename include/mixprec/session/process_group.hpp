// What a precision_session needs of a data-parallel process group (issue 19): the processes that
// each train a replica of one model on their share of every batch.  The session calls the group
// between the backward passes and the unscale, once per optimizer step (after every micro-batch,
// never on those that do not step), agrees on the fp8 layers' amaxes at the end of every step,
// and, every recipe weight_check_interval steps, compares the replicas' parameters.
//
//   auto group = std::make_shared<mixprec::mpi_process_group>(MPI_COMM_WORLD);  // distributed/
//   amp.use_process_group(group);            // before the first train_step, on every rank
//   amp.train_step(forward, backward);       // forward and backward on this rank's shard
//
// The interface has no MPI in it, so that the session compiles without <mpi.h>;
// distributed/mpi_process_group.hpp implements it over MPI.  Another communicator (NCCL, Gloo, a
// test's threads) implements the three collectives below.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../detail/fingerprint.hpp"
#include "../scaling/all_reduce_options.hpp"
#include "../scaling/unscale.hpp"

namespace mixprec {

class process_group {
 public:
  virtual ~process_group() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Collective: every float32 gradient becomes the mean (options.average) or the sum over the
  // ranks, bit-identical on every rank, communicated as options says (all_reduce.hpp gives the
  // order and the bound).  A gradient that is not finite on any rank makes every gradient of
  // every rank NaN and found_inf true, so that every rank's unscale skips the step.
  virtual all_reduce_result all_reduce(const gradient_view* arrays, std::size_t count,
                                       const all_reduce_options& options) = 0;

  // Collective: every amax[i] becomes its maximum over the ranks, a NaN winning (the fp8
  // recipes' amax agreement: Transformer Engine reduces the amaxes over the data-parallel group
  // so that every replica's scales are the same).  The session calls it once per step with this
  // step's amaxes of every fp8 tensor, forward tensors first.  If it throws, nothing has changed.
  virtual void reduce_amax(float* amax, std::size_t count) = 0;

  // Collective: the index of the first of `count` fingerprints that is not the same on every
  // rank, or `count` when all are.  Every rank must pass the same count (a rank that does not
  // throws, on every rank).
  virtual std::size_t first_difference(const std::uint64_t* fingerprints, std::size_t count) = 0;
};

}  // namespace mixprec
