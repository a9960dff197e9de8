// distributed/all_reduce.hpp without MPI: the one-process emulation that defines what
// all_reduce_gradients returns (mpi_all_reduce_test.cpp checks the MPI calls against it).
//
//   - float32 communication is the float sum in rank order (then / p), bit for bit, for 1 to 5
//     ranks and buckets from one float per rank to larger than the arrays;
//   - bfloat16, float16, e4m3 and e5m2 stay within the documented bound element by element
//     (against the exact sum in double), averaged and summed, with zeros and values near zero;
//   - bucket_bytes changes nothing but fp8's scales;
//   - a NaN or inf on one rank, and a float16 overflow of finite inputs, give found_inf and NaN
//     everywhere;
//   - array_cursor splits a range of the concatenated arrays into the right pieces;
//   - bad options and arrays throw invalid_argument naming the value and the limit.
#include <mixprec/distributed/all_reduce.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "all_reduce_options_of.hpp"
#include "float_bits.hpp"

using namespace mixprec;

namespace {

// Rank r's gradients: mixed signs, magnitudes over 2^-20 .. 2^6, some zeros, some tiny values.
std::vector<std::vector<float>> rank_gradients(int p, std::size_t n, std::uint64_t seed) {
  std::vector<std::vector<float>> ranks(static_cast<std::size_t>(p), std::vector<float>(n));
  std::mt19937_64 random(seed);
  for (auto& g : ranks) {
    for (float& x : g) {
      const auto kind = random() % 16;
      const float mantissa = 1.0f + static_cast<float>(random() % 4096) / 4096.0f;
      const float sign = random() % 2 ? -1.0f : 1.0f;
      if (kind == 0) {
        x = 0.0f;
      } else if (kind == 1) {
        x = sign * std::ldexp(mantissa, -40);  // near zero: fp16 and fp8 underflow
      } else {
        x = sign * std::ldexp(mantissa, static_cast<int>(random() % 27) - 20);
      }
    }
  }
  return ranks;
}

std::vector<const float*> pointers(const std::vector<std::vector<float>>& ranks) {
  std::vector<const float*> p;
  for (const auto& g : ranks) p.push_back(g.data());
  return p;
}

}  // namespace

TEST_CASE("float32 communication is the float sum in rank order, bit for bit", "[all_reduce]") {
  for (int p = 1; p <= 5; ++p) {
    const std::size_t n = 1000;
    const auto ranks = rank_gradients(p, n, 17u + static_cast<unsigned>(p));
    for (bool average : {true, false}) {
      std::vector<float> expected(n);
      for (std::size_t i = 0; i < n; ++i) {
        float s = ranks[0][i];
        for (int r = 1; r < p; ++r) s += ranks[static_cast<std::size_t>(r)][i];
        expected[i] = average ? s / static_cast<float>(p) : s;
      }
      for (std::size_t bucket_bytes : {sizeof(float) * static_cast<std::size_t>(p), std::size_t{4 * 37},
                                       std::size_t{4096}, std::size_t{1} << 20}) {
        if (bucket_bytes < sizeof(float) * static_cast<std::size_t>(p)) continue;
        std::vector<float> out(n);
        const auto ptrs = pointers(ranks);
        REQUIRE_FALSE(
            emulate_all_reduce(ptrs.data(), p, n, options_of(dtype::float32, bucket_bytes, average), out.data()));
        std::size_t differing = 0;
        for (std::size_t i = 0; i < n; ++i) differing += bits_of(out[i]) != bits_of(expected[i]);
        INFO("p = " << p << ", bucket_bytes = " << bucket_bytes << ", average = " << average);
        CHECK(differing == 0);
      }
    }
  }
}

TEST_CASE("low-precision communication stays within the documented bound", "[all_reduce]") {
  for (dtype d : {dtype::bfloat16, dtype::float16, dtype::float8_e4m3fn, dtype::float8_e5m2}) {
    for (int p : {1, 2, 3, 4}) {
      const std::size_t n = 3000;
      const auto ranks = rank_gradients(p, n, 100u + static_cast<unsigned>(p));
      const auto ptrs = pointers(ranks);
      for (bool average : {true, false}) {
        const all_reduce_options options = options_of(d, 4 * 512, average);
        std::vector<float> out(n);
        REQUIRE_FALSE(emulate_all_reduce(ptrs.data(), p, n, options, out.data()));
        std::size_t violations = 0, inexact = 0;
        double worst = 0;
        for (std::size_t b = 0; b * 512 < n; ++b) {
          // The bucket's agreed amax and scales, as the emulation computes them.
          float amax = 0;
          for (std::size_t i = b * 512; i < std::min(n, (b + 1) * 512); ++i) {
            for (const auto& g : ranks) amax = std::max(amax, std::fabs(g[i]));
          }
          const bucket_scales scale = scales_of_bucket(d, amax, p, average);
          const all_reduce_bound_terms terms = all_reduce_terms(d, scale.input, scale.output);
          for (std::size_t i = b * 512; i < std::min(n, (b + 1) * 512); ++i) {
            double exact = 0, magnitude = 0;
            for (const auto& g : ranks) exact += g[i], magnitude += std::fabs(g[i]);
            const double target = exact / (average ? p : 1);
            const double error = std::fabs(static_cast<double>(out[i]) - target);
            const double bound = all_reduce_error_bound(terms, p, average, exact, magnitude);
            violations += error > bound;
            inexact += error > 0;
            if (bound > 0) worst = std::max(worst, error / bound);
          }
        }
        INFO(to_string(d) << ", p = " << p << ", average = " << average << ", worst error / bound = " << worst);
        CHECK(violations == 0);
        CHECK(inexact > 0);  // the data does exercise the rounding
      }
    }
  }
}

TEST_CASE("bucket_bytes changes only fp8's scales", "[all_reduce]") {
  const int p = 3;
  const std::size_t n = 2049;
  const auto ranks = rank_gradients(p, n, 5);
  const auto ptrs = pointers(ranks);
  for (dtype d : {dtype::float32, dtype::bfloat16, dtype::float16, dtype::float8_e4m3fn}) {
    std::vector<float> small(n), large(n);
    emulate_all_reduce(ptrs.data(), p, n, options_of(d, 4 * 3, true), small.data());
    emulate_all_reduce(ptrs.data(), p, n, options_of(d, 1 << 20, true), large.data());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < n; ++i) differing += bits_of(small[i]) != bits_of(large[i]);
    INFO(to_string(d));
    if (d == dtype::float8_e4m3fn) {
      CHECK(differing > 0);  // per-bucket scales: small buckets scale each part to its own amax
    } else {
      CHECK(differing == 0);
    }
  }
}

TEST_CASE("a non-finite gradient on one rank gives found_inf and NaN everywhere", "[all_reduce]") {
  const int p = 4;
  const std::size_t n = 700;
  for (dtype d : {dtype::float32, dtype::bfloat16, dtype::float16, dtype::float8_e4m3fn, dtype::float8_e5m2}) {
    for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()}) {
      auto ranks = rank_gradients(p, n, 9);
      ranks[2][345] = bad;
      const auto ptrs = pointers(ranks);
      std::vector<float> out(n, 1.0f);
      INFO(to_string(d) << ", " << bad);
      CHECK(emulate_all_reduce(ptrs.data(), p, n, options_of(d, 4 * 100, true), out.data()));
      std::size_t finite = 0;
      for (float x : out) finite += !std::isnan(x);
      CHECK(finite == 0);
    }
  }
  // float16 overflow of finite inputs: in the encoding (70000 > 65504) or in the sum.
  for (float big : {70000.0f, 40000.0f}) {
    std::vector<std::vector<float>> ranks(2, std::vector<float>(10, 1.0f));
    ranks[0][3] = big;
    ranks[1][3] = big;
    const auto ptrs = pointers(ranks);
    std::vector<float> out(10);
    INFO(big);
    CHECK(emulate_all_reduce(ptrs.data(), 2, 10, options_of(dtype::float16, 1024, false), out.data()));
    CHECK(std::isnan(out[0]));
    // averaged, 40000 fits: the mean is 40000
    std::vector<float> mean(10);
    CHECK(emulate_all_reduce(ptrs.data(), 2, 10, options_of(dtype::float16, 1024, true), mean.data()) == (big > 65520));
  }
}

TEST_CASE("array_cursor visits the pieces of a range of the concatenated arrays", "[all_reduce]") {
  std::vector<float> a(5), b(0), c(3), d(7);
  const gradient_view views[] = {
      {a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}, {d.data(), d.size()}};
  detail::array_cursor cursor(views, 4);
  std::vector<std::string> seen;
  auto record = [&](float* data, std::size_t offset, std::size_t n) {
    const char* name = data >= a.data() && data < a.data() + 5   ? "a"
                       : data >= c.data() && data < c.data() + 3 ? "c"
                                                                 : "d";
    const long start = data - (*name == 'a' ? a.data() : *name == 'c' ? c.data() : d.data());
    seen.push_back(std::string(name) + std::to_string(start) + "+" + std::to_string(n) + "@" + std::to_string(offset));
  };
  cursor.for_each(0, 4, record);   // a[0..4)
  cursor.for_each(4, 6, record);   // a[4], c[0..3), d[0..2)
  cursor.for_each(10, 5, record);  // d[2..7)
  CHECK(seen == std::vector<std::string>{"a0+4@0", "a4+1@0", "c0+3@1", "d0+2@4", "d2+5@0"});
}

TEST_CASE("bad options and arrays throw invalid_argument naming the value and the limit", "[all_reduce]") {
  all_reduce_options o;
  o.communication = dtype::float4_e2m1fn;
  CHECK_THROWS_WITH(validate(o, 2), Catch::Contains("communication dtype float4_e2m1fn is not one of float32"));
  o = {};
  o.bucket_bytes = 0;
  CHECK_THROWS_WITH(validate(o, 4), Catch::Contains("bucket_bytes = 0 is below 16 (one float per rank of 4)"));
  o.bucket_bytes = 12;
  CHECK_THROWS_AS(validate(o, 4), invalid_argument);
  o.bucket_bytes = (std::size_t{1} << 30) + 1;
  CHECK_THROWS_WITH(validate(o, 2), Catch::Contains("bucket_bytes = 1073741825 is above the largest, 1073741824"));
  o = {};
  CHECK_NOTHROW(validate(o, 64));
  CHECK_THROWS_WITH(validate(o, 0), Catch::Contains("world size 0 is below 1"));

  std::vector<float> g(4);
  std::vector<bfloat16> h(4);
  const gradient_view null_array[] = {{g.data(), g.size()}, {static_cast<float*>(nullptr), 3}};
  CHECK_THROWS_WITH(detail::all_reduce_total(null_array, 2),
                    Catch::Contains("array 1 of 2 is a null pointer with size 3"));
  const gradient_view narrow[] = {{g.data(), g.size()}, {h.data(), h.size()}};
  CHECK_THROWS_WITH(detail::all_reduce_total(narrow, 2),
                    Catch::Contains("array 1 holds bfloat16 gradients; the all-reduce accumulates float32 arrays"));
  CHECK(detail::all_reduce_total(null_array, 1) == 4);
  CHECK(detail::all_reduce_total(nullptr, 0) == 0);
}
