// Failure counting for the tests that run under mpirun: each rank counts its failures and prints
// the first 20; the counts are summed over MPI_COMM_WORLD at the end.
#pragma once

#include <mixprec/distributed/mpi.hpp>

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

namespace mpi_checks {

inline int rank = 0, world = 1, failures = 0;

inline void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  if (failures <= 20) std::printf("rank %d: FAILED: %s\n", rank, what.c_str());
}

// Every rank's failures summed (collective).
inline int total_failures() {
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// main() of a test run under mpirun: MPI_Init, the checks (an exception escaping them counts as
// a failure), the failures summed over the ranks and reported by rank 0 as "<name>: <ranks>
// ranks, <failures> failures", MPI_Finalize; 0 when no rank failed, else 1.
inline int run_under_mpi(int argc, char** argv, const char* name, const std::function<void()>& checks) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  try {
    checks();
  } catch (const std::exception& e) {
    expect(false, std::string("unexpected exception: ") + e.what());
  }
  const int total = total_failures();
  if (rank == 0) std::printf("%s: %d ranks, %d failures\n", name, world, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}

// Whether f throws Exception with `fragment` in its message (anything else is printed).
template <class Exception>
bool throws_with(const std::string& fragment, const std::function<void()>& f) {
  try {
    f();
  } catch (const Exception& e) {
    if (std::string(e.what()).find(fragment) != std::string::npos) return true;
    std::printf("rank %d: unexpected message: %s\n", rank, e.what());
    return false;
  } catch (const std::exception& e) {
    std::printf("rank %d: unexpected exception: %s\n", rank, e.what());
    return false;
  }
  return false;
}

}  // namespace mpi_checks

// Checks on this rank that the statement throws `exception` with `fragment` in its message.
#define MPI_CHECK_THROWS(exception, fragment, label, ...) \
  mpi_checks::expect(mpi_checks::throws_with<exception>(fragment, [&] { __VA_ARGS__; }), label)
