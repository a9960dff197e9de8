// The element-wise operations' loop: the elements of views of one shape, in blocks of at most
// block_elements values read as floats (exact: float holds every value of every dtype) into
// buffers on the stack, in row-major order.  A block is decoded, used and written back while it
// is in the first-level cache, and no whole-matrix float copy is made: decoding whole bf16
// matrices to float vectors and back was a quarter of a bf16 training step (perf,
// docs/performance.md).
//
//   for_each_block<2>({x, dy}, [&](std::size_t offset, std::size_t n, const float* const* v) {
//     // v[0][0 .. n) are x's elements offset .. offset + n in row-major order, v[1] dy's
//   });
//
// When every view is one row-major array the blocks run across row ends, and a float32 view's
// block is its own memory (read-only; no copy); otherwise each block lies within one row.
#pragma once

#include <array>
#include <cstddef>

#include "../../matrix.hpp"

namespace mixprec::ops::detail {

constexpr std::size_t block_elements = 1024;

// Whether v's elements are one row-major array (element k of the row-major order at index k).
template <int = 0>
bool is_flat(const matrix_view& v) noexcept {
  return (v.cols() <= 1 || v.col_stride() == 1) && (v.rows() <= 1 || v.row_stride() == v.cols());
}

// n elements of a flat view from row-major index `first`, as floats.
template <int = 0>
void read_flat(const matrix_view& v, std::size_t first, std::size_t n, float* out) {
  if (n == 0) return;
  visit_dtype(v.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    convert_n(static_cast<const T*>(v.data()) + first, n, out);
  });
}

// Elements (i, j0) .. (i, j0 + n) of any view, as floats (matrix.hpp).
using mixprec::detail::read_row_part;

// n floats rounded once (nearest-even) into `out`'s elements from row-major index `first`.
template <int = 0>
void write_flat(const float* values, std::size_t n, matrix& out, std::size_t first) {
  if (n == 0) return;
  mixprec::detail::write_row_from_float(values, n, out.type(),
                                        static_cast<unsigned char*>(out.raw_data()) + first * size_of(out.type()),
                                        rounding::nearest_even, overflow::non_finite);
}

// n floats rounded once (nearest-even) into dtype r, and those values written into a float32
// `out` from row-major index `first` (exact: float32 holds every value of r), a block at a
// time through the stack.
template <int = 0>
void write_flat_through(const float* values, std::size_t n, dtype r, matrix& out, std::size_t first) {
  alignas(64) unsigned char codes[block_elements * sizeof(float)];
  float* target = out.data<float>() + first;
  for (std::size_t k = 0; k < n; k += block_elements) {
    const std::size_t count = n - k < block_elements ? n - k : block_elements;
    mixprec::detail::write_row_from_float(values + k, count, r, codes, rounding::nearest_even, overflow::non_finite);
    visit_dtype(r, [&](auto tag) {
      using T = typename decltype(tag)::type;
      convert_n(reinterpret_cast<const T*>(codes), count, target + k);
    });
  }
}

// f(offset, n, blocks) for consecutive blocks of the views' elements (all of views[0]'s shape).
template <std::size_t N, class F>
void for_each_block(const std::array<matrix_view, N>& views, F f) {
  const std::size_t rows = views[0].rows(), cols = views[0].cols();
  alignas(64) float buffers[N][block_elements];
  const float* blocks[N];
  bool flat = true;
  for (std::size_t v = 0; v < N; ++v) flat = flat && is_flat(views[v]);
  if (flat) {
    const std::size_t total = rows * cols;
    for (std::size_t first = 0; first < total; first += block_elements) {
      const std::size_t n = total - first < block_elements ? total - first : block_elements;
      for (std::size_t v = 0; v < N; ++v) {
        if (views[v].type() == dtype::float32) {
          blocks[v] = static_cast<const float*>(views[v].data()) + first;
        } else {
          read_flat(views[v], first, n, buffers[v]);
          blocks[v] = buffers[v];
        }
      }
      f(first, n, static_cast<const float* const*>(blocks));
    }
    return;
  }
  for (std::size_t v = 0; v < N; ++v) blocks[v] = buffers[v];
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j0 = 0; j0 < cols; j0 += block_elements) {
      const std::size_t n = cols - j0 < block_elements ? cols - j0 : block_elements;
      for (std::size_t v = 0; v < N; ++v) read_row_part(views[v], i, j0, n, buffers[v]);
      f(i * cols + j0, n, static_cast<const float* const*>(blocks));
    }
  }
}

}  // namespace mixprec::ops::detail
