// The gradient all-reduce (distributed/mpi_all_reduce.hpp) against MPI_Allreduce of floats, in the
// same run, under mpirun (issue 19, item 5).  A timed MPI program rather than Google Benchmark:
// every rank must run the same number of collectives, which Google Benchmark's adaptive
// iteration counts do not promise.
//
//   mpirun -np 2 build/.../benchmarks/mpi_all_reduce_timing [elements] [repetitions] [bucket MiB]
//
// Each rank holds `elements` float gradients (default 100 M, uniform in [-1, 1), a different
// stream per rank, regenerable by every rank).  Each repetition times every row once, round
// robin (so that a busy machine slows every row alike): it restores the gradients (untimed),
// synchronises with MPI_Barrier and times one call (of one mpi_gradient_all_reducer per row, so
// that its buffers are reused from the second repetition on); a row shows the median over the repetitions
// of the slowest rank's time, the payload bytes this rank sent and received, the ratio to the
// float MPI_Allreduce(MPI_SUM) of the same gradients, and for the mixprec rows the largest error
// against the exact mean (in double) and the largest error / documented bound (rank 0 checks
// every element; float32 must be bit-identical to the float sum in rank order).
#include <mixprec/distributed/mpi_all_reduce.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace {

// Rank r's gradients: splitmix64 keyed by the rank, mapped to [-1, 1).
void fill(std::vector<float>& g, int r) {
  std::uint64_t state = 0x9E3779B97F4A7C15u * static_cast<std::uint64_t>(r + 1);
  for (float& x : g) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    z ^= z >> 31;
    x = static_cast<float>(static_cast<double>(z >> 40) / static_cast<double>(1u << 23) - 1.0);
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One timed call of `op` after restoring the gradients: the slowest rank's seconds.
template <class Op>
double time_once(std::vector<float>& g, const std::vector<float>& original, Op&& op) {
  std::memcpy(g.data(), original.data(), g.size() * sizeof(float));
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  op();
  double t = seconds_since(t0), slowest = 0;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

double median(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : std::size_t{100'000'000};
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::size_t bucket_mib = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 25;

  std::vector<float> original(n), g(n);
  fill(original, rank);
  // Rank 0 checks every element: it regenerates every rank's gradients for the exact mean.
  std::vector<double> exact_mean, magnitude_sum;
  std::vector<float> rank_order_mean, bucket_amax;
  const std::size_t per_bucket = (bucket_mib << 20) / sizeof(float);
  if (rank == 0) {
    bucket_amax.assign((n + per_bucket - 1) / per_bucket, 0.0f);
    exact_mean.assign(n, 0.0);
    magnitude_sum.assign(n, 0.0);
    rank_order_mean.assign(n, 0.0f);
    std::vector<float> other(n);
    for (int r = 0; r < world; ++r) {
      fill(other, r);
      for (std::size_t i = 0; i < n; ++i) {
        exact_mean[i] += other[i];
        magnitude_sum[i] += std::fabs(other[i]);
        rank_order_mean[i] = r == 0 ? other[i] : rank_order_mean[i] + other[i];
        bucket_amax[i / per_bucket] = std::max(bucket_amax[i / per_bucket], std::fabs(other[i]));
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      exact_mean[i] /= world;
      rank_order_mean[i] /= static_cast<float>(world);
    }
  }

  const int count = static_cast<int>(n);
  const mixprec::dtype dtypes[] = {mixprec::dtype::float32, mixprec::dtype::bfloat16, mixprec::dtype::float16,
                                   mixprec::dtype::float8_e4m3fn, mixprec::dtype::float8_e5m2};
  constexpr std::size_t variants = 1 + std::size(dtypes);   // MPI_Allreduce first
  std::vector<mixprec::mpi_gradient_all_reducer> reducers;  // buffers reused, as a session would
  for (mixprec::dtype d : dtypes) {
    mixprec::all_reduce_options options;
    options.communication = d;
    options.bucket_bytes = bucket_mib << 20;
    reducers.emplace_back(options, MPI_COMM_WORLD);
  }
  // Round robin: every repetition times each variant once, so that a busy machine slows all alike.
  std::vector<std::vector<double>> times(variants);
  std::vector<mixprec::all_reduce_result> results(variants);
  for (int repetition = 0; repetition < repetitions; ++repetition) {
    times[0].push_back(time_once(
        g, original, [&] { MPI_Allreduce(MPI_IN_PLACE, g.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }));
    for (std::size_t v = 1; v < variants; ++v) {
      times[v].push_back(time_once(g, original, [&] { results[v] = reducers[v - 1].reduce({{g.data(), n}}); }));
    }
  }
  const double baseline = median(times[0]);
  const double nominal = 2.0 * static_cast<double>(world - 1) / world * static_cast<double>(n) * sizeof(float);
  if (rank == 0) {
    std::printf("%d ranks, %zu float gradients per rank, %zu MiB buckets, median of %d\n", world, n, bucket_mib,
                repetitions);
    std::printf(
        "| communication | time (ms) | sent + received per rank (MB) | time / MPI_Allreduce float | "
        "largest error | error / bound |\n|---|---|---|---|---|---|\n");
    std::printf("| MPI_Allreduce float (sum) | %.1f | %.0f (ring, nominal) | 1.00 | - | - |\n", baseline * 1e3,
                2 * nominal / 1e6);
  }
  for (std::size_t v = 1; v < variants; ++v) {
    const mixprec::dtype d = dtypes[v - 1];
    const double t = median(times[v]);
    time_once(g, original, [&] { reducers[v - 1].reduce({{g.data(), n}}); });  // the result to check
    if (rank != 0) continue;
    double largest = 0, worst = 0;
    std::size_t not_rank_order = 0;
    for (std::size_t b = 0; b * per_bucket < n; ++b) {
      const std::size_t end = std::min(n, (b + 1) * per_bucket);
      const mixprec::bucket_scales scale = mixprec::scales_of_bucket(d, bucket_amax[b], world, true);
      const auto terms = mixprec::all_reduce_terms(d, scale.input, scale.output);
      for (std::size_t i = b * per_bucket; i < end; ++i) {
        const double error = std::fabs(static_cast<double>(g[i]) - exact_mean[i]);
        largest = std::max(largest, error);
        const double bound =
            mixprec::all_reduce_error_bound(terms, world, true, exact_mean[i] * world, magnitude_sum[i]);
        if (bound > 0) worst = std::max(worst, error / bound);
        not_rank_order += std::memcmp(&g[i], &rank_order_mean[i], sizeof(float)) != 0;
      }
    }
    const double moved = static_cast<double>(results[v].bytes_sent + results[v].bytes_received);
    const std::string verdict =
        d == mixprec::dtype::float32
            ? (not_rank_order == 0 ? "bit-identical to the rank-order sum" : "DIFFERS from the rank-order sum")
            : std::to_string(worst);
    std::printf("| mixprec %s | %.1f | %.0f | %.2f | %.3g | %s |\n", mixprec::to_string(d), t * 1e3, moved / 1e6,
                t / baseline, largest, verdict.c_str());
  }
  MPI_Finalize();
  return 0;
}
