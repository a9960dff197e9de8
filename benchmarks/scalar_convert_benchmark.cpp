// Scalar conversion, one element per call, float -> T and T -> float for fp16, bf16, e4m3fn
// and e5m2: mixprec against Eigen::half / Eigen::bfloat16, the FP16 library (fp16 only) and
// CUDA's host-side functions, with a copy loop as the floor.
//
// Inputs: 4096 floats drawn from N(0, 1) with a few specials spread among them (±0, ±inf,
// NaN, values that underflow to subnormals or zero, values that overflow fp16 and fp8); the
// decode benchmarks read the codes mixprec makes of them.  Two loops per conversion:
//   loop      out[i] = convert(in[i]) over the array: the compiler may vectorise it (Eigen's
//             branch-free conversions do; mixprec's scalar path, which branches, does not);
//   per_call  each result goes through benchmark::DoNotOptimize before the next call, which
//             keeps every call a separate scalar call: the cost of one call in a loop.
// Every benchmark reports items/s (elements); ns/element is 1e9 / items_per_second.  The bulk
// SIMD paths (convert_n) are measured in bulk_convert_benchmark.cpp.
//   scalar_convert_benchmark --benchmark_min_time=0.2
#include <Eigen/Core>
#include <benchmark/benchmark.h>
#include <fp16.h>
#include <mixprec/types.hpp>

// CUDA's host functions where the toolkit's headers are on the include path
// (benchmarks/CMakeLists.txt adds them when CMake finds the toolkit).
#if defined(__has_include)
#if __has_include(<cuda_fp8.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#define MIXPREC_BENCHMARK_CUDA 1
#endif
#endif
#if !defined(MIXPREC_BENCHMARK_CUDA)
#define MIXPREC_BENCHMARK_CUDA 0
#endif

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace mixprec;

constexpr std::size_t element_count = 4096;

const std::vector<float>& inputs() {
  static const std::vector<float> data = [] {
    std::vector<float> v(element_count);
    std::mt19937 generator(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& x : v) x = normal(generator);
    const float specials[] = {0.0f,
                              -0.0f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(),
                              1e-6f,  // an fp16 subnormal; below e4m3's range
                              -3e-9f,
                              1e-40f,  // a float subnormal
                              500.0f,  // above e4m3fn's max
                              -1e5f,   // above fp16's and e5m2's max
                              65519.0f,
                              3e38f};
    std::size_t position = 7;
    for (float s : specials) {
      v[position] = s;
      position += element_count / (sizeof specials / sizeof specials[0]);
    }
    return v;
  }();
  return data;
}

template <class T>
const std::vector<typename T::storage_type>& codes() {
  static const std::vector<typename T::storage_type> data = [] {
    std::vector<typename T::storage_type> c;
    for (float x : inputs()) c.push_back(T(x).bits());
    return c;
  }();
  return data;
}

std::uint32_t float_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
float bits_float(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

template <class In, class Out, class Convert>
void loop(benchmark::State& state, const std::vector<In>& in, Convert convert) {
  std::vector<Out> out(in.size());
  // Plain pointers and a local count: a store through a std::uint8_t lvalue may alias anything,
  // so with in.size() and out[i] in the loop the compiler would reload the vectors' pointers
  // after every byte stored and never vectorise an 8-bit result.
  const In* source = in.data();
  Out* destination = out.data();
  const std::size_t n = in.size();
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) destination[i] = convert(source[i]);
    benchmark::DoNotOptimize(destination);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(in.size()));
}

template <class In, class Out, class Convert>
void per_call(benchmark::State& state, const std::vector<In>& in, Convert convert) {
  const In* source = in.data();
  const std::size_t n = in.size();
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) {
      Out result = convert(source[i]);
      benchmark::DoNotOptimize(result);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(in.size()));
}

// Registers "<direction>/<format>/<implementation>/loop" and ".../per_call".
template <class In, class Out, class Convert>
void add(const std::string& name, const std::vector<In>& in, Convert convert) {
  benchmark::RegisterBenchmark((name + "/loop").c_str(),
                               [&in, convert](benchmark::State& state) { loop<In, Out>(state, in, convert); });
  benchmark::RegisterBenchmark((name + "/per_call").c_str(),
                               [&in, convert](benchmark::State& state) { per_call<In, Out>(state, in, convert); });
}

void register_mixprec_eigen_fp16_library() {
  const std::vector<float>& in = inputs();
  using u16 = std::uint16_t;
  using u8 = std::uint8_t;

  // The floor: the same loads and stores with no conversion.  A float copied to a float, and
  // the cheapest maps between float and a 16- or 8-bit code (keep the top bits of the float's
  // pattern; put the code in the top bits of a float's).
  add<float, float>("copy/float", in, [](float x) { return x; });
  add<float, u16>("floor/encode16", in, [](float x) { return static_cast<u16>(float_bits(x) >> 16); });
  add<float, u8>("floor/encode8", in, [](float x) { return static_cast<u8>(float_bits(x) >> 24); });
  add<u16, float>("floor/decode16", codes<float16>(), [](u16 c) { return bits_float(std::uint32_t{c} << 16); });
  add<u8, float>("floor/decode8", codes<float8_e4m3fn>(), [](u8 c) { return bits_float(std::uint32_t{c} << 24); });

  // float -> T: round to nearest even, overflow to inf (NaN for e4m3fn): mixprec's T(float).
  add<float, u16>("encode/fp16/mixprec", in, [](float x) { return float16(x).bits(); });
  add<float, u16>("encode/fp16/eigen", in, [](float x) { return Eigen::numext::bit_cast<u16>(Eigen::half(x)); });
  add<float, u16>("encode/fp16/fp16_library", in, [](float x) { return fp16_ieee_from_fp32_value(x); });
  add<float, u16>("encode/bf16/mixprec", in, [](float x) { return bfloat16(x).bits(); });
  add<float, u16>("encode/bf16/eigen", in, [](float x) { return Eigen::numext::bit_cast<u16>(Eigen::bfloat16(x)); });
  add<float, u8>("encode/e4m3fn/mixprec", in, [](float x) { return float8_e4m3fn(x).bits(); });
  add<float, u8>("encode/e5m2/mixprec", in, [](float x) { return float8_e5m2(x).bits(); });

  // T -> float, exact.
  add<u16, float>("decode/fp16/mixprec", codes<float16>(),
                  [](u16 c) { return static_cast<float>(float16::from_bits(c)); });
  add<u16, float>("decode/fp16/eigen", codes<float16>(),
                  [](u16 c) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(c)); });
  add<u16, float>("decode/fp16/fp16_library", codes<float16>(), [](u16 c) { return fp16_ieee_to_fp32_value(c); });
  add<u16, float>("decode/bf16/mixprec", codes<bfloat16>(),
                  [](u16 c) { return static_cast<float>(bfloat16::from_bits(c)); });
  add<u16, float>("decode/bf16/eigen", codes<bfloat16>(),
                  [](u16 c) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(c)); });
  add<u8, float>("decode/e4m3fn/mixprec", codes<float8_e4m3fn>(),
                 [](u8 c) { return static_cast<float>(float8_e4m3fn::from_bits(c)); });
  add<u8, float>("decode/e5m2/mixprec", codes<float8_e5m2>(),
                 [](u8 c) { return static_cast<float>(float8_e5m2::from_bits(c)); });
}

#if MIXPREC_BENCHMARK_CUDA
std::uint16_t code_of(__half h) { return static_cast<__half_raw>(h).x; }
std::uint16_t code_of(__nv_bfloat16 b) { return static_cast<__nv_bfloat16_raw>(b).x; }
__half cuda_half(std::uint16_t code) {
  __half_raw raw;
  raw.x = code;
  return __half(raw);
}
__nv_bfloat16 cuda_bfloat16(std::uint16_t code) {
  __nv_bfloat16_raw raw;
  raw.x = code;
  return __nv_bfloat16(raw);
}
template <class Native>
Native cuda_byte(std::uint8_t code) {
  Native native;
  native.__x = code;
  return native;
}

// The same conversions by CUDA's host code: __float2half_rn and friends; fp8 with __NV_NOSAT,
// the overflow rule of mixprec's T(float).
void register_cuda() {
  const std::vector<float>& in = inputs();
  using u16 = std::uint16_t;
  using u8 = std::uint8_t;
  add<float, u16>("encode/fp16/cuda", in, [](float x) { return code_of(__float2half_rn(x)); });
  add<float, u16>("encode/bf16/cuda", in, [](float x) { return code_of(__float2bfloat16_rn(x)); });
  add<float, u8>("encode/e4m3fn/cuda", in,
                 [](float x) { return static_cast<u8>(__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3)); });
  add<float, u8>("encode/e5m2/cuda", in,
                 [](float x) { return static_cast<u8>(__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)); });
  add<u16, float>("decode/fp16/cuda", codes<float16>(), [](u16 c) { return __half2float(cuda_half(c)); });
  add<u16, float>("decode/bf16/cuda", codes<bfloat16>(), [](u16 c) { return __bfloat162float(cuda_bfloat16(c)); });
  add<u8, float>("decode/e4m3fn/cuda", codes<float8_e4m3fn>(),
                 [](u8 c) { return static_cast<float>(cuda_byte<__nv_fp8_e4m3>(c)); });
  add<u8, float>("decode/e5m2/cuda", codes<float8_e5m2>(),
                 [](u8 c) { return static_cast<float>(cuda_byte<__nv_fp8_e5m2>(c)); });
}
#endif

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_mixprec_eigen_fp16_library();
#if MIXPREC_BENCHMARK_CUDA
  register_cuda();
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
