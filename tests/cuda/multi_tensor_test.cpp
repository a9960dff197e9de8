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

coverage pack(const std::vector<gradient_view>& views) {
  coverage c;
  for_each_tensor_batch(views.data(), views.size(), [&](const tensor_batch& b) {
    c.batches.push_back(b);
    for (int k = 0; k < b.blocks; ++k) {
      const int t = b.tensor_of_block[k];
      REQUIRE(t < b.tensors);
      REQUIRE(static_cast<std::uint64_t>(b.chunk_of_block[k]) * tensor_chunk_elements < b.size[t]);
      ++c.chunks[{b.data[t], b.chunk_of_block[k]}];
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
  for (const tensor_batch& b : c.batches) {
    CHECK(b.blocks >= 1);
    CHECK(b.blocks <= batch_blocks);
    CHECK(b.tensors <= batch_tensors);
  }
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

TEST_CASE("a large array continues in the next batch when its chunks fill one", "[multi_tensor]") {
  std::vector<gradient_view> views;
  views.emplace_back(fake_address(0), 10);
  views.emplace_back(fake_address(1), tensor_chunk_elements * 700 + 5);  // 701 chunks
  views.emplace_back(fake_address(2), 3);
  const coverage c = pack(views);
  check_every_chunk_once(views, c);
  REQUIRE(c.batches.size() == 3);
  CHECK(c.batches[0].blocks == batch_blocks);
  CHECK(c.batches[1].data[0] == fake_address(1));  // carried over as the first array
  CHECK(c.batches[2].blocks == 1 + 702 - 2 * batch_blocks);
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
