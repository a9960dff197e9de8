// bulk/quantize.hpp: the fused passes equal their scalar definitions on every path and thread
// count, and amax is the NaN-aware maximum magnitude.
#include <mixprec/bulk/quantize.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "all_formats.hpp"
#include "random_floats.hpp"
#include "simd_paths.hpp"

using namespace mixprec;

TEMPLATE_TEST_CASE("quantize_n equals convert(x * scale) and returns max |x|", "[bulk][quantize]", float8_e4m3fn,
                   float8_e5m2, bfloat16, float16, float4_e2m1fn) {
  // Large enough to be split over threads and streamed; values overflow the fp8 range after
  // scaling, some are subnormal after scaling.
  const std::size_t n = 2 * bulk_elements_per_thread + 77;
  std::vector<float> x = gaussian(n, 3.0f, 1);
  x[12345] = -1000.0f;  // the largest magnitude
  std::vector<TestType> q(n);
  for (overflow o : mixprec_test::all_overflows) {
    on_every_path_and_thread_count([&] {
      const float amax = quantize_n(x.data(), n, q.data(), 100.0f, rounding::nearest_even, o);
      CHECK(amax == 1000.0f);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < n; ++i)
        wrong += q[i].bits() != convert<TestType>(x[i] * 100.0f, rounding::nearest_even, o).bits();
      CHECK(wrong == 0);
    });
  }
}

TEST_CASE("quantize_n reports NaN as the amax when any input is NaN, and 0 for no input", "[bulk][quantize]") {
  std::vector<float> x = gaussian(1000, 1.0f, 2);
  std::vector<float8_e4m3fn> q(x.size());
  x[999] = std::numeric_limits<float>::quiet_NaN();
  on_every_path_and_thread_count([&] { CHECK(std::isnan(quantize_n(x.data(), x.size(), q.data(), 2.0f))); });
  x[999] = std::numeric_limits<float>::infinity();
  CHECK(std::isinf(quantize_n(x.data(), x.size(), q.data(), 2.0f)));
  CHECK(q[999].bits() == 0x7E);  // saturating by default
  CHECK(quantize_n(x.data(), 0, q.data(), 2.0f) == 0.0f);
}

TEMPLATE_TEST_CASE("dequantize_n equals float(q) * scale_inv", "[bulk][quantize]", float8_e4m3fn, float8_e5m2, bfloat16,
                   float16, float6_e3m2fn) {
  std::vector<TestType> q;
  for (std::size_t i = 0; i < 3 * bulk_elements_per_thread; ++i) {
    q.push_back(TestType::from_bits(static_cast<typename TestType::storage_type>(
        (i * 2654435761u) & format_traits<typename TestType::format>::code_mask)));
  }
  std::vector<float> y(q.size());
  on_every_path_and_thread_count([&] {
    dequantize_n(q.data(), q.size(), y.data(), 0.01f);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      const float expected = static_cast<float>(q[i]) * 0.01f;
      wrong += std::memcmp(&expected, &y[i], 4) != 0 ? 1u : 0u;
    }
    CHECK(wrong == 0);
  });
}
