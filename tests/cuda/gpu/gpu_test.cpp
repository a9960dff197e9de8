// The CUDA backend on a GPU against the host library (label `gpu`: needs a CUDA device; run by
// scripts/gpu-check.sh, never by CI).  The device work is in *_runs.cu; this file computes the host
// references and compares bit for bit (the GEMM against a float64 reference within the bound of
// docs/cuda.md).  "[sanitize]" marks the small cases that the script also runs under
// compute-sanitizer (memcheck, racecheck).
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/bulk/quantize.hpp>
#include <mixprec/convert.hpp>
#include <mixprec/limits.hpp>
#include <mixprec/scaling/scaling.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "format_dispatch.hpp"
#include "gpu_runs.hpp"

using namespace mixprec;
using gpu_runs::format_id;

namespace {

void require_device() {
  const gpu_runs::device_info device = gpu_runs::current_device();
  INFO("these tests need a CUDA device (scripts/gpu-check.sh runs them on one)");
  REQUIRE(!device.name.empty());
}

template <class T>
std::uint16_t host_code(std::uint32_t x, rounding r, overflow o) {
  return static_cast<std::uint16_t>(
      detail::convert_bits<ieee_binary32, typename T::format>(x, detail::to_round_mode(r), o, 0));
}

// Every float: the device's codes in chunks of 2^26, compared on all host threads.
void compare_every_float(format_id f, rounding r, overflow o) {
  constexpr std::uint64_t chunk = std::uint64_t{1} << 26;
  std::vector<std::uint16_t> codes(chunk);
  std::atomic<std::uint64_t> mismatches{0};
  std::atomic<std::uint32_t> first{0};
  for (std::uint64_t start = 0; start < (std::uint64_t{1} << 32); start += chunk) {
    gpu_runs::encode_range(f, start, chunk, r, o, codes.data());
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        gpu_runs::with_format(f, [&](auto tag) {
          using T = typename decltype(tag)::type;
          std::uint64_t local = 0;
          for (std::uint64_t i = t; i < chunk; i += threads) {
            const auto x = static_cast<std::uint32_t>(start + i);
            if (codes[i] != host_code<T>(x, r, o) && local++ == 0 && mismatches.load() == 0) first = x;
          }
          mismatches += local;
        });
      });
    }
    for (auto& w : workers) w.join();
  }
  INFO(gpu_runs::name(f) << " " << to_string(r) << " " << to_string(o) << ": " << mismatches
                         << " mismatches, first x = 0x" << std::hex << first.load());
  CHECK(mismatches == 0);
}

// A stratified sample: every 997th float plus every value of the format, the midpoints between
// neighbours and the floats around both, and the special inputs.
std::vector<std::uint32_t> sample_inputs(format_id f) {
  std::vector<std::uint32_t> inputs;
  for (std::uint64_t u = 0; u <= 0xFFFF'FFFFu; u += 997) inputs.push_back(static_cast<std::uint32_t>(u));
  gpu_runs::with_format(f, [&](auto tag) {
    using traits = format_traits<typename decltype(tag)::type::format>;
    std::uint32_t previous = 0;
    for (std::uint64_t c = 0; c <= traits::magnitude_mask; ++c) {
      if (traits::is_nan(c) || traits::is_infinity(c)) continue;
      const auto value =
          static_cast<std::uint32_t>(detail::convert_bits<typename decltype(tag)::type::format, ieee_binary32>(
              static_cast<typename traits::storage_type>(c), detail::round_mode::nearest_even, overflow::non_finite,
              0));
      for (const std::uint32_t v : {value, previous + (value - previous) / 2}) {
        for (std::uint32_t d = 0; d <= 2; ++d) {
          for (const std::uint32_t sign : {0u, 0x8000'0000u}) {
            inputs.push_back(((v + d) & 0x7FFF'FFFFu) | sign);
            inputs.push_back(((v - d) & 0x7FFF'FFFFu) | sign);
          }
        }
      }
      previous = value;
    }
  });
  for (const std::uint32_t special : {0x7F80'0000u, 0x7FC0'0000u, 0x7F80'0001u, 0x7FFF'FFFFu, 0x0000'0001u}) {
    inputs.push_back(special);
    inputs.push_back(special | 0x8000'0000u);
  }
  if (inputs.size() % 2 != 0) inputs.push_back(0);
  return inputs;
}

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed, float spread) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<T> values(n);
  for (auto& v : values) {
    if constexpr (std::is_same<T, float>::value) {
      v = normal(random);
    } else {
      v = convert<T>(normal(random));
    }
  }
  return values;
}

std::vector<float> with_specials(std::vector<float> x) {
  const float specials[] = {std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            0.0f,
                            -0.0f,
                            1e-40f,
                            -1e-40f,
                            448.0f,
                            464.0f,
                            65504.0f,
                            65520.0f,
                            3e38f,
                            -57344.0f};
  for (std::size_t i = 0; i < x.size() && i < 997 * std::size(specials); i += 997) x[i] = specials[i / 997];
  return x;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Bulk conversions against the host: float -> T against the host's convert_n, T -> float and
// T -> float16 (every code of T) against the scalar conversions, quantise and dequantise against
// the host's functions.  (T -> float16 is compared with the scalar conversion, the contract's
// reference: the host convert_n stages minifloat -> minifloat through float, which loses the
// payload of non-canonical NaN codes, e.g. e5m2 0x7D -> 0x7E00 instead of 0x7F00.)
template <class T>
void check_bulk_format(std::size_t n) {
  const std::vector<float> x = with_specials(random_values<float>(n, 3, 300.0f));
  std::vector<T> codes(n);
  const std::uint32_t code_count = 1u << format_traits<typename T::format>::total_bits;
  for (std::size_t i = 0; i < n; ++i) codes[i] = T::from_bits(static_cast<typename T::storage_type>(i % code_count));
  for (const auto& offsets : {std::pair<std::size_t, std::size_t>{0, 0}, {1, 3}, {3, 1}, {4, 8}}) {
    for (const rounding r : {rounding::nearest_even, rounding::toward_zero, rounding::upward}) {
      for (const overflow o : {overflow::non_finite, overflow::saturate}) {
        INFO(T::format::name << " offsets " << offsets.first << ", " << offsets.second << " " << to_string(r) << " "
                             << to_string(o));
        std::vector<T> host(n);
        convert_n(x.data(), n, host.data(), r, o);
        const std::vector<T> device = gpu_runs::convert_n<float, T>(x, offsets.first, offsets.second, r, o);
        CHECK(same_bits(device, host));
        // From T: every code, non-canonical NaNs included, against the scalar conversions.
        std::vector<float> back(n);
        std::vector<float16> narrowed(n);
        for (std::size_t i = 0; i < n; ++i) {
          back[i] = static_cast<float>(codes[i]);
          narrowed[i] = convert<float16>(codes[i], r, o);
        }
        CHECK(same_bits(gpu_runs::convert_n<T, float>(codes, offsets.second, offsets.first, r, o), back));
        CHECK(same_bits(gpu_runs::convert_n<T, float16>(codes, offsets.first, offsets.second, r, o), narrowed));
      }
    }
  }
  // quantize / dequantize: the scale as a value and in device memory.
  for (const bool on_device : {false, true}) {
    for (const float scale : {1.0f, 0.125f, 3.0f}) {
      std::vector<T> host(n), device;
      const float host_amax = quantize_n(x.data(), n, host.data(), scale);
      const float device_amax =
          gpu_runs::quantize_n<T>(x, 1, device, scale, on_device, rounding::nearest_even, overflow::saturate);
      INFO(T::format::name << " quantize scale " << scale << (on_device ? " (device)" : ""));
      CHECK(detail::bit_cast<std::uint32_t>(device_amax) == detail::bit_cast<std::uint32_t>(host_amax));
      CHECK(same_bits(device, host));
      std::vector<float> host_back(n);
      dequantize_n(host.data(), n, host_back.data(), 1.0f / scale);
      CHECK(same_bits(gpu_runs::dequantize_n<T>(host, 3, 1.0f / scale, on_device), host_back));
    }
  }
}

template <class T>
gpu_runs::gradient_array gradient_array_of(const std::vector<T>& values, std::size_t offset) {
  gpu_runs::gradient_array a;
  a.type = std::is_same<T, float>::value      ? dtype::float32
           : std::is_same<T, bfloat16>::value ? dtype::bfloat16
                                              : dtype::float16;
  a.size = values.size();
  a.offset = offset;
  a.bytes.resize(values.size() * sizeof(T));
  std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

// The same arrays through the host's unscale_and_check and the device's; bytes and flag equal.
// Arrays of float, bfloat16 and float16 in turn, or (sixteen_bit_only) bfloat16 and float16: the
// kernel variant of batches without float arrays.
void check_unscale(std::size_t arrays, std::size_t largest, bool inject, float inv_scale, rounding r, unsigned seed,
                   bool sixteen_bit_only = false) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<std::size_t> size(0, largest);
  std::vector<gpu_runs::gradient_array> device;
  for (std::size_t a = 0; a < arrays; ++a) {
    const std::size_t n = a == 0 ? largest : size(random), offset = a % 5;
    std::vector<float> values = random_values<float>(n, seed + static_cast<unsigned>(a), 1e4f);
    if (inject && a == arrays / 2 && n > 0)
      values[n / 2] = (a % 2) ? -std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::quiet_NaN();
    switch (sixteen_bit_only ? 1 + a % 2 : a % 3) {
      case 0:
        device.push_back(gradient_array_of(values, offset));
        break;
      case 1: {
        std::vector<bfloat16> b(n);
        convert_n(values.data(), n, b.data());
        device.push_back(gradient_array_of(b, offset));
        break;
      }
      default: {
        std::vector<float16> h(n);
        convert_n(values.data(), n, h.data());
        device.push_back(gradient_array_of(h, offset));
        break;
      }
    }
  }
  std::vector<gpu_runs::gradient_array> host = device;
  std::vector<gradient_view> views;
  for (auto& a : host) {
    void* data = a.bytes.data();
    if (a.type == dtype::float32) views.emplace_back(static_cast<float*>(data), a.size);
    if (a.type == dtype::bfloat16) views.emplace_back(static_cast<bfloat16*>(data), a.size);
    if (a.type == dtype::float16) views.emplace_back(static_cast<float16*>(data), a.size);
  }
  unscale_options options;
  options.gradient_rounding = r;
  const bool host_finite = unscale_and_check(views.data(), views.size(), inv_scale, options);
  const float found = gpu_runs::unscale_and_check(device, inv_scale, r);
  CHECK(found == (host_finite ? 0.0f : 1.0f));
  CHECK(host_finite == !inject);
  for (std::size_t a = 0; a < arrays; ++a) {
    INFO("array " << a << " of " << arrays << ", " << host[a].size << " elements");
    CHECK(host[a].bytes == device[a].bytes);
  }
}

// The host side of the scaled training step of scaler_runs.cu, with loss_scaler.
template <class Policy>
void check_trajectory(const Policy& policy, const scaler_options& options, std::size_t iterations, unsigned seed,
                      std::size_t n) {
  std::mt19937 random(seed);
  std::bernoulli_distribution overflow(0.04);
  std::vector<int> schedule(iterations, 0);
  for (std::size_t i = 0; i < iterations; ++i) schedule[i] = overflow(random) ? 1 + static_cast<int>(i % 2) : 0;
  for (std::size_t i = iterations / 2; i < iterations / 2 + 12 && i < iterations; ++i) schedule[i] = 1;  // a burst
  const std::vector<float> base = random_values<float>(n, seed, 1e-3f);
  const float lr = 0.01f;

  loss_scaler<Policy> host(policy, options);
  const std::size_t half = n / 2;
  std::vector<float> w(n, 0.0f), g32(half);
  std::vector<bfloat16> g16(n - half);
  std::vector<gpu_runs::step_record> expected(iterations);
  for (std::size_t it = 0; it < iterations; ++it) {
    volatile float loss = 0.375f;
    expected[it].scaled_loss = host.scale(static_cast<float>(loss));
    const float s = host.get_scale();
    for (std::size_t i = 0; i < n; ++i) {
      volatile float b = base[i];
      float v = b * s;
      if (i == 0 && schedule[it] == 1) v = std::numeric_limits<float>::infinity();
      if (i == 0 && schedule[it] == 2) v = std::numeric_limits<float>::quiet_NaN();
      if (i < half) {
        g32[i] = v;
      } else {
        g16[i - half] = bfloat16(v);
      }
    }
    host.unscale({{g32.data(), half}, {g16.data(), n - half}});
    expected[it].stepped = host.step([&] {
      for (std::size_t i = 0; i < n; ++i) {
        const float g = i < half ? g32[i] : static_cast<float>(g16[i - half]);
        volatile float step = lr * g;
        w[i] = w[i] - step;
      }
    });
    host.update();
    expected[it].scale = host.get_scale();
    expected[it].state = host.state();
  }

  for (const bool graph : {true, false}) {
    std::vector<float> weights;
    scaler_counters counters;
    const std::vector<gpu_runs::step_record> device =
        gpu_runs::scaled_training_run(policy, options, schedule, base, lr, graph, weights, counters);
    REQUIRE(device.size() == iterations);
    for (std::size_t it = 0; it < iterations; ++it) {
      INFO(Policy::name << (graph ? " (CUDA graph)" : " (direct)") << ", iteration " << it);
      REQUIRE(detail::bit_cast<std::uint32_t>(device[it].scaled_loss) ==
              detail::bit_cast<std::uint32_t>(expected[it].scaled_loss));
      REQUIRE(device[it].scale == expected[it].scale);
      REQUIRE(device[it].state == expected[it].state);
      REQUIRE(device[it].stepped == expected[it].stepped);
    }
    CHECK(counters == host.get_amp_stats().counters);
    CHECK(same_bits(weights, w));
  }
}

// The float64 reference and the bound of docs/cuda.md: per output, the error is at most
// e(K) · |alpha sa sb| · sum_k |a b| + 2^-23 · |beta C|, with e(K) = (K + 4) 2^-22 for 16-bit
// inputs and (ceil(K / 32) + 2) 2^-13 for fp8 (the tensor cores' reduced fp8 accumulation).
template <class TA, class TB>
void check_gemm(std::size_t M, std::size_t N, std::size_t K, std::size_t pad, float alpha, float beta, float sa,
                float sb, gpu_runs::gemm_path path) {
  const std::size_t lda = K + pad, ldb = N + pad, ldc = N + 2 * pad;
  const std::vector<TA> A = random_values<TA>(std::max<std::size_t>(1, M * lda), 11, 1.0f);
  const std::vector<TB> B = random_values<TB>(std::max<std::size_t>(1, K * ldb), 12, 1.0f);
  const std::vector<float> C0 = random_values<float>(std::max<std::size_t>(1, M * ldc), 13, 1.0f);
  std::vector<float> C = C0;
  gpu_runs::gemm_path used = path;
  gpu_runs::gemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, sa, sb, path, &used);
  const bool eight_bit = sizeof(TA) == 1;
  const double e = eight_bit ? (std::ceil(static_cast<double>(K) / 32) + 2) * std::ldexp(1.0, -13)
                             : (static_cast<double>(K) + 4) * std::ldexp(1.0, -22);
  const double scale = static_cast<double>(alpha) * sa * sb;
  // B transposed into doubles, so that each output's dot product reads two contiguous rows; the
  // rows of C are shared among all host threads (the 1024^3 cases are 10^9 products each).
  std::vector<double> bt(N * K), a64(M * K);
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t j = 0; j < N; ++j) bt[j * K + k] = static_cast<double>(B[k * ldb + j]);
  }
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t k = 0; k < K; ++k) a64[i * K + k] = static_cast<double>(A[i * lda + k]);
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<double> worst_of(threads, 0.0);
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::size_t i = t; i < M; i += threads) {
        for (std::size_t j = 0; j < N; ++j) {
          double exact = 0, magnitude = 0;
          for (std::size_t k = 0; k < K; ++k) {
            const double p = a64[i * K + k] * bt[j * K + k];
            exact += p;
            magnitude += std::fabs(p);
          }
          const double c0 = beta != 0.0f ? static_cast<double>(beta) * C0[i * ldc + j] : 0.0;
          const double reference = scale * exact + c0;
          const double bound = e * std::fabs(scale) * magnitude + std::ldexp(std::fabs(c0), -23) + 1e-30;
          const double error = std::fabs(C[i * ldc + j] - reference) / bound;
          // NaN never passes: a NaN error becomes infinitely bad.
          worst_of[t] = std::max(worst_of[t], std::isnan(error) ? std::numeric_limits<double>::infinity() : error);
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  const double worst = *std::max_element(worst_of.begin(), worst_of.end());
  // Padding between rows of C is never written.
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = N; j < ldc; ++j) REQUIRE(C[i * ldc + j] == C0[i * ldc + j]);
  }
  INFO("M " << M << " N " << N << " K " << K << " pad " << pad << " alpha " << alpha << " beta " << beta
            << (used == gpu_runs::gemm_path::cublaslt ? " cuBLASLt" : " own kernel")
            << ": worst error / bound = " << worst);
  CHECK(worst <= 1.0);
}

template <class TA, class TB>
void check_gemm_shapes(gpu_runs::gemm_path path, bool small) {
  const std::size_t shapes[][4] = {{1, 1, 1, 0},      {5, 7, 3, 1},     {128, 128, 64, 0},    {129, 257, 96, 0},
                                   {300, 200, 70, 3}, {64, 72, 136, 8}, {1024, 1024, 1024, 0}};
  for (const auto& s : shapes) {
    if (small && s[0] * s[1] * s[2] > 300 * 200 * 70) continue;
    check_gemm<TA, TB>(s[0], s[1], s[2], s[3], 1.0f, 0.0f, 1.0f, 1.0f, path);
    check_gemm<TA, TB>(s[0], s[1], s[2], s[3], 0.5f, -2.0f, sizeof(TA) == 1 ? 0.25f : 1.0f,
                       sizeof(TA) == 1 ? 8.0f : 1.0f, path);
  }
}

}  // namespace

TEST_CASE("device conversions equal the host's on every float: bf16, fp16, e4m3fn, e5m2, nearest-even",
          "[gpu][exhaustive]") {
  require_device();
  for (const format_id f : {format_id::bfloat16, format_id::float16, format_id::e4m3fn, format_id::e5m2}) {
    for (const overflow o : {overflow::non_finite, overflow::saturate})
      compare_every_float(f, rounding::nearest_even, o);
  }
}

TEST_CASE("device conversions equal the host's on a stratified sample: every format, mode and overflow rule", "[gpu]") {
  require_device();
  for (const format_id f : gpu_runs::all_formats) {
    const std::vector<std::uint32_t> inputs = sample_inputs(f);
    for (const rounding r : {rounding::nearest_even, rounding::nearest_away, rounding::toward_zero, rounding::upward,
                             rounding::downward, rounding::to_odd}) {
      for (const overflow o : {overflow::non_finite, overflow::saturate}) {
        for (const bool pairs : {false, true}) {
          const std::vector<std::uint16_t> device = gpu_runs::encode_list(f, inputs, r, o, pairs);
          std::size_t mismatches = 0, first = 0;
          gpu_runs::with_format(f, [&](auto tag) {
            for (std::size_t i = 0; i < inputs.size(); ++i) {
              if (device[i] != host_code<typename decltype(tag)::type>(inputs[i], r, o) && mismatches++ == 0) first = i;
            }
          });
          INFO(gpu_runs::name(f) << " " << to_string(r) << " " << to_string(o) << (pairs ? " (pairs)" : "") << ": "
                                 << mismatches << " of " << inputs.size() << " differ, first x = 0x" << std::hex
                                 << inputs[first]);
          CHECK(mismatches == 0);
        }
      }
    }
  }
}

TEST_CASE("device decoding equals the host's on every code, in both lanes of the pair form", "[gpu][sanitize]") {
  require_device();
  for (const format_id f : gpu_runs::all_formats) {
    gpu_runs::with_format(f, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const std::uint32_t codes = 1u << format_traits<typename T::format>::total_bits;
      const std::vector<std::uint32_t> single = gpu_runs::decode_all(f, false), pairs = gpu_runs::decode_all(f, true);
      for (std::uint32_t c = 0; c < codes; ++c) {
        const auto expected =
            detail::bit_cast<std::uint32_t>(static_cast<float>(T::from_bits(static_cast<typename T::storage_type>(c))));
        INFO(T::format::name << " code 0x" << std::hex << c);
        REQUIRE(single[c] == expected);
        REQUIRE(pairs[c] == expected);
        REQUIRE(pairs[codes + c] == expected);
      }
    });
  }
}

TEST_CASE("convert_n, quantize_n and dequantize_n on the device equal the host's bit for bit", "[gpu]") {
  require_device();
  constexpr std::size_t n = 1'000'003;
  check_bulk_format<float16>(n);
  check_bulk_format<bfloat16>(n);
  check_bulk_format<float8_e4m3fn>(n);
  check_bulk_format<float8_e5m2>(n);
  check_bulk_format<float8_e4m3fnuz>(n);
  check_bulk_format<float8_e5m2fnuz>(n);
  check_bulk_format<float6_e3m2fn>(n);
  check_bulk_format<float6_e2m3fn>(n);
  check_bulk_format<float4_e2m1fn>(n);
  check_bulk_format<float8_e8m0fnu>(n);
  check_bulk_format<float8_ue4m3>(n);
  check_bulk_format<float8_e4m3>(n);
  check_bulk_format<float8_e3m4>(n);
  check_bulk_format<float8_e4m3b11fnuz>(n);
  check_bulk_format<tfloat32>(n);
  std::vector<float> x = with_specials(random_values<float>(n, 5, 10.0f)), same(n);
  convert_n(x.data(), n, same.data());
  CHECK(same_bits(gpu_runs::convert_n<float, float>(x, 1, 2, rounding::nearest_even, overflow::non_finite), same));
}

// The rounding options of issue 17 against the host: convert_n under subnormals::flush in every
// rounding mode (float -> T on values around T's smallest normal, T -> float on every code), and
// convert_stochastic_n under both rules and both subnormal policies, at two alignments.
template <class T>
void check_rounding_options(std::size_t n) {
  std::vector<float> x = random_values<float>(n, 11, 2.0f);
  const float smallest = static_cast<float>(std::numeric_limits<T>::min());
  for (float& v : x) v *= smallest;  // half of them below T's normal range
  x = with_specials(std::move(x));
  std::vector<T> codes(n);
  const std::uint32_t code_count = 1u << std::min(format_traits<typename T::format>::total_bits, 20);
  for (std::size_t i = 0; i < n; ++i) codes[i] = T::from_bits(static_cast<typename T::storage_type>(i % code_count));
  for (const auto& offsets : {std::pair<std::size_t, std::size_t>{0, 0}, {1, 3}}) {
    for (const rounding r : {rounding::nearest_even, rounding::nearest_away, rounding::toward_zero, rounding::upward,
                             rounding::downward, rounding::to_odd, rounding::nearest_zero}) {
      for (const overflow o : {overflow::non_finite, overflow::saturate}) {
        INFO(T::format::name << " offsets " << offsets.first << ", " << offsets.second << " " << to_string(r) << " "
                             << to_string(o) << " flush");
        std::vector<T> host(n);
        convert_n(x.data(), n, host.data(), r, o, subnormals::flush);
        CHECK(
            same_bits(gpu_runs::convert_n<float, T>(x, offsets.first, offsets.second, r, o, subnormals::flush), host));
        std::vector<float> back(n);
        convert_n(codes.data(), n, back.data(), r, o, subnormals::flush);
        CHECK(same_bits(gpu_runs::convert_n<T, float>(codes, offsets.second, offsets.first, r, o, subnormals::flush),
                        back));
      }
    }
    for (const stochastic_rule rule : {stochastic_rule::proportional, stochastic_rule::equal_probability}) {
      for (const subnormals policy : {subnormals::keep, subnormals::flush}) {
        for (const overflow o : {overflow::non_finite, overflow::saturate}) {
          INFO(T::format::name << " offsets " << offsets.first << ", " << offsets.second << " stochastic "
                               << to_string(rule) << " " << to_string(policy) << " " << to_string(o));
          const std::uint64_t seed = 0x5eed'0000'0000'0017u + offsets.first;
          std::vector<T> host(n);
          convert_stochastic_n(x.data(), n, host.data(), seed, o, rule, policy);
          CHECK(same_bits(gpu_runs::convert_stochastic_n<T>(x, offsets.first, offsets.second, seed, o, rule, policy),
                          host));
        }
      }
    }
  }
}

TEST_CASE("convert_n's subnormal policies and convert_stochastic_n on the device equal the host's bit for bit",
          "[gpu]") {
  require_device();
  constexpr std::size_t n = 100'003;
  for (const format_id f : gpu_runs::all_formats) {
    gpu_runs::with_format(f, [&](auto t) { check_rounding_options<typename decltype(t)::type>(n); });
  }
  check_rounding_options<tfloat32>(n);  // (no format_id: the instruction tests do not take it)
}

TEST_CASE("small bulk conversions and quantisation (sanitizer run)", "[gpu][sanitize]") {
  require_device();
  check_bulk_format<bfloat16>(1000);
  check_bulk_format<float8_e4m3fn>(37);
}

TEST_CASE("multi-tensor unscale on the device equals the host's, bytes and flag", "[gpu]") {
  require_device();
  for (const float inv_scale : {1.0f / 65536, 1.0f, 3.0f}) {
    for (const bool inject : {false, true}) {
      check_unscale(150, 200'000, inject, inv_scale, rounding::nearest_even, 21);
    }
  }
  check_unscale(3, 65536 * 330 + 17, true, 0.5f, rounding::nearest_even, 22);  // one array of 331 chunks
  check_unscale(10, 5000, false, 1.0f / 3, rounding::toward_zero, 23);
  // More parts than the grid has blocks: each block walks across many arrays of one batch.
  check_unscale(64, 900'000, true, 1.0f / 8, rounding::nearest_even, 26);
  check_unscale(20, 100'000, true, 1.0f / 3, rounding::upward, 27);
  for (const bool inject : {false, true}) {
    check_unscale(64, 900'000, inject, 1.0f / 1024, rounding::nearest_even, 28, true);
    check_unscale(40, 30'000, inject, 1.0f / 3, rounding::toward_zero, 29, true);
  }
}

TEST_CASE("small multi-tensor unscale (sanitizer run)", "[gpu][sanitize]") {
  require_device();
  check_unscale(70, 3000, true, 1.0f / 1024, rounding::nearest_even, 24);
  check_unscale(5, 1000, false, 1.0f / 1024, rounding::nearest_even, 25);
  check_unscale(9, 70'000, true, 1.0f / 1024, rounding::nearest_even, 30, true);
}

TEST_CASE("a CUDA graph of a full scaled step replayed 1000 times follows the host loss_scaler", "[gpu]") {
  require_device();
  dynamic_scaling dynamic;
  dynamic.growth_interval = 25;
  check_trajectory(dynamic, scaler_options{}, 1000, 31, 5000);
  hysteresis_scaling megatron;
  megatron.growth_interval = 20;
  megatron.hysteresis = 3;
  check_trajectory(megatron, scaler_options{}, 1000, 32, 5000);
  hysteresis_scaling deepspeed = megatron;
  deepspeed.rules = hysteresis_scaling::rule_set::deepspeed;
  scaler_options bounded;
  bounded.min_scale = 256;
  bounded.max_scale = 1 << 20;
  check_trajectory(deepspeed, bounded, 1000, 33, 5000);
  check_trajectory(no_scaling{}, scaler_options{}, 200, 34, 5000);
  static_scaling fixed;
  fixed.scale = 4096;
  check_trajectory(fixed, scaler_options{}, 200, 36, 5000);
}

TEST_CASE("a short graph-captured scaled step (sanitizer run)", "[gpu][sanitize]") {
  require_device();
  dynamic_scaling dynamic;
  dynamic.growth_interval = 5;
  check_trajectory(dynamic, scaler_options{}, 40, 35, 700);
}

TEST_CASE("a device scaler error surfaces as the host scaler's exception on check()", "[gpu][sanitize]") {
  require_device();
  scaler_options options;
  options.max_consecutive_skips = 3;
  CHECK_THAT(gpu_runs::device_scaler_error_message(options, 5),
             Catch::Contains("3 consecutive skipped steps reached scaler_options::max_consecutive_skips = 3"));
  CHECK(gpu_runs::device_scaler_error_message(scaler_options{}, 5).empty());
}

TEST_CASE("the tensor-core GEMM is within its bound of a float64 reference", "[gpu]") {
  require_device();
  check_gemm_shapes<bfloat16, bfloat16>(gpu_runs::gemm_path::own_kernel, false);
  check_gemm_shapes<float16, float16>(gpu_runs::gemm_path::own_kernel, false);
  if (gpu_runs::current_device().capability >= 89) {
    check_gemm_shapes<float8_e4m3fn, float8_e4m3fn>(gpu_runs::gemm_path::own_kernel, false);
    check_gemm_shapes<float8_e4m3fn, float8_e5m2>(gpu_runs::gemm_path::own_kernel, false);
    check_gemm_shapes<float8_e5m2, float8_e4m3fn>(gpu_runs::gemm_path::own_kernel, false);
    check_gemm_shapes<float8_e5m2, float8_e5m2>(gpu_runs::gemm_path::own_kernel, false);
  }
}

TEST_CASE("the cuBLASLt GEMM (or its fallback) is within the same bound", "[gpu]") {
  require_device();
  check_gemm_shapes<bfloat16, bfloat16>(gpu_runs::gemm_path::cublaslt, false);
  check_gemm_shapes<float16, float16>(gpu_runs::gemm_path::cublaslt, false);
  if (gpu_runs::current_device().capability >= 89) {
    check_gemm_shapes<float8_e4m3fn, float8_e4m3fn>(gpu_runs::gemm_path::cublaslt, false);
    check_gemm_shapes<float8_e5m2, float8_e5m2>(gpu_runs::gemm_path::cublaslt, false);
  }
}

TEST_CASE("small GEMMs (sanitizer run)", "[gpu][sanitize]") {
  require_device();
  check_gemm_shapes<bfloat16, bfloat16>(gpu_runs::gemm_path::own_kernel, true);
  if (gpu_runs::current_device().capability >= 89) {
    check_gemm_shapes<float8_e4m3fn, float8_e5m2>(gpu_runs::gemm_path::own_kernel, true);
  }
}
