// The bounds check every public entry that takes an array and a count makes before any
// arithmetic on the count: no object is larger than PTRDIFF_MAX bytes ([expr.add]: a pointer
// difference must fit in std::ptrdiff_t), and an array cannot run past the end of the address
// space.  A count beyond either is a caller's error (often a negative size cast to size_t), never
// something to compute with: `n * sizeof(T)` would wrap and the checks after it would pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "../errors.hpp"

namespace mixprec::detail {

// The most elements of `element_size` bytes one array can hold.
constexpr std::size_t max_array_elements(std::size_t element_size) noexcept {
  return static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) / element_size;
}

// Whether n elements of element_size bytes from p fit (for callers that build their own message
// only when the test fails).
inline bool array_fits(const void* p, std::size_t n, std::size_t element_size) noexcept {
  return n <= max_array_elements(element_size) &&
         reinterpret_cast<std::uintptr_t>(p) <= std::numeric_limits<std::uintptr_t>::max() - n * element_size;
}

// Throws invalid_argument naming the function, the array ("input", "output", ...), n and the
// limit, when n elements from p do not fit; afterwards n * element_size and p + n are safe.
inline void check_array_extent(const char* function, const char* array, const void* p, std::size_t n,
                               std::size_t element_size) {
  const std::size_t limit = max_array_elements(element_size);
  if (n > limit) {
    throw invalid_argument(std::string(function) + ": the " + array + " array has n = " + std::to_string(n) +
                           " elements of " + std::to_string(element_size) +
                           " bytes, more than the largest array holds (" + std::to_string(limit) + ")");
  }
  if (!array_fits(p, n, element_size)) {
    throw invalid_argument(std::string(function) + ": the " + array + " array of n = " + std::to_string(n) +
                           " elements would run past the end of the address space");
  }
}

template <class T>
void check_array_extent(const char* function, const char* array, const T* p, std::size_t n) {
  check_array_extent(function, array, static_cast<const void*>(p), n, sizeof(T));
}

// The same for a strided matrix: element (i, j) at p + i·row_stride + j·col_stride (in elements)
// for i < rows, j < cols.  The farthest element, (rows − 1)·row_stride + (cols − 1)·col_stride, is
// computed one checked term at a time.
inline void check_matrix_extent(const char* function, const char* matrix, const void* p, std::size_t rows,
                                std::size_t cols, std::size_t row_stride, std::size_t col_stride,
                                std::size_t element_size) {
  if (rows == 0 || cols == 0) return;
  const std::size_t limit = max_array_elements(element_size);
  const auto fail = [&] {
    throw invalid_argument(std::string(function) + ": the " + matrix + " matrix of " + std::to_string(rows) + " × " +
                           std::to_string(cols) + " elements with strides " + std::to_string(row_stride) + " and " +
                           std::to_string(col_stride) + " spans more than the largest array holds (" +
                           std::to_string(limit) + " elements of " + std::to_string(element_size) + " bytes)");
  };
  const std::size_t down = rows - 1, across = cols - 1;
  if (row_stride != 0 && down > limit / row_stride) fail();
  if (col_stride != 0 && across > limit / col_stride) fail();
  const std::size_t last_row = down * row_stride, last_column = across * col_stride;
  if (last_row > limit - 1 || last_column > limit - 1 - last_row) fail();
  check_array_extent(function, matrix, p, last_row + last_column + 1, element_size);
}

}  // namespace mixprec::detail
