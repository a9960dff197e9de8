// gpu::nvfp4_quantize and gpu::fp8_block_quantize against the host quantisers, byte for byte
// (label gpu: needs a CUDA device; run by scripts/gpu-check.sh).  Awkward shapes (edge blocks in
// both directions), a leading dimension past the columns whose padding is NaN (it must never be
// read), special values (zeros, ±inf, NaN of both signs, subnormals, an all-subnormal matrix, an
// all-zero one), every rule, block shape and copy, stochastic rounding with k = 8, 16, 32, and the
// column-wise Hadamard transform; each device result comes from a reused device tensor.
#include <mixprec/blockscale/fp8_block.hpp>
#include <mixprec/blockscale/nvfp4.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "block_quantize_runs.hpp"
#include "gpu_runs.hpp"

using namespace mixprec;
namespace bs = mixprec::blockscale;

namespace {

void require_device() {
  INFO("these tests need a CUDA device (scripts/gpu-check.sh runs them on one)");
  REQUIRE(!gpu_runs::current_device().name.empty());
}

std::uint32_t bits(float x) { return detail::bit_cast<std::uint32_t>(x); }

enum class input_kind { normal, specials, subnormal, zeros };
constexpr input_kind every_input[] = {input_kind::normal, input_kind::specials, input_kind::subnormal,
                                      input_kind::zeros};

const char* name(input_kind k) {
  switch (k) {
    case input_kind::normal:
      return "normal";
    case input_kind::specials:
      return "specials";
    case input_kind::subnormal:
      return "subnormal";
    case input_kind::zeros:
      return "zeros";
  }
  return "?";
}

// A rows × cols matrix with leading dimension lda = cols + 3, the padding NaN.
std::vector<float> make_input(std::size_t rows, std::size_t cols, input_kind kind, unsigned seed) {
  const std::size_t lda = cols + 3;
  std::vector<float> a(rows == 0 ? 0 : (rows - 1) * lda + cols, std::numeric_limits<float>::quiet_NaN());
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      float v = normal(random);
      if (kind == input_kind::subnormal) v *= 1e-40f;  // amax subnormal
      if (kind == input_kind::zeros) v = (r + c) % 2 == 0 ? 0.0f : -0.0f;
      a[r * lda + c] = v;
    }
  }
  if (kind == input_kind::specials && rows > 0 && cols > 0) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const float specials[] = {inf, -inf, nan, -nan, 0.0f, -0.0f, 1e-40f, -1e-40f, 448.0f, 3e38f, -57344.0f, 6.0f};
    std::size_t k = 0;
    for (std::size_t i = 5; i < rows * cols; i += 211) {
      a[(i / cols) * lda + i % cols] = specials[k++ % std::size(specials)];
    }
    // A zero region: the first 16 × 20 elements (a zero NVFP4 block and tile next to others).
    for (std::size_t r = 0; r < rows && r < 16; ++r) {
      for (std::size_t c = 0; c < cols && c < 20; ++c) a[r * lda + c] = 0.0f;
    }
  }
  return a;
}

struct shape {
  std::size_t rows, cols;
};

bool same_float(float device, float host, bool nan_payload_may_differ) {
  if (bits(device) == bits(host)) return true;
  return nan_payload_may_differ && device != device && host != host;
}

void check_same(const bs::nvfp4_matrix& device, const bs::nvfp4_matrix& host, bool nan_payload_may_differ) {
  REQUIRE(device.rows() == host.rows());
  REQUIRE(device.cols() == host.cols());
  CHECK(device.columnwise() == host.columnwise());
  CHECK(device.hadamard_transformed() == host.hadamard_transformed());
  CHECK(device.rule() == host.rule());
  INFO("amax " << host.amax() << " tensor_scale " << host.tensor_scale() << " decode_scale " << host.decode_scale());
  CHECK(same_float(device.amax(), host.amax(), nan_payload_may_differ));
  CHECK(same_float(device.tensor_scale(), host.tensor_scale(), nan_payload_may_differ));
  CHECK(same_float(device.decode_scale(), host.decode_scale(), nan_payload_may_differ));
  std::size_t data_mismatches = 0, scale_mismatches = 0;
  for (std::size_t line = 0; line < host.lines(); ++line) {
    for (std::size_t j = 0; j < host.blocks_per_line(); ++j) {
      if (std::memcmp(device.block_data(line, j), host.block_data(line, j), bs::nvfp4_block_size / 2) != 0) {
        ++data_mismatches;
      }
      if (device.scale(line, j).bits() != host.scale(line, j).bits()) ++scale_mismatches;
    }
  }
  CHECK(data_mismatches == 0);
  CHECK(scale_mismatches == 0);
}

void compare_nvfp4(shape s, const bs::nvfp4_options& o, input_kind kind, bool reuse) {
  const std::vector<float> a = make_input(s.rows, s.cols, kind, static_cast<unsigned>(s.rows * 131 + s.cols));
  const std::size_t lda = s.cols + 3;
  INFO(s.rows << " × " << s.cols << " " << bs::to_string(o.rule)
              << (o.tile == bs::nvfp4_tile::square_16 ? " 16×16" : " 1×16") << (o.rowwise ? " rowwise" : "")
              << (o.columnwise ? " columnwise" : "") << (o.columnwise_rht.enabled ? " rht" : "") << " sr "
              << (o.stochastic.enabled ? o.stochastic.random_bits : 0) << " input " << name(kind)
              << (reuse ? " (reused tensor)" : ""));
  const bs::nvfp4_tensor host = bs::nvfp4_quantize(a.data(), s.rows, s.cols, lda, o);
  const bs::nvfp4_tensor device = gpu_runs::nvfp4_quantize(a, s.rows, s.cols, lda, o, reuse);
  REQUIRE(device.rowwise.has_value() == host.rowwise.has_value());
  REQUIRE(device.columnwise.has_value() == host.columnwise.has_value());
  // The transform of a NaN is some NaN: its payload, which the amax keeps, follows each processor's
  // NaN rules and the host compiler's operand order (docs/cuda.md).
  const bool transformed_nan = o.columnwise_rht.enabled && kind == input_kind::specials;
  if (host.rowwise) check_same(*device.rowwise, *host.rowwise, false);
  if (host.columnwise) check_same(*device.columnwise, *host.columnwise, transformed_nan);
}

template <class T>
void check_same(const bs::fp8_block_matrix<T>& device, const bs::fp8_block_matrix<T>& host) {
  REQUIRE(device.rows() == host.rows());
  REQUIRE(device.cols() == host.cols());
  REQUIRE(device.kind() == host.kind());
  CHECK(device.rule() == host.rule());
  std::size_t code_mismatches = 0, scale_mismatches = 0;
  for (std::size_t i = 0; i < host.rows() * host.cols(); ++i) {
    if (device.data()[i].bits() != host.data()[i].bits()) ++code_mismatches;
  }
  for (std::size_t i = 0; i < host.block_rows() * host.block_cols(); ++i) {
    if (bits(device.scale_invs()[i]) != bits(host.scale_invs()[i])) ++scale_mismatches;
  }
  CHECK(code_mismatches == 0);
  CHECK(scale_mismatches == 0);
}

template <class T, class In>
void compare_fp8_block(shape s, const bs::fp8_block_options& o, input_kind kind, bool reuse) {
  const std::vector<float> x = make_input(s.rows, s.cols, kind, static_cast<unsigned>(s.rows * 7 + s.cols));
  std::vector<In> a(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) a[i] = static_cast<In>(x[i]);
  const std::size_t lda = s.cols + 3;
  INFO(s.rows << " × " << s.cols << " " << T::format::name
              << (std::is_same<In, float>::value ? " from float" : " from bf16") << " " << bs::to_string(o.rule) << " "
              << bs::to_string(o.kind) << " pow2 " << o.power_2_scales << " eps " << o.amax_epsilon << " sr "
              << (o.stochastic.enabled ? o.stochastic.random_bits : 0) << " input " << name(kind)
              << (reuse ? " (reused matrix)" : ""));
  const bs::fp8_block_matrix<T> host = bs::fp8_block_quantize<T>(a.data(), s.rows, s.cols, lda, o);
  check_same(gpu_runs::fp8_block_quantize<T, In>(a, s.rows, s.cols, lda, o, reuse), host);
}

block_stochastic_rounding stochastic(int k) {
  block_stochastic_rounding sr;
  sr.enabled = k != 0;
  sr.seed = 0x1234'5678'9ABCull;
  sr.tensor_id = 3;
  sr.step = 17;
  sr.random_bits = k == 0 ? 32 : k;
  return sr;
}

}  // namespace

TEST_CASE("gpu::nvfp4_quantize equals the host's nvfp4_quantize byte for byte", "[gpu]") {
  require_device();
  const shape shapes[] = {{33, 50}, {130, 257}, {48, 50}, {16, 16}, {1, 1}, {64, 33}, {0, 5}};
  int run = 0;
  for (const shape s : shapes) {
    for (const auto rule : {bs::nvfp4_rule::transformer_engine, bs::nvfp4_rule::torchao}) {
      for (const auto tile : {bs::nvfp4_tile::row_16, bs::nvfp4_tile::square_16}) {
        for (const bool rht : {false, true}) {
          if (rht && s.rows % 16 != 0) continue;
          for (const int k : {0, 8, 16, 32}) {
            for (const input_kind kind : every_input) {
              bs::nvfp4_options o;
              o.rule = rule;
              o.tile = tile;
              o.rowwise = !rht || k != 8;  // the transform alone, and with the row-wise copy
              o.columnwise = true;
              o.columnwise_rht.enabled = rht;
              o.stochastic = stochastic(k);
              compare_nvfp4(s, o, kind, run++ % 3 == 0);
            }
          }
        }
      }
    }
  }
  // The row-wise copy alone, and the transform with no signs.
  bs::nvfp4_options o;
  compare_nvfp4({130, 257}, o, input_kind::specials, false);
  o.columnwise = true;
  o.rowwise = false;
  o.columnwise_rht.enabled = true;
  o.columnwise_rht.signs = bs::rht_no_signs;
  compare_nvfp4({48, 50}, o, input_kind::normal, true);
}

TEST_CASE("gpu::fp8_block_quantize equals the host's fp8_block_quantize byte for byte", "[gpu]") {
  require_device();
  const shape shapes[] = {{33, 50}, {130, 257}, {257, 130}, {1, 1}, {128, 128}};
  int run = 0;
  for (const shape s : shapes) {
    for (const auto rule : {bs::fp8_block_rule::transformer_engine, bs::fp8_block_rule::transformer_engine_reference,
                            bs::fp8_block_rule::deepseek_v3}) {
      for (const auto kind : {bs::fp8_block_kind::row_1x128, bs::fp8_block_kind::tile_128x128}) {
        for (const bool pow2 : {true, false}) {
          for (const float epsilon : {0.0f, 1e-3f}) {
            for (const int k : {0, 8, 16, 32}) {
              if (k != 0 && (!pow2 || epsilon != 0.0f)) continue;
              for (const input_kind input : every_input) {
                bs::fp8_block_options o;
                o.rule = rule;
                o.kind = kind;
                o.power_2_scales = pow2;
                o.amax_epsilon = epsilon;
                o.stochastic = stochastic(k);
                const bool reuse = run++ % 3 == 0;
                compare_fp8_block<float8_e4m3fn, float>(s, o, input, reuse);
                compare_fp8_block<float8_e5m2, float>(s, o, input, reuse);
                compare_fp8_block<float8_e4m3fn, bfloat16>(s, o, input, reuse);
                compare_fp8_block<float8_e5m2, bfloat16>(s, o, input, reuse);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("small block quantisations (sanitizer run)", "[gpu][sanitize]") {
  require_device();
  bs::nvfp4_options o;
  o.columnwise = true;
  o.tile = bs::nvfp4_tile::square_16;
  o.columnwise_rht.enabled = true;
  o.stochastic = stochastic(8);
  compare_nvfp4({48, 50}, o, input_kind::specials, true);
  bs::fp8_block_options f;
  f.kind = bs::fp8_block_kind::tile_128x128;
  compare_fp8_block<float8_e4m3fn, float>({130, 257}, f, input_kind::specials, true);
}
