// The gradient all-reduce over MPI (distributed/mpi_all_reduce.hpp), under mpirun -np 2 and
// -np 4 (tests/distributed/CMakeLists.txt).  Every rank draws every rank's gradients from seeds
// it knows, so each can compute the expected result alone:
//
//   - every communication dtype, averaged and summed, over arrays that are empty, smaller than a
//     bucket and larger than several, with buckets from one float per rank to the default:
//     bit-identical to emulate_all_reduce (all_reduce.hpp) on every rank; float32 bit-identical
//     to the float sum in rank order; bfloat16, float16 and fp8 within the documented bound
//     element by element; the same bits on every rank; the same bits again when the ranks
//     arrive in another order (a rank-dependent delay) through a reused mpi_gradient_all_reducer,
//     and the bytes it reports;
//   - an inf or NaN on one rank, and a float16 overflow: found_inf on every rank, every gradient
//     NaN;
//   - no arrays, or only empty ones: nothing exchanged;
//   - arrays of different total lengths on the ranks, a null pointer on one rank, a bucket too
//     small: every rank throws, with the message naming the values.
//
// Each rank counts its failures; the counts are summed and every rank exits 1 if any failed.
#include <mixprec/distributed/mpi_all_reduce.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "all_reduce_options_of.hpp"
#include "float_bits.hpp"
#include "mpi_checks.hpp"

using namespace mixprec;
using namespace mpi_checks;

namespace {

// The array lengths every rank uses: empty, tiny and large ones.
const std::vector<std::size_t> lengths = {0, 1, 3, 0, 1000, 17, 4099, 0, 2, 20000};

// Rank r's arrays, drawn from a generator seeded by (seed, r): every rank can draw every rank's.
std::vector<std::vector<float>> arrays_of(int r, std::uint64_t seed) {
  std::mt19937_64 random(seed * 1000 + static_cast<std::uint64_t>(r));
  std::vector<std::vector<float>> arrays;
  for (std::size_t n : lengths) {
    std::vector<float> a(n);
    for (float& x : a) {
      const auto kind = random() % 16;
      const float mantissa = 1.0f + static_cast<float>(random() % 4096) / 4096.0f;
      const float sign = random() % 2 ? -1.0f : 1.0f;
      x = kind == 0 ? 0.0f : sign * std::ldexp(mantissa, kind == 1 ? -40 : static_cast<int>(random() % 27) - 20);
    }
    arrays.push_back(std::move(a));
  }
  return arrays;
}

std::vector<float> flatten(const std::vector<std::vector<float>>& arrays) {
  std::vector<float> flat;
  for (const auto& a : arrays) flat.insert(flat.end(), a.begin(), a.end());
  return flat;
}

std::vector<gradient_view> views_of(std::vector<std::vector<float>>& arrays) {
  std::vector<gradient_view> views;
  for (auto& a : arrays) views.emplace_back(a.data(), a.size());
  return views;
}

// True when the n floats are the same bits on every rank.
bool same_on_every_rank(const std::vector<float>& values) {
  std::uint64_t hash = 1469598103934665603u, agreed[2];
  for (float x : values) hash = (hash ^ bits_of(x)) * 1099511628211u;
  const std::uint64_t mine[2] = {hash, ~hash};
  MPI_Allreduce(mine, agreed, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return agreed[0] == ~agreed[1];
}

void matches_the_emulation(dtype d, std::size_t bucket_bytes, bool average, std::uint64_t seed) {
  const std::string label = std::string(to_string(d)) + ", bucket_bytes " + std::to_string(bucket_bytes) +
                            (average ? ", averaged" : ", summed");
  std::vector<std::vector<float>> flat_ranks;
  for (int r = 0; r < world; ++r) flat_ranks.push_back(flatten(arrays_of(r, seed)));
  const std::size_t n = flat_ranks[0].size();
  std::vector<const float*> pointers;
  for (const auto& f : flat_ranks) pointers.push_back(f.data());
  const all_reduce_options options = options_of(d, bucket_bytes, average);
  std::vector<float> expected(n);
  const bool expected_inf = emulate_all_reduce(pointers.data(), world, n, options, expected.data());

  auto mine = arrays_of(rank, seed);
  auto views = views_of(mine);
  const all_reduce_result result = all_reduce_gradients(views, options, MPI_COMM_WORLD);
  const std::vector<float> got = flatten(mine);
  expect(!result.found_inf && !expected_inf, label + ": found_inf on finite gradients");
  std::size_t differing = 0;
  for (std::size_t i = 0; i < n; ++i) differing += bits_of(got[i]) != bits_of(expected[i]);
  expect(differing == 0, label + ": " + std::to_string(differing) + " elements differ from the emulation");
  expect(same_on_every_rank(got), label + ": the result differs across ranks");
  const std::size_t per_bucket = bucket_bytes / 4;
  expect(result.buckets == (n + per_bucket - 1) / per_bucket, label + ": bucket count");
  // Bytes: each element's code travels (p-1)/p of the time in each direction, twice.
  const std::size_t width = d == dtype::float32 ? 4 : d == dtype::bfloat16 || d == dtype::float16 ? 2 : 1;
  std::size_t total_sent = 0, total_received = 0;
  MPI_Allreduce(&result.bytes_sent, &total_sent, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&result.bytes_received, &total_received, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  expect(total_sent == total_received && total_sent == 2 * n * width * static_cast<std::size_t>(world - 1),
         label + ": bytes sent " + std::to_string(total_sent) + ", received " + std::to_string(total_received));

  if (d == dtype::float32) {
    std::size_t not_the_sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      float s = flat_ranks[0][i];
      for (int r = 1; r < world; ++r) s += flat_ranks[static_cast<std::size_t>(r)][i];
      if (average) s /= static_cast<float>(world);
      not_the_sum += bits_of(s) != bits_of(got[i]);
    }
    expect(not_the_sum == 0, label + ": not the float sum in rank order");
  } else {
    std::size_t violations = 0;
    for (std::size_t b = 0; b * per_bucket < n; ++b) {
      const std::size_t end = std::min(n, (b + 1) * per_bucket);
      float amax = 0;
      for (std::size_t i = b * per_bucket; i < end; ++i) {
        for (const auto& f : flat_ranks) amax = std::max(amax, std::fabs(f[i]));
      }
      const bucket_scales scale = scales_of_bucket(d, amax, world, average);
      const all_reduce_bound_terms terms = all_reduce_terms(d, scale.input, scale.output);
      for (std::size_t i = b * per_bucket; i < end; ++i) {
        double exact = 0, magnitude = 0;
        for (const auto& f : flat_ranks) exact += f[i], magnitude += std::fabs(f[i]);
        const double error = std::fabs(static_cast<double>(got[i]) - exact / (average ? world : 1));
        violations += error > all_reduce_error_bound(terms, world, average, exact, magnitude);
      }
    }
    expect(violations == 0, label + ": " + std::to_string(violations) + " elements beyond the bound");
  }

  // Again, with the ranks arriving in another order, through one reducer whose buffers every
  // case reuses (grown for the largest bucket so far): the same bits.
  static mpi_gradient_all_reducer reducer;
  reducer.set_options(options);
  auto again = arrays_of(rank, seed);
  auto again_views = views_of(again);
  std::this_thread::sleep_for(std::chrono::milliseconds(5 * (world - 1 - rank)));
  reducer.reduce(again_views);
  const std::vector<float> second = flatten(again);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < n; ++i) changed += bits_of(second[i]) != bits_of(got[i]);
  expect(changed == 0,
         label + ": a second run with another arrival order changed " + std::to_string(changed) + " elements");
}

void non_finite_on_one_rank_is_found_everywhere() {
  for (dtype d : {dtype::float32, dtype::bfloat16, dtype::float16, dtype::float8_e4m3fn, dtype::float8_e5m2}) {
    for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 70000.0f}) {
      if (bad == 70000.0f && d != dtype::float16) continue;  // finite, only float16 overflows
      auto mine = arrays_of(rank, 3);
      if (rank == world - 1) mine[6][4000] = bad;  // in the second bucket of that array
      auto views = views_of(mine);
      const auto result = all_reduce_gradients(views, options_of(d, 4 * 1024, false), MPI_COMM_WORLD);
      const std::string label = std::string(to_string(d)) + " with " + std::to_string(bad) + " on the last rank";
      expect(result.found_inf, label + ": found_inf is false");
      std::size_t finite = 0;
      for (const auto& a : mine) {
        for (float x : a) finite += !std::isnan(x);
      }
      expect(finite == 0, label + ": " + std::to_string(finite) + " gradients are not NaN");
    }
  }
}

void nothing_to_reduce() {
  for (dtype d : {dtype::float32, dtype::bfloat16, dtype::float8_e4m3fn}) {
    const auto none = all_reduce_gradients(nullptr, 0, options_of(d, 64, true), MPI_COMM_WORLD);
    expect(!none.found_inf && none.buckets == 0 && none.bytes_sent == 0, "no arrays: nothing exchanged");
    std::vector<float> empty;
    const auto empties = all_reduce_gradients({{empty.data(), 0}, {empty.data(), 0}}, options_of(d, 64, true));
    expect(!empties.found_inf && empties.buckets == 0 && empties.bytes_received == 0,
           "empty arrays: nothing exchanged");
  }
}

void bad_input_throws_on_every_rank() {
  // A different total on the last rank: every rank names the range.
  std::vector<float> g(100 + (rank == world - 1 ? 4 : 0), 1.0f);
  MPI_CHECK_THROWS(invalid_argument, "the ranks' gradient arrays hold between 100 and 104 elements in total",
                   "different lengths", all_reduce_gradients({{g.data(), g.size()}}));
  // Different options on rank 0.
  std::vector<float> h(10, 1.0f);
  const all_reduce_options different = options_of(rank == 0 ? dtype::float16 : dtype::bfloat16, 1024, true);
  MPI_CHECK_THROWS(invalid_argument, "the ranks passed different options", "different options",
                   all_reduce_gradients({{h.data(), h.size()}}, different));
  // A null pointer on rank 0: it names it, the others learn that a rank refused.
  float* array = rank == 0 ? nullptr : h.data();
  if (rank == 0) {
    MPI_CHECK_THROWS(invalid_argument, "array 0 of 1 is a null pointer with size 10", "null pointer on rank 0",
                     all_reduce_gradients({{array, 10}}));
  } else {
    MPI_CHECK_THROWS(agreement_error, "another rank rejected its arguments", "null pointer on another rank",
                     all_reduce_gradients({{array, 10}}));
  }
  // A bucket smaller than one float per rank, everywhere.
  MPI_CHECK_THROWS(invalid_argument, "is below " + std::to_string(4 * world) + " (one float per rank of",
                   "bucket too small",
                   all_reduce_gradients({{h.data(), h.size()}}, options_of(dtype::float32, 4, true)));
  // After the errors, the communicator still works.
  matches_the_emulation(dtype::bfloat16, 4096, true, 77);
}

}  // namespace

int main(int argc, char** argv) {
  return run_under_mpi(argc, argv, "mpi_all_reduce_test", [] {
    std::uint64_t seed = 1;
    for (dtype d : {dtype::float32, dtype::bfloat16, dtype::float16, dtype::float8_e4m3fn, dtype::float8_e5m2}) {
      for (bool average : {true, false}) {
        for (std::size_t bucket_bytes : {sizeof(float) * static_cast<std::size_t>(world), std::size_t{4 * 999},
                                         std::size_t{4 * 4096}, std::size_t{25} << 20}) {
          matches_the_emulation(d, bucket_bytes, average, seed++);
        }
      }
    }
    non_finite_on_one_rank_is_found_everywhere();
    nothing_to_reduce();
    bad_input_throws_on_every_rank();
  });
}
