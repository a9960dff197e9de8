// ops/detail/blocks.hpp and ops/detail/scratch.hpp: the element-wise operations read their
// inputs in blocks of block_elements floats (across row ends for row-major arrays, within a row
// otherwise; a float32 array's own memory), and borrow their working buffers from the matrix
// memory cache.  Each case uses shapes whose element count or row length exceeds a block, so that blocks
// split where a row ends, in the middle of a row, or both, and checks the bits against the
// element-by-element definition.
#include <mixprec/ops/activation.hpp>
#include <mixprec/ops/detail/blocks.hpp>
#include <mixprec/ops/detail/scratch.hpp>
#include <mixprec/ops/operand.hpp>
#include <mixprec/ops/reduction.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "ops_reference.hpp"
#include "simd_paths.hpp"

using namespace mixprec;
using namespace ops_test;

namespace {

// Row-major, row-major with a padded stride, and the transpose of a row-major matrix.
struct layout_case {
  const char* name;
  matrix_view view;
};

}  // namespace

TEST_CASE("for_each_block visits every element once, in row-major order, for every layout", "[ops][blocks]") {
  constexpr std::size_t block = ops::detail::block_elements;
  const matrix storage = random_matrix(dtype::bfloat16, 3, 2 * block + 77, 7);
  const matrix tall = random_matrix(dtype::float32, 2 * block + 77, 3, 8);
  const layout_case layouts[] = {
      {"flat bf16 (blocks cross row ends)", storage.view()},
      {"flat float32 (its own memory)", tall.view()},
      {"padded rows (blocks within a row)",
       matrix_view(storage.raw_data(), dtype::bfloat16, 3, block + 5, storage.cols(), 1)},
      {"transposed (strided rows longer than a block)", tall.view().transposed()},
  };
  for (const layout_case& layout : layouts) {
    INFO(layout.name);
    const matrix_view& v = layout.view;
    std::vector<int> visits(v.size(), 0);
    bool values_match = true;
    ops::detail::for_each_block<1>({v}, [&](std::size_t offset, std::size_t n, const float* const* blocks) {
      REQUIRE(n <= block);
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t index = offset + k;
        ++visits[index];
        const float expected = v.value(index / v.cols(), index % v.cols());
        values_match = values_match && std::memcmp(&expected, &blocks[0][k], sizeof(float)) == 0;
      }
    });
    CHECK(values_match);
    CHECK(std::all_of(visits.begin(), visits.end(), [](int count) { return count == 1; }));
  }
}

TEST_CASE("sum along an axis over more than a block: the row-major double sums, rounded once", "[ops][blocks]") {
  constexpr std::size_t block = ops::detail::block_elements;
  for (dtype in : input_dtypes) {
    const matrix wide = random_matrix(in, 5, block + 300, 21, 3.0f);
    for (const matrix_view& v : {wide.view(), wide.view().transposed()}) {
      INFO(to_string(in) << ", " << v.rows() << "×" << v.cols());
      std::vector<double> columns(v.cols(), 0.0), rows(v.rows(), 0.0);
      for (std::size_t i = 0; i < v.rows(); ++i) {
        for (std::size_t j = 0; j < v.cols(); ++j) {
          columns[j] += v.value(i, j);
          rows[i] += v.value(i, j);
        }
      }
      const matrix by_column = ops::sum(v, 0), by_row = ops::sum(v, 1);
      CHECK(same_codes(by_column, ops::detail::round_into(columns, 1, v.cols(), in)));
      CHECK(same_codes(by_row, ops::detail::round_into(rows, v.rows(), 1, in)));
    }
  }
}

TEST_CASE("relu and relu_backward over more than a block, every layout: the general path's bits", "[ops][blocks]") {
  constexpr std::size_t block = ops::detail::block_elements;
  for (dtype in : input_dtypes) {
    const matrix x = random_matrix(in, 3, 2 * block + 9, 31), dy = random_matrix(in, 3, 2 * block + 9, 32);
    for (const bool strided : {false, true}) {
      INFO(to_string(in) << (strided ? ", transposed" : ", row-major"));
      const matrix_view xv = strided ? x.view().transposed() : x.view();
      const matrix_view dyv = strided ? dy.view().transposed() : dy.view();
      CHECK(same_codes(ops::relu(xv),
                       ops::detail::map_elements(xv, in, [](double v) { return v > 0 || std::isnan(v) ? v : 0.0; })));
      CHECK(same_codes(
          ops::relu_backward(dyv, xv),
          ops::detail::activation_backward("relu", dyv, xv, [](double d, double v) { return v > 0 ? d : 0.0; })));
    }
  }
}

TEST_CASE("scratch buffers: large ones come back from the matrix memory cache by exact size, moves carry them",
          "[ops][scratch]") {
  const std::size_t previous = mixprec::matrix_memory_cache_limit();
  mixprec::release_matrix_memory_cache();
  mixprec::set_matrix_memory_cache_limit(std::size_t{1} << 20);
  constexpr std::size_t large = 32 * 1024;  // 128 KiB of floats: over the cache's 64 KiB floor
  const float* first = nullptr;
  {
    ops::detail::scratch<float> a(large);
    first = a.data();
    REQUIRE(a.size() == large);
    CHECK(reinterpret_cast<std::uintptr_t>(first) % 64 == 0);
    a[large - 1] = 1.0f;
  }
  CHECK(mixprec::matrix_memory_cache_bytes() == large * sizeof(float));
  {
    ops::detail::scratch<float> b(large);  // the same size: the same block
    CHECK(b.data() == first);
    CHECK(mixprec::matrix_memory_cache_bytes() == 0);
    ops::detail::scratch<float> c(large);  // the first is lent out: another one
    CHECK(c.data() != first);
    ops::detail::scratch<float> moved(std::move(c));  // the block and its size move together
    CHECK(c.empty());
    CHECK(moved.size() == large);
  }
  CHECK(mixprec::matrix_memory_cache_bytes() == 2 * large * sizeof(float));
  {  // many small buffers at once (malloc's, not cached): every one usable and distinct
    std::vector<ops::detail::scratch<double>> many;
    for (std::size_t i = 0; i < 24; ++i) many.emplace_back(64 + i);
    for (std::size_t i = 0; i < many.size(); ++i) many[i][63] = static_cast<double>(i);
    for (std::size_t i = 0; i < many.size(); ++i) CHECK(many[i][63] == static_cast<double>(i));
  }
  CHECK(mixprec::matrix_memory_cache_bytes() == 2 * large * sizeof(float));
  ops::detail::scratch<std::uint8_t> empty(0);
  CHECK(empty.empty());
  CHECK(empty.data() == nullptr);
  mixprec::release_matrix_memory_cache();
  CHECK(mixprec::matrix_memory_cache_bytes() == 0);
  mixprec::set_matrix_memory_cache_limit(previous);
}

// as_floats reads the transpose of a row-major matrix through its own rows and a blocked
// transposition (ops/operand.hpp); every element must be the view's, on every path, for shapes
// that leave partial 16 × 16 and 8 × 8 blocks, with a padded stride, in float32 and bfloat16.
TEST_CASE("as_floats of a transposed view equals the view's elements", "[ops][blocks]") {
  for (const auto& shape : {std::pair<std::size_t, std::size_t>{2, 3}, {17, 33}, {64, 48}, {100, 7}}) {
    const std::size_t rows = shape.first, cols = shape.second, ld = cols + 5;  // the stored matrix: rows × cols
    std::vector<float> f(rows * ld);
    std::vector<bfloat16> b(rows * ld);
    for (std::size_t k = 0; k < f.size(); ++k) {
      f[k] = static_cast<float>(k) * 0.25f;
      b[k] = bfloat16(f[k]);
    }
    for (const dtype type : {dtype::float32, dtype::bfloat16}) {
      const void* data = type == dtype::float32 ? static_cast<const void*>(f.data()) : b.data();
      const matrix_view x = matrix_view(data, type, rows, cols, ld, 1).transposed();  // cols × rows
      on_every_path_and_thread_count([&] {
        const ops::detail::scratch<float> values = ops::detail::as_floats(x);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < x.rows(); ++i) {
          for (std::size_t j = 0; j < x.cols(); ++j) bad += values[i * x.cols() + j] != x.value(i, j) ? 1u : 0u;
        }
        INFO(to_string(type) << " " << rows << " × " << cols);
        CHECK(bad == 0);
      });
    }
  }
}
