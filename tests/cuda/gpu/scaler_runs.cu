// Device side of the device-scaler tests: a full scaled training step with device_loss_scaler,
// captured in a CUDA graph and replayed, recording what each iteration did.
#include <mixprec/cuda/loss_scaler.cuh>

#include "device_memory.cuh"
#include "gpu_runs.hpp"

using namespace mixprec;

namespace gpu_runs {
namespace {

// The "backward pass": gradients = base × scale (the product loss_scaler::scale makes), with an
// inf or a NaN in the first float gradient where the schedule says.
__global__ void make_gradients(const float* base, std::size_t n, std::size_t half, const float* scale,
                               const scale_state* state, const int* schedule, float* g32, bfloat16* g16) {
  const int injected = schedule[state->iteration];
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * static_cast<std::size_t>(blockDim.x)) {
    float v = gpu::detail::multiply_like_host(base[i], *scale);
    if (i == 0 && injected == 1) v = mixprec::detail::bit_cast<float>(0x7F80'0000u);  // +inf
    if (i == 0 && injected == 2) v = mixprec::detail::bit_cast<float>(0x7FC0'0000u);  // NaN
    if (i < half) {
      g32[i] = v;
    } else {
      g16[i - half] = gpu::convert<bfloat16>(v);
    }
  }
}

// SGD that skips on the agreed flag: w -= lr × g, rounded after each operation as on the host.
__global__ void sgd(float* w, const float* g32, const bfloat16* g16, std::size_t n, std::size_t half, float lr,
                    const float* found_inf, int* stepped) {
  const bool skip = *found_inf != 0.0f;
  if (blockIdx.x == 0 && threadIdx.x == 0) *stepped = skip ? 0 : 1;
  if (skip) return;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * static_cast<std::size_t>(blockDim.x)) {
    const float g = i < half ? g32[i] : gpu::to_float(g16[i - half]);
    w[i] = __fsub_rn(w[i], __fmul_rn(lr, g));
  }
}

__global__ void set_value(float* target, float value) { *target = value; }

__global__ void record(const float* loss, const float* scale, const scale_state* state, const int* stepped,
                       step_record* records) {
  step_record& r = records[state->iteration - 1];
  r.scaled_loss = *loss;
  r.scale = *scale;
  r.state = *state;
  r.stepped = *stepped;
}

}  // namespace

template <class Policy>
std::vector<step_record> scaled_training_run(const Policy& policy, const scaler_options& options,
                                             const std::vector<int>& schedule, const std::vector<float>& base_gradients,
                                             float learning_rate, bool use_graph, std::vector<float>& weights,
                                             scaler_counters& counters) {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  std::vector<step_record> result;
  {
    gpu::device_loss_scaler<Policy> scaler(policy, options, stream);
    const std::size_t n = base_gradients.size(), half = n / 2;
    device_array<float> base(base_gradients), g32(half), w(std::vector<float>(n, 0.0f)), loss(1);
    device_array<bfloat16> g16(n - half);
    device_array<int> d_schedule(schedule), stepped(1);
    device_array<step_record> records(schedule.size());
    const auto one_step = [&] {
      set_value<<<1, 1, 0, stream>>>(loss.get(), 0.375f);
      scaler.scale(loss.get(), 1);
      make_gradients<<<64, 256, 0, stream>>>(base.get(), n, half, scaler.scale_on_device(), scaler.state_on_device(),
                                             d_schedule.get(), g32.get(), g16.get());
      check(cudaGetLastError(), "make_gradients");
      scaler.unscale({{g32.get(), half}, {g16.get(), n - half}});
      scaler.step([&](const float* found_inf) {
        sgd<<<64, 256, 0, stream>>>(w.get(), g32.get(), g16.get(), n, half, learning_rate, found_inf, stepped.get());
        check(cudaGetLastError(), "sgd");
      });
      scaler.update();
      record<<<1, 1, 0, stream>>>(loss.get(), scaler.scale_on_device(), scaler.state_on_device(), stepped.get(),
                                  records.get());
      check(cudaGetLastError(), "record");
    };
    static_cast<void>(gpu::current_device("gpu test"));  // properties cached outside the capture
    if (use_graph) {
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
      one_step();
      check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
      check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
      for (std::size_t i = 0; i < schedule.size(); ++i) check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
      check(cudaGraphDestroy(graph), "cudaGraphDestroy");
    } else {
      for (std::size_t i = 0; i < schedule.size(); ++i) one_step();
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
    scaler.check();
    counters = scaler.counters();
    weights = w.download();
    result = records.download();
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return result;
}

std::string device_scaler_error_message(const scaler_options& options, int overflows) {
  gpu::device_loss_scaler<dynamic_scaling> scaler(dynamic_scaling{}, options);
  device_array<float> flag(std::vector<float>{1.0f});
  for (int i = 0; i < overflows; ++i) {
    scaler.record_found_inf(flag.get());
    scaler.update();
  }
  try {
    scaler.check();
  } catch (const scaling_error& e) {
    return e.what();
  }
  return "";
}

template std::vector<step_record> scaled_training_run<dynamic_scaling>(const dynamic_scaling&, const scaler_options&,
                                                                       const std::vector<int>&,
                                                                       const std::vector<float>&, float, bool,
                                                                       std::vector<float>&, scaler_counters&);
template std::vector<step_record> scaled_training_run<hysteresis_scaling>(const hysteresis_scaling&,
                                                                          const scaler_options&,
                                                                          const std::vector<int>&,
                                                                          const std::vector<float>&, float, bool,
                                                                          std::vector<float>&, scaler_counters&);
template std::vector<step_record> scaled_training_run<static_scaling>(const static_scaling&, const scaler_options&,
                                                                      const std::vector<int>&,
                                                                      const std::vector<float>&, float, bool,
                                                                      std::vector<float>&, scaler_counters&);
template std::vector<step_record> scaled_training_run<no_scaling>(const no_scaling&, const scaler_options&,
                                                                  const std::vector<int>&, const std::vector<float>&,
                                                                  float, bool, std::vector<float>&, scaler_counters&);

}  // namespace gpu_runs
