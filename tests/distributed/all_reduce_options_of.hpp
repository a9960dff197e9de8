// all_reduce_options from its three fields, for the all-reduce tests (with and without MPI).
#pragma once

#include <mixprec/distributed/all_reduce.hpp>

#include <cstddef>

inline mixprec::all_reduce_options options_of(mixprec::dtype d, std::size_t bucket_bytes, bool average) {
  mixprec::all_reduce_options o;
  o.communication = d;
  o.bucket_bytes = bucket_bytes;
  o.average = average;
  return o;
}
