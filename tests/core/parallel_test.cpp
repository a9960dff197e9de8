// detail/parallel.hpp: the split rule, every chunk run once, failures (a throwing task, a thread
// that cannot start) joined and reported; and the same failures through its callers, convert_n,
// gemm and unscale_and_check, which must still give the whole, correct result.
#include <mixprec/bulk/convert_n.hpp>
#include <mixprec/detail/parallel.hpp>
#include <mixprec/gemm/gemm.hpp>
#include <mixprec/scaling/unscale.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

using namespace mixprec;
using detail::run_chunks;
using detail::split_work;
using detail::work_split;

namespace {

constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();

// Chunks are contiguous, start at 0, end at n, none is empty (unless n = 0), all but the last
// have the same size, a multiple of the grain (or all of n), and there are at most `threads`.
// With many chunks only the first and last thousand are walked.
void check_split(const work_split& s, std::size_t n, std::size_t threads, std::size_t grain) {
  INFO("n " << n << ", threads " << threads << ", grain " << grain << ": size " << s.size << ", count " << s.count);
  REQUIRE(s.n == n);
  REQUIRE(s.count >= 1);
  REQUIRE(s.count <= std::max<std::size_t>(threads, 1));
  CHECK(s.begin(0) == 0);
  CHECK(s.end(s.count - 1) == n);
  if (n == 0) {
    CHECK(s.count == 1);
    return;
  }
  CHECK((s.size % grain == 0 || s.size == n));
  const auto walk = [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      REQUIRE(s.begin(i) < s.end(i));
      if (i + 1 < s.count) {
        REQUIRE(s.end(i) == s.begin(i + 1));
        REQUIRE(s.end(i) - s.begin(i) == s.size);
      }
    }
  };
  if (s.count <= 2000) {
    walk(0, s.count);
  } else {
    walk(0, 1000);
    walk(s.count - 1000, s.count);
  }
}

// Sets the thread-start failure hook for one scope, and says whether it fired.
class injected_start_failure {
 public:
  explicit injected_start_failure(std::size_t nth) { detail::thread_start_failure_countdown() = nth; }
  ~injected_start_failure() { detail::thread_start_failure_countdown() = 0; }
  bool fired() const { return detail::thread_start_failure_countdown() == 0; }
};

}  // namespace

TEST_CASE("thread counts: 0 means one per hardware thread, never 0", "[parallel]") {
  CHECK(detail::resolve_thread_count(0) == std::max(1u, std::thread::hardware_concurrency()));
  CHECK(detail::resolve_thread_count(1) == 1);
  CHECK(detail::resolve_thread_count(7) == 7);
}

TEST_CASE("split rule: chunks of ceil(n / count) rounded up to the grain, the last one shorter", "[parallel]") {
  // The documented boundaries.
  const work_split tens = split_work(10, 4, 1, 1);
  CHECK(tens.count == 4);
  CHECK(tens.size == 3);
  CHECK(tens.begin(3) == 9);
  CHECK(tens.end(3) == 10);
  // Fewer chunks than threads when the rounded size covers n sooner: 5 tiles on 4 threads.
  const work_split fives = split_work(5, 4, 1, 1);
  CHECK(fives.size == 2);
  CHECK(fives.count == 3);
  CHECK(fives.end(2) == 5);
  // n below the thread count: one unit each.
  const work_split small = split_work(3, 8, 1, 1);
  CHECK(small.count == 3);
  CHECK(small.size == 1);
  // n = 0: one empty chunk.
  const work_split empty = split_work(0, 8, 1, 64);
  CHECK(empty.count == 1);
  CHECK(empty.end(0) == 0);
  // min_per_chunk: 2^20 per thread; 4 threads asked, enough elements for 3.
  const std::size_t mi = std::size_t{1} << 20;
  const work_split bulk = split_work(3 * mi + 100, 4, mi, 64);
  CHECK(bulk.count == 3);
  CHECK(bulk.size == mi + 64);
  CHECK(bulk.end(2) == 3 * mi + 100);
  CHECK(split_work(mi - 1, 4, mi, 64).count == 1);
  // The case the old bulk split lost the tail of: n / threads a multiple of 64, n % threads != 0.
  const work_split tail = split_work(2 * mi + 1, 2, mi, 64);
  CHECK(tail.count == 2);
  CHECK(tail.size == mi + 64);
  CHECK(tail.end(1) == 2 * mi + 1);
  // Grain 0 and min 0 count as 1.
  CHECK(split_work(10, 4, 0, 0).size == 3);
}

TEST_CASE("split rule: every element is covered exactly once, for many sizes, near SIZE_MAX too", "[parallel]") {
  for (std::size_t grain : {1u, 3u, 64u, 1000u}) {
    for (std::size_t threads : {0u, 1u, 2u, 3u, 4u, 7u, 64u, 1000u}) {
      for (std::size_t n = 0; n < 300; ++n) check_split(split_work(n, threads, 1, grain), n, threads, grain);
      for (std::size_t n :
           {std::size_t{1} << 20, (std::size_t{1} << 20) + 1, size_max / 2, size_max - 64, size_max - 1, size_max}) {
        check_split(split_work(n, threads, 1, grain), n, threads, grain);
        check_split(split_work(n, threads, std::size_t{1} << 20, grain), n, threads, grain);
      }
    }
  }
  // As many threads as units: size 1, SIZE_MAX chunks, the last ending at SIZE_MAX.
  const work_split all = split_work(size_max, size_max, 1, 1);
  CHECK(all.size == 1);
  CHECK(all.count == size_max);
  CHECK(all.begin(size_max - 1) == size_max - 1);
  CHECK(all.end(size_max - 1) == size_max);
  // Rounding up to the grain would pass SIZE_MAX: one chunk of everything.
  const work_split rounded = split_work(size_max, 1, 1, 64);
  CHECK(rounded.count == 1);
  CHECK(rounded.end(0) == size_max);
}

TEST_CASE("run_chunks: every chunk once, chunk 0 on the caller's thread, the others on their own",
          "[parallel][threads]") {
  const work_split split = split_work(1000, 4, 1, 64);
  REQUIRE(split.count == 4);
  std::vector<int> element_runs(1000, 0);
  std::vector<std::thread::id> ran_on(split.count);
  run_chunks(split, [&](std::size_t chunk, std::size_t begin, std::size_t end) {
    ran_on[chunk] = std::this_thread::get_id();
    for (std::size_t i = begin; i < end; ++i) ++element_runs[i];
  });
  for (std::size_t i = 0; i < element_runs.size(); ++i) REQUIRE(element_runs[i] == 1);
  CHECK(ran_on[0] == std::this_thread::get_id());
  for (std::size_t chunk = 1; chunk < split.count; ++chunk) CHECK(ran_on[chunk] != std::this_thread::get_id());
}

TEST_CASE("run_chunks: a throwing task stops only its chunk; all are joined; the lowest chunk's error is rethrown",
          "[parallel][threads]") {
  const work_split split = split_work(8, 8, 1, 1);
  REQUIRE(split.count == 8);
  struct case_t {
    std::vector<std::size_t> throwing;
    std::string expected;
  };
  for (const case_t& c :
       {case_t{{0}, "chunk 0"}, case_t{{5}, "chunk 5"}, case_t{{7, 2, 4}, "chunk 2"}, case_t{{6, 0, 3}, "chunk 0"}}) {
    INFO("first expected: " << c.expected);
    // Chunks that do not throw finish late: the call must still wait for them.
    std::unique_ptr<std::atomic<int>[]> finished(new std::atomic<int>[split.count]);
    for (std::size_t i = 0; i < split.count; ++i) finished[i] = 0;
    const auto task = [&](std::size_t chunk, std::size_t, std::size_t) {
      for (std::size_t t : c.throwing) {
        if (t == chunk) {
          finished[chunk] = 1;
          throw std::runtime_error("chunk " + std::to_string(chunk));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      finished[chunk] = 1;
    };
    CHECK_THROWS_WITH(run_chunks(split, task), c.expected);
    for (std::size_t i = 0; i < split.count; ++i) CHECK(finished[i] == 1);
  }
}

TEST_CASE("run_chunks: one chunk runs on the caller and its exception passes through", "[parallel]") {
  CHECK_THROWS_WITH(run_chunks(split_work(5, 1, 1, 1),
                               [](std::size_t, std::size_t, std::size_t) { throw std::runtime_error("alone"); }),
                    "alone");
}

TEST_CASE("run_chunks: chunks whose thread cannot start run on the caller's thread, after chunk 0",
          "[parallel][threads]") {
  const work_split split = split_work(6 * 64, 6, 1, 64);
  REQUIRE(split.count == 6);
  for (std::size_t failing = 1; failing < split.count; ++failing) {
    INFO("start " << failing << " fails");
    std::vector<int> element_runs(6 * 64, 0);
    std::vector<std::thread::id> ran_on(split.count);
    injected_start_failure injection(failing);
    run_chunks(split, [&](std::size_t chunk, std::size_t begin, std::size_t end) {
      ran_on[chunk] = std::this_thread::get_id();
      for (std::size_t i = begin; i < end; ++i) ++element_runs[i];
    });
    CHECK(injection.fired());
    for (std::size_t i = 0; i < element_runs.size(); ++i) REQUIRE(element_runs[i] == 1);
    // Starts 1 .. failing - 1 succeeded (chunks 1 .. failing - 1); chunk `failing` and every
    // later one ran here.
    for (std::size_t chunk = 0; chunk < split.count; ++chunk) {
      INFO("chunk " << chunk);
      CHECK((ran_on[chunk] == std::this_thread::get_id()) == (chunk == 0 || chunk >= failing));
    }
  }
}

TEST_CASE("run_chunks: a failed start and a throwing task together: all joined, the lowest chunk's error",
          "[parallel][threads]") {
  const work_split split = split_work(4, 4, 1, 1);
  std::atomic<int> runs{0};
  injected_start_failure injection(2);  // chunk 1 on a thread, chunks 2 and 3 on the caller
  CHECK_THROWS_WITH(run_chunks(split,
                               [&](std::size_t chunk, std::size_t, std::size_t) {
                                 ++runs;
                                 if (chunk == 1 || chunk == 3)
                                   throw std::runtime_error("chunk " + std::to_string(chunk));
                               }),
                    "chunk 1");
  CHECK(injection.fired());
  CHECK(runs == 4);
}

TEST_CASE("run_chunks: the injected failure is a std::system_error, as std::thread's", "[parallel]") {
  injected_start_failure injection(1);
  detail::joined_threads threads(1);
  CHECK_THROWS_AS(threads.start([] {}), std::system_error);
  CHECK(injection.fired());
}

// Through the callers: a thread that cannot start changes nothing in the result.

TEST_CASE("convert_n with a helper thread that cannot start converts every element", "[parallel][threads]") {
  const std::size_t n = 4 * bulk_elements_per_thread + 3;
  std::vector<float> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 100003) * 1.0009765625f - 50000.0f;
  set_bulk_threads(4);
  for (std::size_t failing : {1u, 2u, 3u}) {
    INFO("start " << failing << " fails");
    std::vector<bfloat16> out(n, bfloat16::from_bits(0xFFFF));
    {
      injected_start_failure injection(failing);
      convert_n(in.data(), n, out.data());
      CHECK(injection.fired());
    }
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += out[i].bits() != bfloat16(in[i]).bits() ? 1u : 0u;
    CHECK(wrong == 0);
  }
  set_bulk_threads(1);
}

TEST_CASE("convert_n on 2 threads converts the last element when n / 2 is a multiple of 64", "[parallel][threads]") {
  // The split before detail/parallel.hpp gave both threads n / 2 elements and left the last one.
  const std::size_t n = 2 * bulk_elements_per_thread + 1;
  std::vector<float> in(n, 1.5f);
  in[n - 1] = 3.0f;
  std::vector<float16> out(n, float16::from_bits(0));
  set_bulk_threads(2);
  convert_n(in.data(), n, out.data());
  set_bulk_threads(1);
  CHECK(static_cast<float>(out[n - 1]) == 3.0f);
  CHECK(static_cast<float>(out[n - 2]) == 1.5f);
}

TEST_CASE("gemm with helper threads that cannot start gives the one-thread result", "[parallel][threads]") {
  // Small integers: every product and sum is exact, so the exact product is the reference.
  const std::size_t M = 70, N = 9, K = 33;
  std::vector<bfloat16> A(M * K), B(K * N);
  std::vector<double> exact(M * N, 0.0);
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = bfloat16(static_cast<float>(static_cast<int>(i * 7 % 9) - 4));
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = bfloat16(static_cast<float>(static_cast<int>(i * 5 % 11) - 5));
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      for (std::size_t k = 0; k < K; ++k) {
        exact[i * N + j] += static_cast<double>(static_cast<float>(A[i * K + k])) * static_cast<float>(B[k * N + j]);
      }
    }
  }
  for (std::size_t failing : {0u, 1u, 2u}) {  // 0: no failure
    INFO("start " << failing << " fails");
    gemm_options options;
    options.threads = 4;
    std::vector<float> C(M * N, -1.0f);
    injected_start_failure injection(failing);
    gemm(transpose::no, transpose::no, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N, options);
    if (failing != 0) CHECK(injection.fired());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < M * N; ++i) wrong += static_cast<double>(C[i]) != exact[i] ? 1u : 0u;
    CHECK(wrong == 0);
  }
}

TEST_CASE("unscale_and_check with a helper thread that cannot start unscales and checks every element",
          "[parallel][threads]") {
  const std::size_t n = 4 * unscale_elements_per_thread + 5;
  const float inv_scale = 0.125f;
  unscale_options options;
  options.threads = 4;
  for (bool with_inf : {false, true}) {
    for (std::size_t failing : {1u, 3u}) {
      INFO("start " << failing << " fails, inf " << with_inf);
      std::vector<float> g(n);
      for (std::size_t i = 0; i < n; ++i) g[i] = static_cast<float>(i % 1000) + 0.5f;
      // In the last share, which ran on the caller's thread after the failed start.
      if (with_inf) g[n - 2] = std::numeric_limits<float>::infinity();
      injected_start_failure injection(failing);
      const bool finite = unscale_and_check(g.data(), n, inv_scale, options);
      CHECK(injection.fired());
      CHECK(finite == !with_inf);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const float expected = with_inf && i == n - 2 ? std::numeric_limits<float>::infinity()
                                                      : (static_cast<float>(i % 1000) + 0.5f) * inv_scale;
        wrong += std::memcmp(&expected, &g[i], sizeof(float)) != 0 ? 1u : 0u;
      }
      CHECK(wrong == 0);
    }
  }
}
