// Agreement across processes on found_inf (DESIGN.md, "Loss scaling"; issue 4).
//
// Under data, tensor or pipeline parallelism every process holds part of the gradients, so one
// process may see an inf/NaN that the others do not.  If each process decided alone, one would
// skip its step and back off while the others stepped and kept their scale: the replicas of the
// model and of the scaler would drift apart for good.  loss_scaler<Policy, Agreement> therefore
// passes the local result of every inf check (unscale() or record_found_inf()) through its
// Agreement, and uses what that returns for the skip decision and for update().
//
// The Agreement concept: an object (copyable or movable) with
//
//   bool any(bool local_found_inf);   // true when ANY participating process found inf/NaN
//
// any() is a collective operation: every process calls it once per inf check, in the same order
// (same optimizer indices, same number of checks per iteration), as the scaler does when every
// process runs the same training loop.  It reports failure by throwing (agreement_error); that
// optimizer's check then stays unrecorded (a second unscale() of it is still refused), and
// update(new_scale) is the only way to close the iteration.  An error inside a collective is
// usually fatal to the whole job anyway.
//
// Given identical found_inf values, the policies are deterministic, so every process that
// starts from the same state (the same policy options and the same saved state) computes the
// same scale, trackers and statistics at every step: there is nothing else to communicate.
//
// Provided:
//   local_agreement           (scaling/loss_scaler.hpp, the default) one process: any(x) == x
//   function_agreement        (here) any callable bool(bool): the hook for any communicator
//   mpi_agreement             (distributed/mpi.hpp) MPI_Allreduce with MPI_MAX on a communicator
//   nccl_agreement            (distributed/nccl.hpp) ncclAllReduce with ncclMax on a communicator
//
// Optionally, an agreement can also agree on which gradient overflowed:
//
//   std::optional<ranked_nonfinite> first_culprit(const std::optional<nonfinite_element>& local);
//
// also collective, called by every process after each check whose agreed found_inf is true; it
// returns smallest_culprit (scaling/nonfinite.hpp) of every process's `local`, so that every
// process reports the same (array, element, rank).  mpi_agreement has it.
//
// Writing an agreement for another communicator (Gloo, oneCCL, a custom RPC, threads sharing
// one process) needs only any(): reduce the flag with a logical OR (or MAX of 0/1) over the
// processes that share the model, and return the result.  Either write a struct with that one
// member function, or wrap a lambda in function_agreement.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "../scaling/errors.hpp"
#include "../scaling/loss_scaler.hpp"

namespace mixprec {

namespace detail {

// Amax agreement (mpi_reduce_amax, nccl_agreement::reduce_amax) reduces float bits with the sign
// cleared as unsigned integers: for magnitudes the integer order is the numeric order, and every
// NaN's bits lie above infinity's.
inline std::vector<std::uint32_t> amax_magnitude_bits(const float* amax, std::size_t count) {
  std::vector<std::uint32_t> bits(count);
  if (count > 0) std::memcpy(bits.data(), amax, count * sizeof(float));
  for (std::uint32_t& b : bits) b &= 0x7FFF'FFFFu;
  return bits;
}

inline void store_amax_bits(const std::vector<std::uint32_t>& bits, float* amax) {
  if (!bits.empty()) std::memcpy(amax, bits.data(), bits.size() * sizeof(float));
}

}  // namespace detail

// An Agreement that calls a user function: `bool(bool local_found_inf)`, returning whether any
// process found inf/NaN.  A default-constructed one has no function and throws agreement_error
// when used (so that a forgotten hook fails loudly rather than silently acting as local).
class function_agreement {
 public:
  using function_type = std::function<bool(bool)>;

  function_agreement() = default;
  explicit function_agreement(function_type reduce) : reduce_(std::move(reduce)) {}

  bool any(bool local_found_inf) {
    if (!reduce_) {
      throw agreement_error("function_agreement: no reduction function was given (construct it with one)");
    }
    ++calls_;
    return reduce_(local_found_inf);
  }

  // How many times any() has been called (the collectives issued).
  long long calls() const noexcept { return calls_; }

 private:
  function_type reduce_;
  long long calls_ = 0;
};

// A loss_scaler whose found_inf goes through `reduce` (any callable bool(bool)).
template <class Policy, class Reduce>
loss_scaler<Policy, function_agreement> make_agreeing_scaler(Policy policy, Reduce&& reduce,
                                                             scaler_options options = {}) {
  return loss_scaler<Policy, function_agreement>(std::move(policy), std::move(options),
                                                 function_agreement(std::forward<Reduce>(reduce)));
}

}  // namespace mixprec
