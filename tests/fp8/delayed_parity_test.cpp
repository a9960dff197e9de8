// delayed_scaler against plain transcriptions of Transformer Engine's delayed-scaling update,
// step by step over long random traces: every scale and every history slot must have the same
// bits after every update.
//
// Transcribed here (not shared with the library), in TE's own data layout (an amax_history of
// amax_history_len rows × N tensors, row 0 the current step):
//   - the fused update, transformer_engine/common/recipe/delayed_scaling.cu,
//     amax_and_scale_update_impl::kernel_bulk, with its CUDA block of 256 threads simulated
//     (chunked in-place roll, per-thread fmaxf, shared-memory tree reduction), fed the amax
//     reduction buffer as amax_and_scale_update_after_reduction does;
//   - the unfused update TE runs for a callable amax_compute_algo
//     (transformer_engine/pytorch: _amax_and_scale_update, _compute_amax_and_update_history,
//     _update_amax_history, _default_sf_compute);
//   - the amax recording of TE's quantise kernels, atomicMaxFloat (common/utils.cuh): an atomic
//     max of the float's bits as an int.
//
// The traces cover amax 0 (tensors that saw no data), inf, NaN, subnormals, amaxes near FLT_MIN,
// amaxes whose fp8_max / amax overflows, FLT_MAX, several records per step, history lengths from
// 1 to above the 256-thread block (wrap-around many times), margins, both built-in algorithms and
// a callable, and a simulated MAX reduction over three processes.  The unit run uses short
// traces; "[.exhaustive]" runs the long ones (CTest: fp8_delayed_parity_long_traces).
#include <mixprec/scaling/fp8/delayed_scaler.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "float_bits.hpp"

namespace {

using namespace mixprec;

enum class te_algo { max, most_recent };

// TE's state for N tensors: amax_history[row * N + tensor], scale[tensor].
struct te_state {
  std::size_t length, tensors;
  std::vector<float> amax_history, scale;
  te_state(std::size_t l, std::size_t n) : length(l), tensors(n), amax_history(l * n, 0.0f), scale(n, 1.0f) {}
  float& at(std::size_t row, std::size_t tensor) { return amax_history[row * tensors + tensor]; }
};

// atomicMaxFloat(addr, value): atomicMax(reinterpret_cast<int*>(addr), __float_as_int(value)).
void te_record(te_state& s, std::size_t tensor, float amax) {
  float& slot = s.at(0, tensor);
  const auto old_bits = static_cast<std::int32_t>(bits_of(slot));
  const auto new_bits = static_cast<std::int32_t>(bits_of(std::fabs(amax)));  // TE's kernels record fabsf maxima
  if (new_bits > old_bits) slot = float_from_bits(static_cast<std::uint32_t>(new_bits));
}

// kernel_bulk for one tensor (`count`), block of bsize threads; buffer = the reduced amaxes or null.
void te_kernel_bulk(te_state& s, const float* amax_reduction_buffer, te_algo algo, float scaled_max) {
  constexpr std::size_t bsize = 256;
  const std::size_t length = s.length;
  for (std::size_t count = 0; count < s.tensors; ++count) {
    float thread_amax[bsize];
    for (float& a : thread_amax) a = 0;
    const float last_amax = (amax_reduction_buffer != nullptr && amax_reduction_buffer[count] != 0.0f)
                                ? amax_reduction_buffer[count]
                                : s.at(0, count);
    if (last_amax != 0.0f) {
      for (std::size_t off = 0; off < length; off += bsize) {
        float a_of[bsize];
        for (std::size_t tid = 0; tid < bsize; ++tid) {
          const std::size_t i = off + tid;
          float a = 0;
          if (i < length) {
            a = (i < length - 1) ? s.at(i + 1, count) : last_amax;
            thread_amax[tid] = std::fmax(thread_amax[tid], a);
          }
          a_of[tid] = a;
        }
        // __syncthreads(): every thread has read before any writes
        for (std::size_t tid = 0; tid < bsize; ++tid) {
          const std::size_t i = off + tid;
          if (i < length) s.at(i, count) = (i > 0) ? a_of[tid] : 0;
        }
      }
    }
    float amax = 0;
    if (algo == te_algo::most_recent) {
      amax = last_amax;
    } else {
      float shared_amax[bsize];
      for (std::size_t tid = 0; tid < bsize; ++tid) shared_amax[tid] = thread_amax[tid];
      for (std::size_t off = bsize / 2; off > 0; off /= 2) {
        for (std::size_t tid = 0; tid < off; ++tid)
          shared_amax[tid] = std::fmax(shared_amax[tid], shared_amax[tid + off]);
      }
      amax = shared_amax[0];
    }
    float scale;
    if (std::isfinite(amax) && amax > 0) {
      scale = scaled_max / amax;
    } else {
      scale = s.scale[count];
    }
    if (std::isinf(scale)) scale = std::numeric_limits<float>::max();
    s.scale[count] = scale;
  }
}

// The unfused path: amax = amax_compute_algo(amax_history) (per tensor here), then
// _update_amax_history (torch.roll(-1, 0) when length > 1, row 0 = 0), then _default_sf_compute.
template <class AmaxOfColumn>
void te_unfused_update(te_state& s, AmaxOfColumn amax_of_column, float fp8_max, int margin) {
  std::vector<float> amax(s.tensors);
  for (std::size_t t = 0; t < s.tensors; ++t) {
    std::vector<float> column(s.length);
    for (std::size_t row = 0; row < s.length; ++row) column[row] = s.at(row, t);
    amax[t] = amax_of_column(column);
  }
  if (s.length > 1) {
    const std::vector<float> old = s.amax_history;
    for (std::size_t row = 0; row < s.length; ++row) {
      for (std::size_t t = 0; t < s.tensors; ++t) s.at(row, t) = old[((row + 1) % s.length) * s.tensors + t];
    }
  }
  for (std::size_t t = 0; t < s.tensors; ++t) s.at(0, t) = 0.0f;
  for (std::size_t t = 0; t < s.tensors; ++t) {
    float sf = (fp8_max / amax[t]) / std::ldexp(1.0f, margin);
    sf = amax[t] > 0.0f ? sf : s.scale[t];
    sf = std::isfinite(amax[t]) ? sf : s.scale[t];
    sf = std::isinf(sf) ? std::numeric_limits<float>::max() : sf;
    s.scale[t] = sf;
  }
}

// A callable amax algorithm: the largest of the current slot and the 4 slots of the latest steps,
// NaN-propagating (so that NaN reaches the scale rule).
float recent_window(const float* history, std::size_t length) {
  float amax = history[0];
  for (std::size_t k = 1; k <= 4 && k < length; ++k) {
    const float a = history[length - k];
    amax = std::isnan(a) || a > amax ? a : amax;
  }
  return amax;
}

float draw_amax(std::mt19937_64& random) {
  const float big = std::numeric_limits<float>::max(), tiny = std::numeric_limits<float>::min();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double u = unit(random);
  if (u < 0.15) return 0.0f;  // the tensor saw no data this step
  if (u < 0.18) return std::numeric_limits<float>::quiet_NaN();
  if (u < 0.21) return std::numeric_limits<float>::infinity();
  if (u < 0.25) return float_from_bits(1 + static_cast<std::uint32_t>(random() % 0x7FFFFF));  // subnormal
  if (u < 0.30) return tiny * static_cast<float>(0.5 + 4 * unit(random));                     // near FLT_MIN
  if (u < 0.35) return 448.0f / big * static_cast<float>(unit(random));  // fp8_max / amax overflows
  if (u < 0.37) return big;
  if (u < 0.40) return static_cast<float>(std::exp(unit(random) * 88.0));  // up to ~1e38
  return static_cast<float>(std::exp((unit(random) - 0.5) * 60.0));        // 1e-13 .. 1e13
}

struct trace_config {
  std::size_t length, tensors, steps;
  int margin;
  amax_algorithm algorithm;
  fp8_format format;
  fp8_pass pass;
  int processes;  // > 1: the amaxes of each step are reduced (MAX) over simulated processes
};

// Runs one trace through delayed_scaler and through the transcription; returns the number of
// (step, tensor) pairs compared.
std::size_t run_trace(const trace_config& c, std::uint64_t seed) {
  delayed_scaling recipe;
  recipe.margin = c.margin;
  recipe.amax_history_len = static_cast<int>(c.length);
  recipe.amax_compute_algo = c.algorithm;
  recipe.format = c.format;
  if (c.algorithm == amax_algorithm::custom) recipe.amax_function = recent_window;
  delayed_scaler scaler(recipe, c.pass, c.tensors);
  te_state te(c.length, c.tensors);
  const float fp8_max_value = fp8_max(element_of(c.format, c.pass));
  const float scaled_max = fp8_max_value * std::pow(2.f, static_cast<float>(-c.margin));  // TE's host expression
  std::mt19937_64 random(seed);
  std::size_t compared = 0;
  for (std::size_t step = 0; step < c.steps; ++step) {
    // Each simulated process records its amaxes; this process is process 0.
    std::vector<float> reduced(c.tensors, 0.0f);
    for (int process = 0; process < c.processes; ++process) {
      te_state local(1, c.tensors);
      for (std::size_t t = 0; t < c.tensors; ++t) {
        const int records = static_cast<int>(random() % 3);  // 0: the tensor saw no data here
        for (int r = 0; r < records; ++r) {
          const float amax = draw_amax(random);
          te_record(local, t, amax);
          if (process == 0) {
            te_record(te, t, amax);
            scaler.record_amax(t, amax);
          }
        }
        reduced[t] = float_from_bits(std::max(bits_of(reduced[t]), bits_of(local.at(0, t))));
      }
    }
    if (c.algorithm == amax_algorithm::custom) {
      if (c.processes > 1) {  // split_and_copy of the reduced buffer into row 0, then the update
        for (std::size_t t = 0; t < c.tensors; ++t) te.at(0, t) = reduced[t];
      }
      te_unfused_update(
          te, [](const std::vector<float>& column) { return recent_window(column.data(), column.size()); },
          fp8_max_value, c.margin);
    } else {
      te_kernel_bulk(te, c.processes > 1 ? reduced.data() : nullptr,
                     c.algorithm == amax_algorithm::max ? te_algo::max : te_algo::most_recent, scaled_max);
    }
    if (c.processes > 1) {
      scaler.update([&](float* amax, std::size_t count) {
        REQUIRE(count == c.tensors);
        for (std::size_t t = 0; t < count; ++t)
          amax[t] = float_from_bits(std::max(bits_of(amax[t]), bits_of(reduced[t])));
      });
    } else {
      scaler.update();
    }
    for (std::size_t t = 0; t < c.tensors; ++t) {
      INFO("step " << step << ", tensor " << t << ", history length " << c.length << ", margin " << c.margin);
      REQUIRE(bits_of(scaler.scale(t)) == bits_of(te.scale[t]));
      REQUIRE(bits_of(scaler.scale_inv(t)) == bits_of(1.0f / te.scale[t]));
      std::size_t first_difference = c.length;
      for (std::size_t row = 0; row < c.length && first_difference == c.length; ++row) {
        if (bits_of(scaler.amax_history(t)[row]) != bits_of(te.at(row, t))) first_difference = row;
      }
      INFO("first differing history slot " << first_difference);
      REQUIRE(first_difference == c.length);
      ++compared;
    }
  }
  return compared;
}

void run_traces(std::size_t steps, const std::vector<std::size_t>& lengths) {
  std::size_t compared = 0;
  std::uint64_t seed = 1;
  for (const std::size_t length : lengths) {
    for (const amax_algorithm algorithm : {amax_algorithm::max, amax_algorithm::most_recent, amax_algorithm::custom}) {
      for (const int margin : {0, 2, -3}) {
        for (const int processes : {1, 3}) {
          const trace_config c{length,
                               4,
                               steps,
                               margin,
                               algorithm,
                               fp8_format::hybrid,
                               seed % 2 ? fp8_pass::forward : fp8_pass::backward,
                               processes};
          compared += run_trace(c, seed++);
        }
      }
    }
  }
  INFO(compared << " (step, tensor) states compared");
  CHECK(compared > 0);
}

}  // namespace

TEST_CASE("delayed scaling matches TE's transcribed update step by step (short traces)", "[parity]") {
  run_traces(600, {1, 2, 3, 16, 255, 256, 257, 300});
}

TEST_CASE("delayed scaling matches TE's transcribed update step by step (long traces)", "[.exhaustive]") {
  run_traces(4000, {1, 2, 5, 300, 1024});
}

TEST_CASE("a tensor that saw no data neither rolls nor changes its scale (fused rule)", "[parity]") {
  delayed_scaling recipe;
  recipe.amax_history_len = 4;
  delayed_scaler scaler(recipe, fp8_pass::forward, 2);
  scaler.record_amax(0, 2.0f);
  scaler.record_amax(1, 4.0f);
  scaler.update();
  CHECK(scaler.scale(0) == 224.0f);
  CHECK(scaler.scale(1) == 112.0f);
  scaler.record_amax(1, 8.0f);  // tensor 0 is unused this step
  scaler.update();
  CHECK(scaler.scale(0) == 224.0f);
  CHECK(scaler.amax_history(0)[3] == 2.0f);  // not rolled: the previous amax is still the newest
  CHECK(scaler.amax_history(1)[2] == 4.0f);
  CHECK(scaler.amax_history(1)[3] == 8.0f);
  CHECK(scaler.scale(1) == 56.0f);
  // With a callable (TE's unfused path) the history rolls every step.
  recipe.amax_compute_algo = amax_algorithm::custom;
  recipe.amax_function = recent_window;
  delayed_scaler rolling(recipe, fp8_pass::forward, 1);
  rolling.record_amax(0, 2.0f);
  rolling.update();
  rolling.update();
  CHECK(rolling.amax_history(0)[2] == 2.0f);
  CHECK(rolling.amax_history(0)[3] == 0.0f);
}
