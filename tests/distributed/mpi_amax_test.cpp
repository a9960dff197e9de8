// Amax agreement for the fp8 recipes over MPI (distributed/mpi.hpp: mpi_reduce_amax,
// mpi_agreement::reduce_amax), under mpirun -np 2 and -np 4 (tests/distributed/CMakeLists.txt):
//
//   - the reduction gives every rank the element-wise maximum, NaN wherever any rank had a NaN,
//     inf, zeros where every rank had zero, identically on every rank;
//   - delayed_scaler::update(reduce) on every rank follows, step by step, one process that saw
//     every rank's amaxes (a delayed_scaler recording them all), over a long trace with tensors
//     unused on some ranks or everywhere, inf and NaN amaxes;
//   - as a control, scalers updated without the reduction do drift apart.
//
// Each rank counts its failures; the counts are summed and every rank exits 1 if any failed.
#include <mixprec/distributed/mpi.hpp>
#include <mixprec/scaling/fp8/delayed_scaler.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "float_bits.hpp"
#include "mpi_checks.hpp"

using namespace mixprec;
using namespace mpi_checks;

namespace {

// The amax rank r records for tensor t at a step: drawn from a generator every rank seeds alike,
// so that every rank knows every rank's values.
float amax_of(std::mt19937_64& random) {
  const auto kind = random() % 10;
  if (kind < 2) return 0.0f;  // unused on this rank
  if (kind == 2) return std::numeric_limits<float>::quiet_NaN();
  if (kind == 3) return std::numeric_limits<float>::infinity();
  return std::ldexp(1.0f + static_cast<float>(random() % 1000) / 1000.0f, static_cast<int>(random() % 60) - 30);
}

void reduction_is_the_maximum_everywhere() {
  constexpr std::size_t count = 7;
  float values[count] = {static_cast<float>(rank + 1),  // max = world
                         rank == world - 1 ? std::numeric_limits<float>::quiet_NaN() : 1.0f,
                         0.0f,
                         rank == 0 ? std::numeric_limits<float>::infinity() : 2.0f,
                         -static_cast<float>(rank + 1),  // magnitudes: max = world
                         rank == 1 ? std::numeric_limits<float>::denorm_min() : 0.0f,
                         rank == 0 ? -std::numeric_limits<float>::quiet_NaN() : 3.0f};
  mpi_reduce_amax(values, count, MPI_COMM_WORLD);
  expect(values[0] == static_cast<float>(world), "the maximum of rank + 1 is the rank count");
  expect(std::isnan(values[1]) && !std::signbit(values[1]), "a NaN on the last rank gives NaN everywhere");
  expect(values[2] == 0.0f && !std::signbit(values[2]), "zeros everywhere stay zero");
  expect(values[3] == std::numeric_limits<float>::infinity(), "inf on rank 0 gives inf everywhere");
  expect(values[4] == static_cast<float>(world), "negative inputs are taken as magnitudes");
  expect(values[5] == std::numeric_limits<float>::denorm_min(), "a subnormal amax survives");
  expect(std::isnan(values[6]) && !std::signbit(values[6]), "a negative NaN gives a positive NaN");
  // Identical bits on every rank: the maximum of each word and of its complement agree.
  std::uint32_t words[2 * count], agreed[2 * count];
  for (std::size_t i = 0; i < count; ++i) {
    words[i] = bits_of(values[i]);
    words[count + i] = ~words[i];
  }
  MPI_Allreduce(words, agreed, 2 * count, MPI_UINT32_T, MPI_MAX, MPI_COMM_WORLD);
  for (std::size_t i = 0; i < count; ++i)
    expect(agreed[i] == ~agreed[count + i], "the reduced bits differ across ranks");
  float none = 0.0f;
  mpi_agreement(MPI_COMM_WORLD).reduce_amax(&none, 0);  // a count of 0 is a no-op collective
}

void scalers_follow_one_process_that_saw_everything(amax_algorithm algorithm, int steps, std::uint64_t seed) {
  constexpr std::size_t tensors = 5;
  delayed_scaling recipe;
  recipe.amax_history_len = 8;
  recipe.amax_compute_algo = algorithm;
  if (algorithm == amax_algorithm::custom) {
    recipe.amax_function = [](const float* history, std::size_t length) {
      return std::fmax(history[0], history[length - 1]);
    };
  }
  delayed_scaler scaler(recipe, fp8_pass::backward, tensors);
  delayed_scaler reference(recipe, fp8_pass::backward, tensors);
  delayed_scaler alone(recipe, fp8_pass::backward, tensors);  // control: no reduction
  const mpi_agreement agreement(MPI_COMM_WORLD);
  std::mt19937_64 random(seed);
  bool drifted = false;
  for (int step = 0; step < steps; ++step) {
    for (int r = 0; r < world; ++r) {
      for (std::size_t t = 0; t < tensors; ++t) {
        if (t == tensors - 1 && step % 3 != 0) continue;  // unused on every rank in most steps
        const float amax = amax_of(random);
        reference.record_amax(t, amax);
        if (r == rank) {
          scaler.record_amax(t, amax);
          alone.record_amax(t, amax);
        }
      }
    }
    scaler.update([&](float* amax, std::size_t count) { agreement.reduce_amax(amax, count); });
    reference.update();
    alone.update();
    for (std::size_t t = 0; t < tensors; ++t) {
      expect(bits_of(scaler.scale(t)) == bits_of(reference.scale(t)),
             "step " + std::to_string(step) + ", tensor " + std::to_string(t) + ": scale differs from the reference");
      drifted = drifted || bits_of(alone.scale(t)) != bits_of(reference.scale(t));
    }
  }
  expect(scaler.save_state() == reference.save_state(), "the saved states differ from the reference");
  if (world > 1) expect(drifted, "control: scalers without the reduction never drifted, the test proves nothing");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  reduction_is_the_maximum_everywhere();
  scalers_follow_one_process_that_saw_everything(amax_algorithm::max, 2000, 21);
  scalers_follow_one_process_that_saw_everything(amax_algorithm::most_recent, 2000, 22);
  scalers_follow_one_process_that_saw_everything(amax_algorithm::custom, 2000, 23);
  const int total = total_failures();
  if (rank == 0)
    std::printf("mpi amax agreement on %d ranks: %s (%d failures)\n", world, total == 0 ? "OK" : "FAILED", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
