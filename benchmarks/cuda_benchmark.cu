// The CUDA backend's speed on a GPU, against the physical limit and against NVIDIA's libraries,
// all in one run (scripts/gpu-check.sh runs it; scripts/gpu_benchmark_table.py makes the tables of
// docs/performance.md):
//
//   device_copy/<bytes>           cudaMemcpyAsync device to device: the bandwidth limit
//   convert/<From>/<To>           gpu::convert_n, bytes read + written
//   quantize, dequantize          gpu::quantize_n (with amax) / gpu::dequantize_n
//   unscale/<type>                gpu::unscale_and_check over 64 arrays (in place: read + write)
//   unscale_variant/<type>/...    the same through each tuning variant of its kernel
//   gemm/<type>/<backend>/<size>  C = A·B, size³: own kernel, cuBLASLt, cuBLAS (cublasGemmEx)
//
// Times are CUDA events around each launch (manual time); counters: traffic_bytes (read + written)
// for the memory-bound kernels, flops for the products, per iteration.  Each element-wise benchmark moves the same
// bytes as a device_copy of half its traffic (a copy reads and writes), so the table divides the two.
#include <mixprec/cuda/cuda.cuh>
#include <mixprec/cuda/gemm_cublaslt.cuh>

#include <benchmark/benchmark.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace mixprec;

namespace {

void check(cudaError_t e, const char* what) { gpu::detail::check(e, "cuda_benchmark", what); }

// A device allocation for the benchmark's lifetime.
struct device_bytes {
  void* p = nullptr;
  explicit device_bytes(std::size_t n) { check(cudaMalloc(&p, n == 0 ? 1 : n), "cudaMalloc"); }
  ~device_bytes() { static_cast<void>(cudaFree(p)); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// Fills with values of the type from N(0, 1) floats (quantised where T is narrow): 2^20 of them,
// repeated (drawing 2^26 normals on the host per matrix would cost more than the benchmark).
template <class T>
void fill(T* device, std::size_t n, unsigned seed) {
  const std::size_t block = std::min<std::size_t>(n, std::size_t{1} << 20);
  std::vector<float> x(block);
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : x) v = normal(random);
  std::vector<T> host(block);
  convert_n(x.data(), block, host.data());
  for (std::size_t at = 0; at < n; at += block) {
    check(cudaMemcpy(device + at, host.data(), std::min(block, n - at) * sizeof(T), cudaMemcpyHostToDevice),
          "cudaMemcpy");
  }
}

// Runs launch() once per iteration between two events; the events' time is the iteration's.
template <class Launch>
void time_launches(benchmark::State& state, Launch&& launch) {
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  launch();  // warm-up (and cuBLAS's first-call setup)
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (auto _ : state) {
    check(cudaEventRecord(start), "cudaEventRecord");
    launch();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    state.SetIterationTime(static_cast<double>(ms) / 1e3);
  }
  static_cast<void>(cudaEventDestroy(start));
  static_cast<void>(cudaEventDestroy(stop));
}

// Bytes read + written per iteration; scripts/gpu_benchmark_table.py divides by the (manual)
// time per iteration.  (Rate counters would divide by CPU time, which says nothing about a GPU.)
void set_traffic(benchmark::State& state, std::size_t bytes) {
  state.counters["traffic_bytes"] = static_cast<double>(bytes);
}

constexpr std::size_t elements = std::size_t{1} << 26;  // 256 MiB of floats: far beyond L2

void device_copy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  device_bytes in(bytes), out(bytes);
  check(cudaMemset(in.p, 1, bytes), "cudaMemset");
  time_launches(state,
                [&] { check(cudaMemcpyAsync(out.p, in.p, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync"); });
  set_traffic(state, 2 * bytes);
}

template <class From, class To>
void convert(benchmark::State& state) {
  device_bytes in(elements * sizeof(From)), out(elements * sizeof(To));
  fill(in.as<From>(), elements, 1);
  time_launches(state, [&] { gpu::convert_n(in.as<const From>(), elements, out.as<To>()); });
  set_traffic(state, elements * (sizeof(From) + sizeof(To)));
}

template <class To>
void quantize(benchmark::State& state) {
  device_bytes in(elements * sizeof(float)), out(elements * sizeof(To)), amax(sizeof(float));
  fill(in.as<float>(), elements, 2);
  time_launches(state, [&] { gpu::quantize_n(in.as<const float>(), elements, out.as<To>(), 2.0f, amax.as<float>()); });
  set_traffic(state, elements * (sizeof(float) + sizeof(To)));
}

template <class From>
void dequantize(benchmark::State& state) {
  device_bytes in(elements * sizeof(From)), out(elements * sizeof(float));
  fill(in.as<From>(), elements, 3);
  time_launches(state, [&] { gpu::dequantize_n(in.as<const From>(), elements, out.as<float>(), 0.5f); });
  set_traffic(state, elements * (sizeof(From) + sizeof(float)));
}

// 64 arrays of elements / 64 each, unscaled in place by 2^-10 (every value multiplied and written),
// by the public function or (unscale_variant/...) a tuning variant of its kernel.
template <class T, unsigned MinBlocks = 0, unsigned InFlight = 0>
void unscale(benchmark::State& state) {
  constexpr std::size_t arrays = 64, each = elements / arrays;
  device_bytes data(elements * sizeof(T)), constants(2 * sizeof(float));
  fill(data.as<T>(), elements, 4);
  const float host_constants[2] = {1.0f / 1024, 0.0f};  // inv_scale, found_inf
  check(cudaMemcpy(constants.p, host_constants, sizeof host_constants, cudaMemcpyHostToDevice), "cudaMemcpy");
  std::vector<gradient_view> views;
  for (std::size_t a = 0; a < arrays; ++a) views.emplace_back(data.as<T>() + a * each, each);
  time_launches(state, [&] {
    if constexpr (MinBlocks == 0) {
      gpu::unscale_and_check(views, constants.as<const float>(), constants.as<float>() + 1);
    } else {
      gpu::detail::launch_unscale<MinBlocks, InFlight>(views.data(), views.size(), constants.as<const float>(),
                                                       constants.as<float>() + 1, nullptr, unscale_options{});
    }
  });
  set_traffic(state, 2 * elements * sizeof(T));
}

enum class backend { own_kernel, cublaslt, cublas };

template <class T>
constexpr cudaDataType_t data_type() {
  return gpu::detail::cuda_data_type<T>();
}

template <class T>
void gemm(benchmark::State& state, backend which) {
  const auto n = static_cast<std::size_t>(state.range(0));
  device_bytes a(n * n * sizeof(T)), b(n * n * sizeof(T)), c(n * n * sizeof(float));
  fill(a.as<T>(), n * n, 5);
  fill(b.as<T>(), n * n, 6);
  const float alpha = 1.0f, beta = 0.0f;
  std::unique_ptr<gpu::cublaslt_gemm> lt;
  cublasHandle_t handle = nullptr;
  if (which == backend::cublaslt) lt = std::make_unique<gpu::cublaslt_gemm>(std::size_t{32} << 20, n * n);
  if (which == backend::cublas && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("cublasCreate failed");
    return;
  }
  bool fell_back = false;
  time_launches(state, [&] {
    switch (which) {
      case backend::own_kernel:
        gpu::gemm(n, n, n, alpha, a.as<const T>(), n, b.as<const T>(), n, beta, c.as<float>(), n);
        break;
      case backend::cublaslt:
        fell_back = lt->gemm(n, n, n, alpha, a.as<const T>(), n, b.as<const T>(), n, beta, c.as<float>(), n) !=
                    gpu::gemm_backend::cublaslt;
        break;
      case backend::cublas: {
        // Row-major C = A·B is column-major C^T = B^T · A^T.
        const int m = static_cast<int>(n);
        if (cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, b.p, data_type<T>(), m, a.p, data_type<T>(),
                         m, &beta, c.p, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
          state.SkipWithError("cublasGemmEx failed");
        }
        break;
      }
    }
  });
  if (handle != nullptr) cublasDestroy(handle);
  if (fell_back) state.SetLabel("cuBLASLt had no algorithm: the own kernel ran");
  // Operations per iteration; the table divides by the (manual) time.  (A rate counter would
  // divide by CPU time.)
  state.counters["flops"] = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
}

void register_all() {
  // Half the traffic of each element-wise benchmark below: 2^26 elements of float and a 16-bit or
  // an 8-bit type; unscale of float and of bfloat16 in place.
  for (const std::int64_t bytes :
       {std::int64_t{3} << 26, std::int64_t{5} << 25, std::int64_t{1} << 28, std::int64_t{1} << 27}) {
    benchmark::RegisterBenchmark(("device_copy/" + std::to_string(bytes)).c_str(), device_copy)
        ->Arg(bytes)
        ->UseManualTime();
  }
  benchmark::RegisterBenchmark("convert/float/bfloat16", convert<float, bfloat16>)->UseManualTime();
  benchmark::RegisterBenchmark("convert/float/float16", convert<float, float16>)->UseManualTime();
  benchmark::RegisterBenchmark("convert/float/float8_e4m3fn", convert<float, float8_e4m3fn>)->UseManualTime();
  benchmark::RegisterBenchmark("convert/float/float8_e5m2", convert<float, float8_e5m2>)->UseManualTime();
  benchmark::RegisterBenchmark("convert/bfloat16/float", convert<bfloat16, float>)->UseManualTime();
  benchmark::RegisterBenchmark("convert/float16/float", convert<float16, float>)->UseManualTime();
  benchmark::RegisterBenchmark("convert/float8_e4m3fn/float", convert<float8_e4m3fn, float>)->UseManualTime();
  benchmark::RegisterBenchmark("quantize/float8_e4m3fn", quantize<float8_e4m3fn>)->UseManualTime();
  benchmark::RegisterBenchmark("dequantize/float8_e4m3fn", dequantize<float8_e4m3fn>)->UseManualTime();
  benchmark::RegisterBenchmark("unscale/float", unscale<float>)->UseManualTime();
  benchmark::RegisterBenchmark("unscale/bfloat16", unscale<bfloat16>)->UseManualTime();
  // The kernel's variants (cuda/unscale.cuh): blocks per multiprocessor the registers must fit,
  // vectors in flight per thread.  unscale/<type> above runs the variant the library picks (for
  // float 1 and 4, for 16-bit arrays only 8 and 2).
  benchmark::RegisterBenchmark("unscale_variant/bfloat16/min1_flight4", unscale<bfloat16, 1, 4>)->UseManualTime();
  benchmark::RegisterBenchmark("unscale_variant/bfloat16/min6_flight4", unscale<bfloat16, 6, 4>)->UseManualTime();
  benchmark::RegisterBenchmark("unscale_variant/bfloat16/min8_flight4", unscale<bfloat16, 8, 4>)->UseManualTime();
  benchmark::RegisterBenchmark("unscale_variant/bfloat16/min4_flight8", unscale<bfloat16, 4, 8>)->UseManualTime();
  benchmark::RegisterBenchmark("unscale_variant/float/min8_flight2", unscale<float, 8, 2>)->UseManualTime();
  benchmark::RegisterBenchmark("unscale_variant/float/min6_flight4", unscale<float, 6, 4>)->UseManualTime();
  const auto gemms = [](const char* type, auto tag, bool with_cublas) {
    using T = typename decltype(tag)::type;
    for (const std::int64_t n : {4096, 8192}) {
      const std::string suffix = "/" + std::to_string(n);
      benchmark::RegisterBenchmark((std::string("gemm/") + type + "/own_kernel" + suffix).c_str(),
                                   [](benchmark::State& s) { gemm<T>(s, backend::own_kernel); })
          ->Arg(n)
          ->UseManualTime();
      benchmark::RegisterBenchmark((std::string("gemm/") + type + "/cublaslt" + suffix).c_str(),
                                   [](benchmark::State& s) { gemm<T>(s, backend::cublaslt); })
          ->Arg(n)
          ->UseManualTime();
      if (with_cublas) {
        benchmark::RegisterBenchmark((std::string("gemm/") + type + "/cublas" + suffix).c_str(),
                                     [](benchmark::State& s) { gemm<T>(s, backend::cublas); })
            ->Arg(n)
            ->UseManualTime();
      }
    }
  };
  struct bf16_tag {
    using type = bfloat16;
  };
  struct fp16_tag {
    using type = float16;
  };
  struct e4m3_tag {
    using type = float8_e4m3fn;
  };
  gemms("bfloat16", bf16_tag{}, true);
  gemms("float16", fp16_tag{}, true);
  gemms("float8_e4m3fn", e4m3_tag{}, false);  // cublasGemmEx has no fp8; cuBLASLt is the reference
}

}  // namespace

int main(int argc, char** argv) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, 0) != cudaSuccess) {
    std::fprintf(stderr, "cuda_benchmark: no CUDA device\n");
    return 1;
  }
  benchmark::AddCustomContext("cuda_device", properties.name);
  benchmark::AddCustomContext("cuda_capability",
                              std::to_string(properties.major) + "." + std::to_string(properties.minor));
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
