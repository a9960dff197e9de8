// The options and the result of the data-parallel gradient all-reduce (distributed/all_reduce.hpp,
// distributed/mpi_all_reduce.hpp), in a header of their own below both the session and the
// distributed adapters: a training session names them (recipe keys reduce_dtype and bucket_bytes,
// session/process_group.hpp) without the reduction's code or MPI.
#pragma once

#include <cstddef>

#include "../dtype.hpp"

namespace mixprec {

struct all_reduce_options {
  // The dtype the gradients travel in: float32, bfloat16, float16, float8_e4m3fn or float8_e5m2.
  dtype communication = dtype::bfloat16;
  // Float gradient bytes per bucket (PyTorch DDP's bucket_cap_mb default, 25 MiB); the last
  // bucket holds the rest.  At least 4 bytes per rank, at most all_reduce_largest_bucket_bytes.
  std::size_t bucket_bytes = std::size_t{25} << 20;
  // Divide the sum by the world size (DDP's mean) or keep the sum.
  bool average = true;
};

// The largest bucket: every MPI count and displacement (in bytes) then fits an int.
constexpr std::size_t all_reduce_largest_bucket_bytes = std::size_t{1} << 30;

struct all_reduce_result {
  bool found_inf = false;          // agreed: some gradient or some reduced value was not finite
  std::size_t buckets = 0;         // messages exchanged (each one MPI_Alltoallv and one MPI_Allgatherv)
  std::size_t bytes_sent = 0;      // gradient bytes this rank sent to other ranks
  std::size_t bytes_received = 0;  // and received from them (the agreement words not counted)
};

namespace detail {

inline bool is_all_reduce_dtype(dtype d) noexcept {
  return d == dtype::float32 || d == dtype::bfloat16 || d == dtype::float16 || d == dtype::float8_e4m3fn ||
         d == dtype::float8_e5m2;
}

}  // namespace detail

}  // namespace mixprec
