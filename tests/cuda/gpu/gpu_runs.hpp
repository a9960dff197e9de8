// The device side of the GPU tests: functions that run the CUDA backend on host data and return
// the results, compiled by nvcc (the *_runs.cu files); gpu_test.cpp (plain C++, Catch2) computes
// the host references and compares.  Every function throws mixprec::cuda_error if CUDA fails.
#pragma once

#include <mixprec/scaling/scaling.hpp>
#include <mixprec/types.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpu_runs {

// The device this process uses (device 0), or an empty name if there is none.
struct device_info {
  std::string name;
  int capability = 0;  // 80, 89, 90, ...
};
device_info current_device();

// The formats of the conversion tests, as a runtime value.
// 8-bit and narrower, and the 16-bit formats: codes fit the uint16 outputs below (tfloat32 is in
// the bulk and compile checks instead).
enum class format_id {
  float16,
  bfloat16,
  e4m3fn,
  e5m2,
  e4m3fnuz,
  e5m2fnuz,
  e3m2fn,
  e2m3fn,
  e2m1fn,
  e8m0fnu,
  ue4m3,
  e4m3,
  e3m4,
  e4m3b11fnuz
};
constexpr format_id all_formats[] = {format_id::float16,  format_id::bfloat16,   format_id::e4m3fn, format_id::e5m2,
                                     format_id::e4m3fnuz, format_id::e5m2fnuz,   format_id::e3m2fn, format_id::e2m3fn,
                                     format_id::e2m1fn,   format_id::e8m0fnu,    format_id::ue4m3,  format_id::e4m3,
                                     format_id::e3m4,     format_id::e4m3b11fnuz};
const char* name(format_id f);

// codes[i] = gpu::convert<T>(float with bits first + i, r, o), for i < count (a range of float
// bit patterns, computed on the device).
void encode_range(format_id f, std::uint64_t first, std::size_t count, mixprec::rounding r, mixprec::overflow o,
                  std::uint16_t* codes);
// codes[i] = gpu::convert<T>(float with bits inputs[i], r, o); with pairs, through
// gpu::convert_pair on (inputs[2i], inputs[2i + 1]) (inputs.size() even).
std::vector<std::uint16_t> encode_list(format_id f, const std::vector<std::uint32_t>& inputs, mixprec::rounding r,
                                       mixprec::overflow o, bool pairs);
// float bits of gpu::to_float on every code of the format; with pairs, through
// gpu::to_float_pair, every code decoded in the low lane (first half) and in the high lane
// (second half).
std::vector<std::uint32_t> decode_all(format_id f, bool pairs);

// gpu::convert_n from in (copied to the device at in_offset elements past a 256-byte boundary)
// into an array at out_offset elements past one; the result is copied back.
template <class From, class To>
std::vector<To> convert_n(const std::vector<From>& in, std::size_t in_offset, std::size_t out_offset,
                          mixprec::rounding r, mixprec::overflow o);

// The same under a subnormal policy, and gpu::convert_stochastic_n (element i with the word
// philox_bits(seed, i)).
template <class From, class To>
std::vector<To> convert_n(const std::vector<From>& in, std::size_t in_offset, std::size_t out_offset,
                          mixprec::rounding r, mixprec::overflow o, mixprec::subnormals s);
template <class To>
std::vector<To> convert_stochastic_n(const std::vector<float>& in, std::size_t in_offset, std::size_t out_offset,
                                     std::uint64_t seed, mixprec::overflow o, mixprec::stochastic_rule rule,
                                     mixprec::subnormals s);

// gpu::quantize_n (scale as a value, or in device memory), returning amax; q receives the codes.
template <class To>
float quantize_n(const std::vector<float>& in, std::size_t offset, std::vector<To>& q, float scale,
                 bool scale_on_device, mixprec::rounding r, mixprec::overflow o);
template <class From>
std::vector<float> dequantize_n(const std::vector<From>& q, std::size_t offset, float scale, bool scale_on_device);

// An array of gradients as bytes, with its element type and a misalignment (elements past a
// 256-byte boundary) for its device copy.
struct gradient_array {
  mixprec::dtype type;
  std::size_t size;
  std::size_t offset;
  std::vector<unsigned char> bytes;  // size × element size
};
// gpu::unscale_and_check over all arrays in one call; arrays are updated in place; returns
// the found_inf flag (the device's float, starting at 0).
float unscale_and_check(std::vector<gradient_array>& arrays, float inv_scale, mixprec::rounding r);

// One iteration of the scaled training step the scaler test runs, as seen after update().
struct step_record {
  float scaled_loss;  // device_loss_scaler::scale() of the loss 0.375, before the update
  float scale;        // after the update
  mixprec::scale_state state;
  int stepped;  // whether the optimizer kernel ran its update
};
// A full scaled step (gradients scaled by the device scale with an injected inf (1) or NaN (2)
// where schedule[iteration] says, unscale, agreement, optimizer kernel skipping on found_inf,
// update), captured once in a CUDA graph and replayed schedule.size() times (or, with
// use_graph false, launched directly each time).  weights: the optimizer's parameters after the
// run (starting at 0); the gradients are base_gradients × scale, the first half float, the second
// bfloat16.  counters: the scaler's counters after the run.
template <class Policy>
std::vector<step_record> scaled_training_run(const Policy& policy, const mixprec::scaler_options& options,
                                             const std::vector<int>& schedule, const std::vector<float>& base_gradients,
                                             float learning_rate, bool use_graph, std::vector<float>& weights,
                                             mixprec::scaler_counters& counters);
// The device scaler's check() after the error its options provoke (max_consecutive_skips) on a
// run of overflows: the message of the exception it throws, "" if none.
std::string device_scaler_error_message(const mixprec::scaler_options& options, int overflows);

// C = alpha · A · B + beta · C on the device, own kernel or cuBLASLt (which may fall back: used
// says which ran).  fp8 scales are passed in device memory when not 1.
enum class gemm_path { own_kernel, cublaslt };
template <class TA, class TB>
void gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const std::vector<TA>& A, std::size_t lda,
          const std::vector<TB>& B, std::size_t ldb, float beta, std::vector<float>& C, std::size_t ldc, float scale_a,
          float scale_b, gemm_path path, gemm_path* used);

}  // namespace gpu_runs
