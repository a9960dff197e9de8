// Failure counting for the tests that run under mpirun: each rank counts its failures and prints
// the first 20; the counts are summed over MPI_COMM_WORLD at the end.
#pragma once

#include <mixprec/distributed/mpi.hpp>

#include <cstdio>
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

}  // namespace mpi_checks
