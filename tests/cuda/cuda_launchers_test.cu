// Every header of the CUDA backend compiled by nvcc for each architecture of the build with
// warnings as errors (the GPU tests' library, tests/cuda/gpu, instantiates every kernel), and, on
// the host, what the launchers check before they touch the GPU: bad arguments throw
// mixprec::invalid_argument naming the value, without a single CUDA call (so this runs without a
// GPU).  The host paths of the __host__ __device__ conversions are the generic conversion.
#include <mixprec/cuda/cuda.cuh>
#include <mixprec/cuda/gemm_cublaslt.cuh>

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace mixprec;

namespace {

// Addresses that are never dereferenced: every call below throws first.
template <class T>
T* fake(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

}  // namespace

TEST_CASE("the host paths of the device conversions are the generic conversion", "[cuda_launchers]") {
  for (const float x : {0.1f, -3.75f, 448.0f, 464.0f, 500.0f, 1e-9f, -1e30f}) {
    for (const overflow o : {overflow::non_finite, overflow::saturate}) {
      CHECK(gpu::convert<float8_e4m3fn>(x, rounding::nearest_even, o).bits() ==
            convert<float8_e4m3fn>(x, rounding::nearest_even, o).bits());
      CHECK(gpu::convert<bfloat16>(x, rounding::upward, o).bits() == convert<bfloat16>(x, rounding::upward, o).bits());
    }
    CHECK(gpu::to_float(float16(x)) == static_cast<float>(float16(x)));
  }
  float8_e5m2 a, b;
  gpu::convert_pair(1.0f, 70000.0f, a, b, rounding::nearest_even, overflow::saturate);
  CHECK(a.bits() == 0x3C);
  CHECK(b.bits() == 0x7B);
}

TEST_CASE("bulk launchers refuse null and overlapping arrays before any CUDA call", "[cuda_launchers]") {
  CHECK_THROWS_WITH(gpu::convert_n(static_cast<const float*>(nullptr), 10, fake<bfloat16>(0x1000)),
                    "gpu::convert_n: null input pointer with n = 10");
  CHECK_THROWS_WITH(gpu::convert_n(fake<const float>(0x1000), 16, fake<bfloat16>(0x1010)),
                    Catch::Contains("gpu::convert_n: the output array overlaps the input array (n = 16)"));
  CHECK_THROWS_WITH(gpu::quantize_n(fake<const float>(0x1000), 4, fake<float8_e4m3fn>(0x2000), 1.0f, nullptr),
                    "gpu::quantize_n: null amax pointer (device memory for one float)");
  CHECK_THROWS_WITH(gpu::quantize_n(fake<const float>(0x1000), 4, fake<float8_e4m3fn>(0x2000),
                                    static_cast<const float*>(nullptr), fake<float>(0x3000)),
                    "gpu::quantize_n: null scale pointer");
  CHECK_THROWS_WITH(gpu::dequantize_n(fake<const float8_e5m2>(0x1000), 4, static_cast<float*>(nullptr), 2.0f),
                    "gpu::dequantize_n: null output pointer with n = 4");
}

TEST_CASE("unscale refuses bad lists and pointers before any CUDA call", "[cuda_launchers]") {
  std::vector<gradient_view> views{{fake<float>(0x1000), 8}, {static_cast<bfloat16*>(nullptr), 3}};
  CHECK_THROWS_WITH(gpu::unscale_and_check(views, fake<const float>(0x9000), fake<float>(0x9004)),
                    "gpu::unscale_and_check: array 1 of 2 is a null pointer with size 3");
  views.pop_back();
  CHECK_THROWS_WITH(gpu::unscale_and_check(views, nullptr, fake<float>(0x9004)),
                    "gpu::unscale_and_check: null inv_scale pointer");
  CHECK_THROWS_WITH(gpu::unscale_and_check(views, fake<const float>(0x9000), nullptr),
                    "gpu::unscale_and_check: null found_inf pointer");
  unscale_options bad;
  bad.gradient_rounding = static_cast<rounding>(17);
  CHECK_THROWS_WITH(gpu::unscale_and_check(views, fake<const float>(0x9000), fake<float>(0x9004), nullptr, bad),
                    "gpu::unscale_and_check: options.gradient_rounding is 17, not a rounding mode");
}

TEST_CASE("gemm refuses bad arguments before any CUDA call", "[cuda_launchers]") {
  CHECK_THROWS_WITH(gpu::gemm(64, 64, 64, 1.0f, fake<const bfloat16>(0x10000), 32, fake<const bfloat16>(0x20000), 64,
                              0.0f, fake<float>(0x40000), 64),
                    "gpu::gemm: ldA = 32 is smaller than its 64 columns (A is 64 × 64, row-major)");
  CHECK_THROWS_WITH(gpu::gemm(64, 64, 64, 1.0f, fake<const float8_e4m3fn>(0x10000), 64,
                              static_cast<const float8_e4m3fn*>(nullptr), 64, 0.0f, fake<float>(0x40000), 64),
                    "gpu::gemm: null B pointer with 64 × 64 elements");
  CHECK_NOTHROW(gpu::gemm(0, 64, 64, 1.0f, static_cast<const float16*>(nullptr), 64, fake<const float16>(0x20000), 64,
                          0.0f, static_cast<float*>(nullptr), 64));  // an empty product launches nothing
}

TEST_CASE("the device scaler refuses options it cannot honour before allocating", "[cuda_launchers]") {
  scaler_options handler;
  handler.at_floor = floor_action::call_handler;
  handler.floor_handler = [](const floor_event&) { return 1.0f; };
  CHECK_THROWS_WITH(gpu::device_loss_scaler<dynamic_scaling>(dynamic_scaling{}, handler),
                    Catch::Contains("a floor handler is a host function"));
  CHECK_THROWS_WITH(gpu::device_loss_scaler<dynamic_scaling>(dynamic_scaling{}, {}, nullptr, 0),
                    "device_loss_scaler: optimizers is 0, it must be in [1, 4096]");
  dynamic_scaling bad;
  bad.growth_factor = 0.5;
  CHECK_THROWS_AS(gpu::device_loss_scaler<dynamic_scaling>(bad), invalid_argument);
}
