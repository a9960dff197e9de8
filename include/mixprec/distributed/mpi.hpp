// Agreement on found_inf over MPI (see agreement.hpp for the concept), and helpers that keep the
// scaler state of every process identical (checking it, broadcasting it on resume).
//
//   #include <mixprec/distributed/mpi.hpp>     // includes <mpi.h>: only translation units that
//                                              // include this header need MPI
//   mixprec::loss_scaler<mixprec::dynamic_scaling, mixprec::mpi_agreement> scaler{
//       mixprec::dynamic_scaling{}, {}, mixprec::mpi_agreement{MPI_COMM_WORLD}};
//
// Every unscale() / record_found_inf() is then one MPI_Allreduce of an int with MPI_MAX over the
// communicator: every process learns whether any process found inf/NaN, so all of them skip the
// same steps and apply the same back-off and growth.  Use the communicator of the processes that
// share one model replica's gradients: MPI_COMM_WORLD for pure data parallelism; with tensor or
// pipeline parallelism as well, still every process whose optimizer step must be skipped
// together (usually the world; Megatron-LM reduces found_inf over its model-parallel group after
// the data-parallel all-reduce of the gradients has already spread any inf).
//
// After a check that found inf/NaN on any process, one MPI_Allgather of each process's first
// non-finite gradient (four 64-bit words) lets every process name the same culprit: the smallest
// (array, element, rank) (first_culprit; loss_scaler.hpp, nonfinite.hpp).  A step whose
// gradients are finite everywhere makes only the MPI_Allreduce.
//
// Requirements: MPI is initialized (and not finalized) when any() runs; every process of the
// communicator makes the same sequence of checks (any() is collective).  MPI errors are fatal by
// default (MPI_ERRORS_ARE_FATAL); with MPI_ERRORS_RETURN set on the communicator, a failed call
// throws agreement_error with MPI's error string.  Thread safety is MPI's: with several threads
// calling MPI, initialize with MPI_THREAD_MULTIPLE or serialize the scaler calls.
//
// In CMake: find_package(MPI REQUIRED COMPONENTS C) and link MPI::MPI_C, or, in a C++-only project,
// set(MPI_CXX_SKIP_MPICXX ON), find_package(MPI REQUIRED COMPONENTS CXX) and link MPI::MPI_CXX (only
// the C API is used).
#pragma once

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1  // OpenMPI's deprecated C++ bindings are not needed
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../scaling/errors.hpp"
#include "../scaling/loss_scaler.hpp"
#include "../scaling/nonfinite.hpp"
#include "agreement.hpp"

namespace mixprec {

namespace detail {

inline void require_mpi_running(const char* what) {
  int finalized = 0, initialized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw agreement_error(std::string(what) + ": MPI has already been finalized");
  MPI_Initialized(&initialized);
  if (!initialized) throw agreement_error(std::string(what) + ": MPI is not initialized (call MPI_Init first)");
}

inline void mpi_check(int code, const char* call, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw agreement_error(std::string(what) + ": " + call + " failed with error " + std::to_string(code) +
                        (length > 0 ? " (" + std::string(text, static_cast<std::size_t>(length)) + ")" : ""));
}

}  // namespace detail

// found_inf agreed over an MPI communicator: MPI_Allreduce of 0/1 with MPI_MAX.
class mpi_agreement {
 public:
  mpi_agreement() noexcept : comm_(MPI_COMM_WORLD) {}
  explicit mpi_agreement(MPI_Comm comm) noexcept : comm_(comm) {}

  bool any(bool local_found_inf) const {
    detail::require_mpi_running("mpi_agreement::any");
    int local = local_found_inf ? 1 : 0, global = 0;
    detail::mpi_check(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, comm_), "MPI_Allreduce(MPI_MAX)",
                      "mpi_agreement::any (agreeing on found_inf)");
    return global != 0;
  }

  // The smallest (array, element, rank) of the processes' first non-finite gradients
  // (collective: loss_scaler calls it on every process after a check that found inf/NaN).
  std::optional<ranked_nonfinite> first_culprit(const std::optional<nonfinite_element>& local) const {
    detail::require_mpi_running("mpi_agreement::first_culprit");
    int ranks = 0;
    detail::mpi_check(MPI_Comm_size(comm_, &ranks), "MPI_Comm_size", "mpi_agreement::first_culprit");
    constexpr int words = 4;  // found, array, element, kind
    const std::uint64_t mine[words] = {local ? 1u : 0u, local ? static_cast<std::uint64_t>(local->view) : 0u,
                                       local ? static_cast<std::uint64_t>(local->element) : 0u,
                                       local ? static_cast<std::uint64_t>(local->kind) : 0u};
    std::vector<std::uint64_t> all(static_cast<std::size_t>(ranks) * words);
    detail::mpi_check(MPI_Allgather(mine, words, MPI_UINT64_T, all.data(), words, MPI_UINT64_T, comm_), "MPI_Allgather",
                      "mpi_agreement::first_culprit (agreeing on the culprit)");
    std::vector<std::optional<nonfinite_element>> locals(static_cast<std::size_t>(ranks));
    for (std::size_t r = 0; r < locals.size(); ++r) {
      const std::uint64_t* w = all.data() + r * words;
      if (w[0] == 0) continue;
      if (w[3] > static_cast<std::uint64_t>(nonfinite_kind::nan)) {
        throw agreement_error("mpi_agreement::first_culprit: rank " + std::to_string(r) + " sent kind " +
                              std::to_string(w[3]) + ", the largest is " +
                              std::to_string(static_cast<int>(nonfinite_kind::nan)) +
                              " (a process running another build of mixprec?)");
      }
      locals[r] = nonfinite_element{static_cast<std::size_t>(w[1]), static_cast<std::size_t>(w[2]),
                                    static_cast<nonfinite_kind>(w[3])};
    }
    return smallest_culprit(locals.data(), ranks);
  }

  // The fp8 recipes' amax agreement: mpi_reduce_amax over this communicator.
  void reduce_amax(float* amax, std::size_t count) const;

  MPI_Comm communicator() const noexcept { return comm_; }

 private:
  MPI_Comm comm_;
};

// Agreement on amaxes (scaling/fp8/delayed_scaler.hpp, update(reduce)): every amax[i] becomes
// its maximum over the processes of the communicator, identical on every process (collective;
// every process passes the same count).  The maximum is taken on the float bits with the sign
// cleared (MPI_Allreduce of MPI_UINT32_T with MPI_MAX): for magnitudes the integer order is the
// numeric order and NaN bits lie above infinity's, so a NaN on any process gives NaN
// everywhere, whatever MPI's reduction order (MPI_MAX on floats leaves NaN to the
// implementation).  Throws agreement_error on an MPI error.
inline void mpi_reduce_amax(float* amax, std::size_t count, MPI_Comm comm = MPI_COMM_WORLD) {
  const char* what = "mpi_reduce_amax";
  detail::require_mpi_running(what);
  if (count > 0 && amax == nullptr)
    throw agreement_error("mpi_reduce_amax: null amax pointer with count " + std::to_string(count));
  std::vector<std::uint32_t> bits = detail::amax_magnitude_bits(amax, count);
  constexpr std::size_t most_per_call = static_cast<std::size_t>(std::numeric_limits<int>::max());
  for (std::size_t done = 0; done < count; done += most_per_call) {
    const auto part = static_cast<int>(std::min(most_per_call, count - done));
    detail::mpi_check(MPI_Allreduce(MPI_IN_PLACE, bits.data() + done, part, MPI_UINT32_T, MPI_MAX, comm),
                      "MPI_Allreduce(MPI_MAX)", what);
  }
  detail::store_amax_bits(bits, amax);
}

inline void mpi_agreement::reduce_amax(float* amax, std::size_t count) const { mpi_reduce_amax(amax, count, comm_); }

namespace detail {

// The fields of a scale_state as integers (the scale by its bits), for comparison across ranks.
constexpr int mpi_state_fields = 5;
inline const char* const mpi_state_field_names[mpi_state_fields] = {"scale", "growth_tracker", "hysteresis_tracker",
                                                                    "iteration", "last_overflow_iteration"};

inline void mpi_state_words(const scale_state& s, std::uint64_t* words) noexcept {
  std::memcpy(&words[0], &s.scale, sizeof(double));
  words[1] = static_cast<std::uint64_t>(s.growth_tracker);
  words[2] = static_cast<std::uint64_t>(s.hysteresis_tracker);
  words[3] = static_cast<std::uint64_t>(s.iteration);
  words[4] = static_cast<std::uint64_t>(s.last_overflow_iteration);
}

// For each field, whether it is identical on every process (one MPI_Allreduce: the maximum of
// each word and of its complement; they are equal everywhere iff max(x) == ~max(~x)).
inline std::vector<bool> mpi_fields_agree(const scale_state& s, MPI_Comm comm, const char* what) {
  require_mpi_running(what);
  std::uint64_t local[2 * mpi_state_fields], global[2 * mpi_state_fields];
  mpi_state_words(s, local);
  for (int i = 0; i < mpi_state_fields; ++i) local[mpi_state_fields + i] = ~local[i];
  mpi_check(MPI_Allreduce(local, global, 2 * mpi_state_fields, MPI_UINT64_T, MPI_MAX, comm), "MPI_Allreduce(MPI_MAX)",
            what);
  std::vector<bool> agree(mpi_state_fields);
  for (int i = 0; i < mpi_state_fields; ++i) {
    agree[static_cast<std::size_t>(i)] = global[i] == ~global[mpi_state_fields + i];
  }
  return agree;
}

}  // namespace detail

// Collective: true when the rule state (scale, trackers, iteration counters) is identical on
// every process of the communicator.
inline bool mpi_states_agree(const scale_state& state, MPI_Comm comm = MPI_COMM_WORLD) {
  for (bool same : detail::mpi_fields_agree(state, comm, "mpi_states_agree")) {
    if (!same) return false;
  }
  return true;
}
template <class Policy, class Agreement>
bool mpi_states_agree(const loss_scaler<Policy, Agreement>& scaler, MPI_Comm comm = MPI_COMM_WORLD) {
  return mpi_states_agree(scaler.state(), comm);
}

// Collective: throws agreement_error, on every process alike, naming the fields that differ
// (a process resumed from another checkpoint, or made its own skip decisions).
template <class Policy, class Agreement>
void mpi_require_same_state(const loss_scaler<Policy, Agreement>& scaler, MPI_Comm comm = MPI_COMM_WORLD) {
  const std::vector<bool> agree = detail::mpi_fields_agree(scaler.state(), comm, "mpi_require_same_state");
  std::string differing;
  for (int i = 0; i < detail::mpi_state_fields; ++i) {
    if (!agree[static_cast<std::size_t>(i)]) {
      differing += std::string(differing.empty() ? "" : ", ") + detail::mpi_state_field_names[i];
    }
  }
  if (!differing.empty()) {
    throw agreement_error(
        "mpi_require_same_state: the loss scaler state differs across the processes of the "
        "communicator (" +
        differing + "); every process must load the same saved state and agree on found_inf");
  }
}

// Collective: every process loads the saved state of `root` (save_state()/load_state(), so the
// policy options, scale options, rule state, counters and history).  For resuming from a
// checkpoint that only the root reads.  Between iterations only, as load_state().  If the state
// cannot be loaded on a process, that process throws scaler_state_error and keeps its state.
template <class Policy, class Agreement>
void mpi_broadcast_state(loss_scaler<Policy, Agreement>& scaler, int root = 0, MPI_Comm comm = MPI_COMM_WORLD) {
  const char* what = "mpi_broadcast_state";
  detail::require_mpi_running(what);
  int rank = 0;
  detail::mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", what);
  // The root sends -1 instead of a size when it cannot save (then every process throws, and
  // none waits for bytes that never come).
  std::vector<std::uint8_t> bytes;
  int size = -1;
  std::string root_failure;
  if (rank == root) {
    try {
      bytes = scaler.save_state();
      if (bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        size = static_cast<int>(bytes.size());
      } else {
        root_failure = "the saved state is too large for one MPI_Bcast";
      }
    } catch (const error& e) {
      root_failure = e.what();
    }
  }
  detail::mpi_check(MPI_Bcast(&size, 1, MPI_INT, root, comm), "MPI_Bcast", what);
  if (size < 0) {
    throw agreement_error(std::string("mpi_broadcast_state: the root process (rank ") + std::to_string(root) +
                          ") could not save its state" + (root_failure.empty() ? "" : ": " + root_failure));
  }
  if (rank != root) bytes.resize(static_cast<std::size_t>(size));
  if (size > 0) detail::mpi_check(MPI_Bcast(bytes.data(), size, MPI_BYTE, root, comm), "MPI_Bcast", what);
  if (rank != root) scaler.load_state(bytes);
}

}  // namespace mixprec
