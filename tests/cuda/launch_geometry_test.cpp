// cuda/detail/launch_geometry.hpp: how an element-wise kernel splits an array into a head, 16-byte
// groups and a tail, and how many blocks it launches.
#include <mixprec/cuda/detail/launch_geometry.hpp>

#include <catch2/catch.hpp>

#include <vector>

using namespace mixprec::gpu::detail;

namespace {

// Every element is covered once, in order: head, groups, tail; the groups start 16-byte aligned
// in both arrays.
void check_plan(std::uintptr_t in, std::size_t in_size, std::uintptr_t out, std::size_t out_size, std::uint64_t n) {
  const elementwise_plan p = plan_elementwise(in, in_size, out, out_size, n);
  INFO("in % 16 = " << in % 16 << ", out % 16 = " << out % 16 << ", sizes " << in_size << " -> " << out_size
                    << ", n = " << n);
  REQUIRE(p.n == n);
  REQUIRE(p.group * std::min(in_size, out_size) == 16);
  REQUIRE(p.head <= n);
  REQUIRE(p.tail_begin() <= n);
  if (p.groups > 0) REQUIRE(n - p.tail_begin() < p.group);  // the tail is less than a group
  if (p.head < n) REQUIRE(p.head < p.group);                // the head is less than a group
  std::vector<int> seen(n, 0);
  for (std::uint64_t i = 0; i < p.single_count(); ++i) ++seen[p.single_index(i)];
  for (std::uint64_t g = 0; g < p.groups; ++g) {
    const std::uint64_t first = p.head + g * p.group;
    REQUIRE((in + first * in_size) % 16 == 0);
    REQUIRE((out + first * out_size) % 16 == 0);
    for (unsigned e = 0; e < p.group; ++e) ++seen[first + e];
  }
  for (std::uint64_t i = 0; i < n; ++i) REQUIRE(seen[i] == 1);
}

}  // namespace

TEST_CASE("a group is 16 bytes of the narrower type", "[launch_geometry]") {
  CHECK(group_elements(4, 2) == 8);   // float -> bfloat16
  CHECK(group_elements(4, 1) == 16);  // float -> e4m3
  CHECK(group_elements(1, 4) == 16);  // e4m3 -> float
  CHECK(group_elements(4, 4) == 4);
  CHECK(group_elements(2, 1) == 16);
}

TEST_CASE("the element-wise plan covers every element once and vectorises only aligned groups", "[launch_geometry]") {
  const std::size_t sizes[] = {1, 2, 4};
  for (const std::size_t in_size : sizes) {
    for (const std::size_t out_size : sizes) {
      for (std::uintptr_t in_offset = 0; in_offset < 16; in_offset += in_size) {
        for (std::uintptr_t out_offset = 0; out_offset < 16; out_offset += out_size) {
          for (const std::uint64_t n : {0u, 1u, 3u, 15u, 16u, 17u, 64u, 1000u}) {
            check_plan(0x10000 + in_offset, in_size, 0x20000 + out_offset, out_size, n);
          }
        }
      }
    }
  }
}

TEST_CASE("aligned arrays have no head, and misalignments that never meet go one at a time", "[launch_geometry]") {
  const elementwise_plan aligned = plan_elementwise(0x1000, 4, 0x2000, 2, 1003);
  CHECK(aligned.head == 0);
  CHECK(aligned.groups == 125);
  CHECK(aligned.single_count() == 3);
  // float at +4, bfloat16 at +4: after k elements they are at 4 + 4k and 4 + 2k (mod 16); the
  // float aligns for odd k (3, 7, ...), the bfloat16 for even k (6, 14, ...): never both.
  const elementwise_plan never = plan_elementwise(0x1004, 4, 0x2004, 2, 1000);
  CHECK(never.groups == 0);
  CHECK(never.single_count() == 1000);
  // float at +4, e4m3 at +1: the float aligns for k = 3, 7, 11, 15, the byte only for k = 15.
  const elementwise_plan late = plan_elementwise(0x1004, 4, 0x2001, 1, 1000);
  CHECK(late.head == 15);
  CHECK(late.groups == (1000 - 15) / 16);
}

TEST_CASE("the grid has one thread per work item, capped at 8 blocks per multiprocessor", "[launch_geometry]") {
  CHECK(grid_for(0, 132).blocks == 1);
  CHECK(grid_for(1, 132).blocks == 1);
  CHECK(grid_for(256, 132).blocks == 1);
  CHECK(grid_for(257, 132).blocks == 2);
  CHECK(grid_for(std::uint64_t{1} << 40, 132).blocks == 132 * 8);
  CHECK(grid_for(std::uint64_t{1} << 40, 0).blocks == 8);
  CHECK(grid_for(1000, 108).threads == 256);
  const elementwise_plan p = plan_elementwise(0x1000, 4, 0x2000, 1, 1u << 20);
  CHECK(grid_for(p, 108).blocks == 256);  // 2^16 groups of 16 floats: 256 blocks of 256 threads
}
