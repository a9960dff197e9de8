// detail/matrix_memory.hpp: freed matrices of 64 KiB or more leave their blocks in a bounded
// cache, and the next matrix of exactly that size takes the most recent one; everything else
// goes back to the allocator.  The accounting (cached bytes, the limit, eviction of the oldest)
// is checked through the public functions, and the reuse through the blocks' addresses.
#include <mixprec/matrix.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

using mixprec::dtype;
using mixprec::matrix;

namespace {

constexpr std::size_t kib = 1024;

// The cache at a known limit and empty for one test, and the default limit after it.
struct cache_state {
  explicit cache_state(std::size_t limit) {
    previous = mixprec::matrix_memory_cache_limit();
    mixprec::release_matrix_memory_cache();
    mixprec::set_matrix_memory_cache_limit(limit);
  }
  ~cache_state() {
    mixprec::release_matrix_memory_cache();
    mixprec::set_matrix_memory_cache_limit(previous);
  }
  std::size_t previous;
};

}  // namespace

TEST_CASE("a freed large matrix's block is reused by the next matrix of its size, zeros still zeros",
          "[core][matrix_memory]") {
  const cache_state state(4 * 1024 * kib);
  const void* first = nullptr;
  {
    matrix m(dtype::float32, 256, 128);  // 128 KiB
    first = m.raw_data();
    std::memset(m.raw_data(), 0xAB, m.bytes());
  }
  CHECK(mixprec::matrix_memory_cache_bytes() == 128 * kib);
  matrix again(dtype::bfloat16, 256, 256);  // the same 128 KiB
  CHECK(again.raw_data() == first);
  CHECK(mixprec::matrix_memory_cache_bytes() == 0);
  const auto* bytes = static_cast<const unsigned char*>(again.raw_data());
  bool zeros = true;
  for (std::size_t i = 0; i < again.bytes(); ++i) zeros = zeros && bytes[i] == 0;
  CHECK(zeros);  // the zero-filling constructor fills a reused block too

  matrix other_size(dtype::float32, 256, 129);  // another size: a new block
  CHECK(other_size.raw_data() != first);
  {
    matrix small(dtype::float32, 16, 16);  // 1 KiB: not cached
  }
  CHECK(mixprec::matrix_memory_cache_bytes() == 0);
}

TEST_CASE("moves carry the block's size; copies take their own block", "[core][matrix_memory]") {
  const cache_state state(4 * 1024 * kib);
  matrix a(dtype::float32, 128, 256);  // 128 KiB
  matrix b = std::move(a);
  matrix c;
  c = std::move(b);
  const matrix d = c;  // NOLINT(performance-unnecessary-copy-initialization): a copy is the point
  CHECK(d.raw_data() != c.raw_data());
  c = matrix();
  CHECK(mixprec::matrix_memory_cache_bytes() == 128 * kib);
}

TEST_CASE("the cache stays within its limit, the oldest blocks leave first; 0 turns it off", "[core][matrix_memory]") {
  const cache_state state(1024 * kib);
  {
    std::vector<matrix> many;
    for (std::size_t i = 0; i < 10; ++i) many.emplace_back(dtype::float32, 256, 256);  // 256 KiB each
  }
  CHECK(mixprec::matrix_memory_cache_bytes() == 1024 * kib);
  { matrix too_large(dtype::float32, 1024, 512); }  // 2 MiB: over the limit, freed
  CHECK(mixprec::matrix_memory_cache_bytes() == 1024 * kib);
  mixprec::set_matrix_memory_cache_limit(512 * kib);
  CHECK(mixprec::matrix_memory_cache_bytes() == 512 * kib);
  mixprec::set_matrix_memory_cache_limit(0);
  CHECK(mixprec::matrix_memory_cache_bytes() == 0);
  { matrix m(dtype::float32, 256, 256); }
  CHECK(mixprec::matrix_memory_cache_bytes() == 0);
  mixprec::set_matrix_memory_cache_limit(1024 * kib);
  { matrix m(dtype::float32, 256, 256); }
  CHECK(mixprec::matrix_memory_cache_bytes() == 256 * kib);
  mixprec::release_matrix_memory_cache();
  CHECK(mixprec::matrix_memory_cache_bytes() == 0);
}

TEST_CASE("matrices made and freed on several threads at once", "[core][matrix_memory]") {
  const cache_state state(8 * 1024 * kib);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (std::size_t t = 0; t < ok.size(); ++t) {
    threads.emplace_back([t, &ok] {
      bool good = true;
      for (std::size_t round = 0; round < 200; ++round) {
        matrix m(dtype::float32, 128 + (round % 3) * 64, 128);  // 64, 96 or 128 KiB
        float* p = m.data<float>();
        for (std::size_t i = 0; i < m.size(); i += 97) p[i] = static_cast<float>(t);
        for (std::size_t i = 0; i < m.size(); i += 97) good = good && p[i] == static_cast<float>(t);
      }
      ok[t] = good ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int good : ok) CHECK(good == 1);
  CHECK(mixprec::matrix_memory_cache_bytes() <= 8 * 1024 * kib);
}
