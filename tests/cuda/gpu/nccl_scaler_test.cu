// device_loss_scaler with nccl_agreement (distributed/nccl.hpp): the agreement on found_inf is an
// ncclAllReduce(ncclMax) on the scaler's stream, captured in the CUDA graph with the rest of the
// step.  On a one-rank communicator over device 0 the agreed flag is the local one, so 200 graph
// replays with injected overflows must follow the host loss_scaler.  Label gpu: needs a device
// (scripts/gpu-check.sh); every CUDA build with NCCL compiles it.
#include <mixprec/cuda/loss_scaler.cuh>
#include <mixprec/distributed/nccl.hpp>

#include <cstdio>
#include <vector>

using namespace mixprec;

namespace {

void check(cudaError_t e, const char* what) { gpu::detail::check(e, "nccl_scaler_test", what); }

// The "gradient check": the flag is the schedule's entry for this iteration.
__global__ void local_check(const int* schedule, const scale_state* state, float* flag) {
  *flag = schedule[state->iteration] != 0 ? 1.0f : 0.0f;
}

__global__ void record(const float* scale, const scale_state* state, float* scales) {
  scales[state->iteration - 1] = *scale;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("nccl_scaler_test needs a CUDA device (scripts/gpu-check.sh runs it on one)\n");
    return 1;
  }
  constexpr int iterations = 200;
  std::vector<int> schedule(iterations, 0);
  for (int i = 0; i < iterations; ++i) schedule[i] = (i % 17 == 3 || (i >= 100 && i < 106)) ? 1 : 0;

  int device = 0;
  ncclComm_t comm = nullptr;
  check(cudaSetDevice(device), "cudaSetDevice");
  if (ncclCommInitAll(&comm, 1, &device) != ncclSuccess) {
    std::printf("ncclCommInitAll failed\n");
    return 1;
  }
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  int failures = 0;
  {
    dynamic_scaling policy;
    policy.growth_interval = 10;
    gpu::device_loss_scaler<dynamic_scaling, nccl_agreement> scaler(policy, {}, stream, 1,
                                                                    nccl_agreement(comm, stream));
    int* d_schedule = nullptr;
    float *flag = nullptr, *scales = nullptr;
    check(cudaMalloc(&d_schedule, iterations * sizeof(int)), "cudaMalloc");
    check(cudaMalloc(&flag, sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&scales, iterations * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(d_schedule, schedule.data(), iterations * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
    static_cast<void>(gpu::current_device("nccl_scaler_test"));

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
    local_check<<<1, 1, 0, stream>>>(d_schedule, scaler.state_on_device(), flag);
    scaler.record_found_inf(flag);  // + ncclAllReduce(ncclMax) of the scaler's flag
    scaler.step([](const float*) {});
    scaler.update();
    record<<<1, 1, 0, stream>>>(scaler.scale_on_device(), scaler.state_on_device(), scales);
    check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    for (int i = 0; i < iterations; ++i) check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::vector<float> device_scales(iterations);
    check(cudaMemcpy(device_scales.data(), scales, iterations * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");

    loss_scaler<dynamic_scaling> host(policy);
    for (int i = 0; i < iterations; ++i) {
      host.record_found_inf(schedule[i] != 0);
      host.update();
      if (device_scales[i] != host.get_scale()) {
        if (failures++ < 5)
          std::printf("iteration %d: device scale %g, host %g\n", i, device_scales[i], host.get_scale());
      }
    }
    if (!(scaler.state() == host.state())) {
      ++failures;
      std::printf("the final states differ\n");
    }
    scaler.check();
    check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
    check(cudaGraphDestroy(graph), "cudaGraphDestroy");
    check(cudaFree(d_schedule), "cudaFree");
    check(cudaFree(flag), "cudaFree");
    check(cudaFree(scales), "cudaFree");
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  ncclCommDestroy(comm);
  std::printf("device_loss_scaler with nccl_agreement in a CUDA graph, %d replays: %s\n", iterations,
              failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
