// gpu::nvfp4_quantize and gpu::fp8_block_quantize compiled by nvcc for the build's architectures
// with warnings as errors (their kernels instantiated for every input and code type), and, on the
// host, what they check before they touch the GPU: every bad argument throws
// mixprec::invalid_argument naming the value, without a single CUDA call (so this runs without a
// GPU).  Also the host side of the device arithmetic: the quotients' NaN fix-up and the fp8 block
// amax from (largest magnitude, NaN seen).  tests/cuda/gpu/block_quantize_gpu_test.cpp compares the
// device's bytes with the host quantisers' on a GPU.
#include <mixprec/cuda/fp8_block_quantize.cuh>
#include <mixprec/cuda/nvfp4_quantize.cuh>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>

using namespace mixprec;
namespace bs = mixprec::blockscale;

namespace {

// Addresses that are never dereferenced: every call below throws first.
template <class T>
T* fake(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

std::uint32_t bits(float x) { return detail::bit_cast<std::uint32_t>(x); }

// Instantiates every kernel (the template arguments the GPU test runs), never called.
[[maybe_unused]] void instantiate_every_kernel() {
  gpu::fp8_block_quantize<float8_e4m3fn>(fake<const float>(0x1000), 1, 1, 1, fake<float8_e4m3fn>(0x2000),
                                         fake<float>(0x3000));
  gpu::fp8_block_quantize<float8_e5m2>(fake<const float>(0x1000), 1, 1, 1, fake<float8_e5m2>(0x2000),
                                       fake<float>(0x3000));
  gpu::fp8_block_quantize<float8_e4m3fn>(fake<const bfloat16>(0x1000), 1, 1, 1, fake<float8_e4m3fn>(0x2000),
                                         fake<float>(0x3000));
  gpu::fp8_block_quantize<float8_e5m2>(fake<const bfloat16>(0x1000), 1, 1, 1, fake<float8_e5m2>(0x2000),
                                       fake<float>(0x3000));
}

}  // namespace

TEST_CASE("a quotient's NaN is the host's: the first NaN operand quieted, else x86's default NaN",
          "[block_quantize_launchers]") {
  const float nan_payload = detail::bit_cast<float>(0xFF80'1234u);  // a negative signalling NaN
  CHECK(gpu::detail::fix_quotient_nan(bits(1.0f), bits(nan_payload), 0x7FFF'FFFFu) == 0xFFC0'1234u);
  CHECK(gpu::detail::fix_quotient_nan(0x7FA0'0000u, bits(nan_payload), 0x7FFF'FFFFu) == 0x7FE0'0000u);
  CHECK(gpu::detail::fix_quotient_nan(bits(0.0f), bits(0.0f), 0x7FFF'FFFFu) == 0xFFC0'0000u);  // 0 / 0
  CHECK(gpu::detail::fix_quotient_nan(bits(1.0f), bits(4.0f), bits(0.25f)) == bits(0.25f));
  // A rule's result that is not NaN stays, whatever its operands (power_2_scales turns NaN into 0.5).
  CHECK(gpu::detail::fix_quotient_nan(bits(448.0f), 0x7FC0'0000u, bits(0.5f)) == bits(0.5f));
  // On the host the helpers are the host's operations.
  CHECK(bits(gpu::detail::divide_like_host(1.0f, 3.0f)) == bits(1.0f / 3.0f));
  const float zero = 0.0f;
  CHECK(bits(gpu::detail::divide_like_host(zero, zero)) == bits(zero / zero));
}

TEST_CASE("the device's fp8 block amax is the host fold's", "[block_quantize_launchers]") {
  const float largest = 3.5f;
  for (const auto rule : {bs::fp8_block_rule::transformer_engine, bs::fp8_block_rule::transformer_engine_reference,
                          bs::fp8_block_rule::deepseek_v3}) {
    CHECK(bits(gpu::detail::fp8_block_amax(bits(largest), false, rule)) == bits(largest));
  }
  const float x[] = {-1.0f, std::numeric_limits<float>::quiet_NaN(), -3.5f, 2.0f};
  float skipping = 0.0f, keeping = 0.0f;
  for (const float v : x) {
    skipping = bs::detail::amax_skipping_nan(skipping, v);
    keeping = bs::detail::amax_keeping_nan(keeping, v);
  }
  CHECK(bits(gpu::detail::fp8_block_amax(bits(largest), true, bs::fp8_block_rule::transformer_engine)) ==
        bits(skipping));
  CHECK(bits(gpu::detail::fp8_block_amax(bits(largest), true, bs::fp8_block_rule::deepseek_v3)) == bits(skipping));
  CHECK(bits(gpu::detail::fp8_block_amax(bits(largest), true, bs::fp8_block_rule::transformer_engine_reference)) ==
        bits(keeping));
}

TEST_CASE("gpu::nvfp4_quantize refuses bad arguments before any CUDA call", "[block_quantize_launchers]") {
  unsigned char* data = fake<unsigned char>(0x10000);
  unsigned char* scales = fake<unsigned char>(0x20000);
  float* floats = fake<float>(0x30000);
  const gpu::nvfp4_device_copy copy{data, scales, floats};
  std::uint32_t* workspace = fake<std::uint32_t>(0x40000);
  const float* a = fake<const float>(0x50000);
  bs::nvfp4_options o;

  CHECK_THROWS_WITH(gpu::nvfp4_quantize(nullptr, 4, 16, 16, &copy, nullptr, workspace, o),
                    "gpu::nvfp4_quantize: null matrix pointer for 4 × 16 elements");
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 8, &copy, nullptr, workspace, o),
                    "gpu::nvfp4_quantize: leading dimension 8 is smaller than the 16 columns");
  bs::nvfp4_options bad = o;
  bad.rule = static_cast<bs::nvfp4_rule>(5);
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 16, &copy, nullptr, workspace, bad),
                    Catch::Contains("nvfp4_quantize: rule is 5, not an nvfp4_rule"));
  bad = o;
  bad.tile = static_cast<bs::nvfp4_tile>(3);
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 16, &copy, nullptr, workspace, bad),
                    Catch::Contains("nvfp4_quantize: tile is 3, not an nvfp4_tile"));
  bad = o;
  bad.rowwise = false;
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 16, &copy, nullptr, workspace, bad),
                    Catch::Contains("neither the rowwise nor the columnwise copy"));
  bad = o;
  bad.stochastic.enabled = true;
  bad.stochastic.random_bits = 12;
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 16, &copy, nullptr, workspace, bad),
                    Catch::Contains("nvfp4_quantize: random_bits is 12; allowed: 8, 16 or 32"));
  bad = o;
  bad.columnwise = true;
  bad.columnwise_rht.enabled = true;
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 20, 16, 16, &copy, &copy, workspace, bad),
                    "gpu::nvfp4_quantize: columnwise_rht transforms each column in chunks of 16 rows; rows = 20 is "
                    "not a multiple of 16");
  bad.columnwise_rht.signs[4] = 0;
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 32, 16, 16, &copy, &copy, workspace, bad),
                    Catch::Contains("sign 4 is 0; allowed: +1 or -1"));
  // The transform asked for without the column-wise copy is ignored, as on the host.
  bad = o;
  bad.columnwise_rht.enabled = true;
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 20, 16, 16, &copy, nullptr, nullptr, bad),
                    Catch::Contains("null workspace"));

  bad = o;
  bad.columnwise = true;
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 16, &copy, nullptr, workspace, bad),
                    "gpu::nvfp4_quantize: the options ask for the columnwise copy and its destination (or its "
                    "tensor_floats) is null");
  const gpu::nvfp4_device_copy no_floats{data, scales, nullptr};
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 16, &no_floats, nullptr, workspace, o),
                    Catch::Contains("the options ask for the rowwise copy and its destination (or its tensor_floats)"));
  const gpu::nvfp4_device_copy no_scales{data, nullptr, floats};
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 16, &no_scales, nullptr, workspace, o),
                    "gpu::nvfp4_quantize: the rowwise copy's scales pointer is null for 4 blocks");
  const gpu::nvfp4_device_copy no_data{nullptr, scales, floats};
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 17, 17, &no_data, nullptr, workspace, o),
                    "gpu::nvfp4_quantize: the rowwise copy's data pointer is null for 8 blocks");
  const gpu::nvfp4_device_copy misaligned{data + 4, scales, floats};
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 16, &misaligned, nullptr, workspace, o),
                    "gpu::nvfp4_quantize: the rowwise copy's data pointer is not 8-byte aligned (each block is "
                    "stored as 8 bytes)");
  CHECK_THROWS_WITH(gpu::nvfp4_quantize(a, 4, 16, 16, &copy, nullptr, nullptr, o),
                    "gpu::nvfp4_quantize: null workspace (device memory for nvfp4_workspace_words(4, 16) = 4 words)");
  CHECK(gpu::nvfp4_workspace_words(33, 50) == 2 + 2 * 3 * 4);

  const std::size_t huge = std::size_t{1} << 40;
  CHECK_THROWS_WITH(gpu::nvfp4_device_tensor(huge, huge, o),
                    "gpu::nvfp4_device_tensor: 1099511627776 × 1099511627776 elements do not fit in memory");
  bad = o;
  bad.rowwise = false;
  CHECK_THROWS_WITH(gpu::nvfp4_device_tensor(4, 16, bad), Catch::Contains("neither the rowwise nor the columnwise"));
}

TEST_CASE("gpu::fp8_block_quantize refuses bad arguments before any CUDA call", "[block_quantize_launchers]") {
  const float* a = fake<const float>(0x10000);
  float8_e4m3fn* codes = fake<float8_e4m3fn>(0x20000);
  float* scale_invs = fake<float>(0x30000);
  bs::fp8_block_options o;

  CHECK_THROWS_WITH(gpu::fp8_block_quantize(static_cast<const float*>(nullptr), 2, 128, 128, codes, scale_invs, o),
                    "gpu::fp8_block_quantize: null input pointer for 2 × 128 elements");
  CHECK_THROWS_WITH(gpu::fp8_block_quantize(fake<const bfloat16>(0x10000), 2, 128, 100, codes, scale_invs, o),
                    "gpu::fp8_block_quantize: leading dimension 100 is smaller than the 128 columns");
  bs::fp8_block_options bad = o;
  bad.rule = static_cast<bs::fp8_block_rule>(7);
  CHECK_THROWS_WITH(gpu::fp8_block_quantize(a, 2, 128, 128, codes, scale_invs, bad),
                    "gpu::fp8_block_quantize: rule is 7, not an fp8_block_rule (0 to 2)");
  bad = o;
  bad.kind = static_cast<bs::fp8_block_kind>(5);
  CHECK_THROWS_WITH(gpu::fp8_block_quantize(a, 2, 128, 128, codes, scale_invs, bad),
                    Catch::Contains("kind is 5, not an fp8_block_kind"));
  bad = o;
  bad.amax_epsilon = -1.0f;
  CHECK_THROWS_WITH(gpu::fp8_block_quantize(a, 2, 128, 128, codes, scale_invs, bad),
                    Catch::Contains("gpu::fp8_block_quantize: amax_epsilon is -1, it must be finite and >= 0"));
  bad = o;
  bad.stochastic.enabled = true;
  bad.stochastic.random_bits = 12;
  CHECK_THROWS_WITH(gpu::fp8_block_quantize(a, 2, 128, 128, codes, scale_invs, bad),
                    "gpu::fp8_block_quantize: random_bits is 12; allowed: 8, 16 or 32");
  CHECK_THROWS_WITH(gpu::fp8_block_quantize(a, 2, 130, 130, static_cast<float8_e4m3fn*>(nullptr), scale_invs, o),
                    "gpu::fp8_block_quantize: null codes pointer for 2 × 130 elements");
  bad = o;
  bad.kind = bs::fp8_block_kind::tile_128x128;
  CHECK_THROWS_WITH(gpu::fp8_block_quantize(a, 200, 130, 130, codes, nullptr, bad),
                    "gpu::fp8_block_quantize: null scale_invs pointer for 4 blocks");
  // An empty matrix launches nothing: null arrays are fine, and no CUDA call is made.
  CHECK_NOTHROW(gpu::fp8_block_quantize(static_cast<const float*>(nullptr), 0, 128, 128,
                                        static_cast<float8_e5m2*>(nullptr), nullptr, o));

  const std::size_t huge = std::size_t{1} << 40;
  CHECK_THROWS_WITH(gpu::fp8_block_device_matrix<float8_e5m2>(huge, huge),
                    "gpu::fp8_block_device_matrix: 1099511627776 × 1099511627776 elements do not fit in memory");
}

TEST_CASE("the device's NVFP4 packing is pack_codes<4>'s layout", "[block_quantize_launchers]") {
  unsigned char codes[bs::nvfp4_block_size];
  for (unsigned seed = 0; seed < 64; ++seed) {
    for (std::size_t i = 0; i < bs::nvfp4_block_size; ++i)
      codes[i] = static_cast<unsigned char>((seed * 7 + i * 5) % 16);
    unsigned char device[gpu::detail::nvfp4_packed_bytes], host[gpu::detail::nvfp4_packed_bytes];
    gpu::detail::nvfp4_pack_block(codes, device);
    detail::pack_codes<4>(codes, bs::nvfp4_block_size, host);
    CHECK(std::memcmp(device, host, sizeof host) == 0);
  }
}
