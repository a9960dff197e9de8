// distributed/nccl_all_reduce.cuh on a GPU against the host's definition of the result
// (emulate_all_reduce, distributed/all_reduce.hpp): a one-rank NCCL communicator over device 0
// still runs every step of the device scheme (the amax kernel and its ncclAllReduce for fp8, the
// encodes, the owner's sum and division, the re-encode and its finiteness check, the decodes, the
// found_inf agreement and the NaN fill); only the ncclSend/ncclRecv pairs have no peer.  Every
// communication dtype, averaged and summed, on empty arrays, arrays within one bucket and
// arrays over several buckets crossing array boundaries, with an inf, a NaN and values that
// overflow float16 planted: the device bits must be the emulation's.  Built into gpu_test where
// NCCL is found.
#include <mixprec/distributed/all_reduce.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nccl_all_reduce_runs.hpp"

using namespace mixprec;

namespace {

constexpr dtype communication_dtypes[] = {dtype::float32, dtype::bfloat16, dtype::float16, dtype::float8_e4m3fn,
                                          dtype::float8_e5m2};

// Gradients of every magnitude from 2^-30 to 2^12, both signs, some zeros.
std::vector<std::vector<float>> gradients(const std::vector<std::size_t>& sizes, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<std::vector<float>> arrays;
  for (std::size_t n : sizes) {
    std::vector<float> a(n);
    for (float& x : a) {
      const int e = static_cast<int>(random() % 43) - 30;
      const float m = 1.0f + static_cast<float>(random() % 4096) / 4096.0f;
      x = random() % 17 == 0 ? 0.0f : (random() % 2 == 0 ? 1.0f : -1.0f) * std::ldexp(m, e);
    }
    arrays.push_back(a);
  }
  return arrays;
}

std::vector<std::uint32_t> bits_of(const std::vector<std::vector<float>>& arrays) {
  std::vector<std::uint32_t> bits;
  for (const auto& a : arrays) {
    const std::size_t at = bits.size();
    bits.resize(at + a.size());
    if (!a.empty()) std::memcpy(bits.data() + at, a.data(), a.size() * sizeof(float));
  }
  return bits;
}

// emulate_all_reduce for one rank over the concatenation: {found_inf, the bits}.
std::pair<bool, std::vector<std::uint32_t>> emulated(const std::vector<std::vector<float>>& arrays,
                                                     const all_reduce_options& options) {
  std::vector<float> concatenated;
  for (const auto& a : arrays) concatenated.insert(concatenated.end(), a.begin(), a.end());
  std::vector<float> out(concatenated.size());
  const float* ranks[1] = {concatenated.data()};
  const bool found_inf = emulate_all_reduce(ranks, 1, concatenated.size(), options, out.data());
  return {found_inf, bits_of({out})};
}

void check_against_emulation(const std::vector<std::vector<float>>& arrays, const all_reduce_options& options,
                             const std::string& what) {
  INFO(what << ", " << to_string(options.communication) << (options.average ? ", averaged" : ", summed")
            << ", bucket_bytes " << options.bucket_bytes);
  const auto want = emulated(arrays, options);
  const gpu_runs::nccl_reduction got = gpu_runs::nccl_all_reduce(arrays, options, 2);
  CHECK(got.result.found_inf == want.first);
  const std::vector<std::uint32_t> got_bits = bits_of(got.arrays);
  REQUIRE(got_bits.size() == want.second.size());
  std::size_t first_wrong = got_bits.size();
  for (std::size_t i = 0; i < got_bits.size() && first_wrong == got_bits.size(); ++i) {
    if (got_bits[i] != want.second[i]) first_wrong = i;
  }
  INFO("first differing element " << first_wrong);
  CHECK(first_wrong == got_bits.size());
  const std::size_t per_bucket = options.bucket_bytes / sizeof(float);
  const std::size_t total = got_bits.size();
  if (!want.first) CHECK(got.result.buckets == (total + per_bucket - 1) / per_bucket);
  CHECK(got.result.bytes_sent == 0);  // one rank sends to nobody
}

}  // namespace

TEST_CASE("NCCL all-reduce on one rank equals emulate_all_reduce bit for bit: every dtype and layout", "[gpu][nccl]") {
  const float inf = std::numeric_limits<float>::infinity();
  for (dtype d : communication_dtypes) {
    for (bool average : {true, false}) {
      all_reduce_options options;
      options.communication = d;
      options.average = average;
      options.bucket_bytes = 1000 * sizeof(float);
      check_against_emulation({}, options, "no arrays");
      check_against_emulation({{}, {}}, options, "two empty arrays");
      check_against_emulation(gradients({3, 0, 500}, 1), options, "within one bucket");
      check_against_emulation(gradients({1500, 7, 2600, 1}, 2), options, "five buckets across array boundaries");
      options.bucket_bytes = 37 * sizeof(float);
      check_against_emulation(gradients({100, 1, 260}, 3), options, "odd buckets of 37");
      options.bucket_bytes = std::size_t{25} << 20;
      check_against_emulation(gradients({70000, 3}, 4), options, "the default 25 MiB bucket");

      options.bucket_bytes = 1000 * sizeof(float);
      auto planted = gradients({1500, 900}, 5);
      planted[1][17] = inf;
      check_against_emulation(planted, options, "an inf planted");
      planted[1][17] = -std::numeric_limits<float>::quiet_NaN();
      check_against_emulation(planted, options, "a NaN planted");
      planted[1][17] = 70000.0f;  // float16 overflows to inf (found_inf); fp8 and bfloat16 do not
      check_against_emulation(planted, options, "70000 planted");
      planted[1][17] = 0x1.fffffep127f;  // bfloat16 overflows too
      check_against_emulation(planted, options, "float max planted");
      planted[1][17] = std::ldexp(1.0f, -140);  // a subnormal float
      check_against_emulation(planted, options, "a subnormal planted");
    }
  }
}

TEST_CASE("nccl_process_group stages host gradients and gives the device all-reduce's bits", "[gpu][nccl]") {
  for (dtype d : communication_dtypes) {
    all_reduce_options options;
    options.communication = d;
    options.bucket_bytes = 400;
    auto arrays = gradients({250, 0, 77}, 6);
    const auto want = emulated(arrays, options);
    const all_reduce_result r = gpu_runs::nccl_process_group_all_reduce(arrays, options);
    INFO(to_string(d));
    CHECK(r.found_inf == want.first);
    CHECK(bits_of(arrays) == want.second);
  }
  CHECK(gpu_runs::nccl_first_difference({1, 2, 3}) == 3);
  CHECK(gpu_runs::nccl_first_difference({}) == 0);
}

TEST_CASE("a precision_session with a one-rank nccl_process_group trains as one without a group", "[gpu][nccl]") {
  CHECK(gpu_runs::nccl_session_weights(true, 6) == gpu_runs::nccl_session_weights(false, 6));
}
