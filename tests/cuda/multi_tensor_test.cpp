// cuda/detail/multi_tensor.hpp: the arrays of a multi-tensor unscale packed into batches that fit
// a kernel's parameters, every element in exactly one block.
#include <mixprec/cuda/detail/multi_tensor.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <vector>

using namespace mixprec;
using namespace mixprec::gpu::detail;

namespace {

struct coverage {
  std::vector<tensor_batch> batches;
  // (array address, chunk) -> times covered
  std::map<std::pair<const void*, std::uint64_t>, int> chunks;
};

// The batches, and every chunk each covers as the kernel finds it: the chunk index of the batch
// walked in order, its array by the prefix counts (cuda/unscale.cuh, unscale_kernel).
coverage pack(const std::vector<gradient_view>& views) {
  coverage c;
  for_each_tensor_batch(views.data(), views.size(), [&](const tensor_batch& b) {
    c.batches.push_back(b);
    REQUIRE(b.tensors >= 1);
    REQUIRE(b.tensors <= batch_tensors);
    CHECK(b.chunks_before[0] == 0);
    int t = 0;
    for (std::uint64_t chunk = 0; chunk < b.chunks_before[b.tensors]; ++chunk) {
      while (b.chunks_before[t + 1] <= chunk) ++t;
      REQUIRE(t < b.tensors);
      const std::uint64_t local = chunk - b.chunks_before[t];
      REQUIRE(local * tensor_chunk_elements < b.size[t]);
      ++c.chunks[{b.data[t], local}];
    }
  });
  return c;
}

// Fake device addresses: the packing never dereferences them.
float* fake_address(std::size_t i) { return reinterpret_cast<float*>(std::uintptr_t{0x100000} * (i + 1)); }

void check_every_chunk_once(const std::vector<gradient_view>& views, const coverage& c) {
  std::size_t expected = 0;
  for (const gradient_view& v : views) {
    const std::uint64_t chunks = (v.size() + tensor_chunk_elements - 1) / tensor_chunk_elements;
    for (std::uint64_t k = 0; k < chunks; ++k) REQUIRE(c.chunks.at({v.data(), k}) == 1);
    expected += chunks;
  }
  CHECK(c.chunks.size() == expected);
}

}  // namespace

TEST_CASE("many small arrays fill batches of 64 arrays, every chunk once", "[multi_tensor]") {
  std::vector<gradient_view> views;
  for (std::size_t i = 0; i < 200; ++i) views.emplace_back(fake_address(i), 1000 + i);
  const coverage c = pack(views);
  check_every_chunk_once(views, c);
  CHECK(c.batches.size() == 4);  // 64 + 64 + 64 + 8 arrays
  CHECK(c.batches[0].tensors == 64);
  CHECK(c.batches[3].tensors == 8);
}

TEST_CASE("large arrays of any size share one batch, every chunk once", "[multi_tensor]") {
  std::vector<gradient_view> views;
  views.emplace_back(fake_address(0), 10);
  views.emplace_back(fake_address(1), tensor_chunk_elements * 700 + 5);  // 701 chunks
  views.emplace_back(fake_address(2), tensor_chunk_elements);            // exactly one chunk
  views.emplace_back(fake_address(3), 3);
  const coverage c = pack(views);
  check_every_chunk_once(views, c);
  REQUIRE(c.batches.size() == 1);
  CHECK(c.batches[0].tensors == 4);
  CHECK(c.batches[0].chunks_before[1] == 1);
  CHECK(c.batches[0].chunks_before[2] == 702);
  CHECK(c.batches[0].chunks_before[4] == 704);
}

TEST_CASE("the largest array's chunks are counted without overflow", "[multi_tensor]") {
  std::vector<gradient_view> views;
  for (std::size_t i = 0; i < 70; ++i) views.emplace_back(fake_address(i), max_tensor_elements);
  std::vector<std::uint64_t> totals;
  for_each_tensor_batch(views.data(), views.size(),
                        [&](const tensor_batch& b) { totals.push_back(b.chunks_before[b.tensors]); });
  REQUIRE(totals.size() == 2);
  CHECK(totals[0] == 64 * (std::uint64_t{1} << 32));
  CHECK(totals[1] == 6 * (std::uint64_t{1} << 32));
}

TEST_CASE("empty arrays are skipped and an empty list launches nothing", "[multi_tensor]") {
  std::vector<gradient_view> views;
  views.emplace_back(fake_address(0), 0);
  CHECK(pack(views).batches.empty());
  CHECK(pack({}).batches.empty());
  views.emplace_back(static_cast<bfloat16*>(nullptr), 0);
  views.emplace_back(reinterpret_cast<float16*>(fake_address(3)), 5);
  const coverage c = pack(views);
  REQUIRE(c.batches.size() == 1);
  CHECK(c.batches[0].tensors == 1);
  CHECK(c.batches[0].type[0] == static_cast<std::uint8_t>(dtype::float16));
}

TEST_CASE("an array beyond 2^48 elements is refused before any launch", "[multi_tensor]") {
  std::vector<gradient_view> views;
  views.emplace_back(fake_address(0), 10);
  views.emplace_back(fake_address(1), max_tensor_elements + 1);
  int launches = 0;
  CHECK_THROWS_WITH(for_each_tensor_batch(views.data(), views.size(), [&](const tensor_batch&) { ++launches; }),
                    Catch::Contains("array 1 has 281474976710657 elements, the limit is 281474976710656"));
  CHECK(launches == 0);
}
