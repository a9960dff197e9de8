// The argument checks of gemm: every failure is a mixprec::invalid_argument that names the
// value and the limit, raised before anything is read or written.
//
//   a leading dimension below the stored row length      (for every matrix with elements)
//   a matrix whose extent (rows - 1) * ld + cols, in bytes, does not fit in a pointer offset
//   a null pointer for a matrix with elements
//   C sharing bytes with A or B (row by row: C may be another block of the same array as long
//   as no element of it is an element of A or B)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../../detail/extent.hpp"
#include "../../errors.hpp"

namespace mixprec::detail {

// A matrix as stored: `rows` rows of `cols` elements of `element_size` bytes, `ld` elements apart.
struct stored_matrix {
  const char* name;     // "A", "B", "C"
  const char* ld_name;  // "lda", ...
  const void* data;
  std::size_t rows, cols, ld, element_size;

  bool has_elements() const noexcept { return rows != 0 && cols != 0; }
  std::uintptr_t begin() const noexcept { return reinterpret_cast<std::uintptr_t>(data); }
  std::size_t row_bytes() const noexcept { return cols * element_size; }
  std::size_t stride_bytes() const noexcept { return ld * element_size; }
  std::size_t extent_bytes() const noexcept { return (rows - 1) * stride_bytes() + row_bytes(); }
  std::string shape() const { return std::to_string(rows) + " x " + std::to_string(cols); }
};

inline void check_stored_matrix(const stored_matrix& m, const char* cols_name) {
  if (!m.has_elements()) return;
  if (m.ld < m.cols) {
    throw invalid_argument(std::string("gemm: ") + m.ld_name + " = " + std::to_string(m.ld) + " is smaller than " +
                           m.name + "'s stored row length " + cols_name + " = " + std::to_string(m.cols));
  }
  if (m.data == nullptr) {
    throw invalid_argument(std::string("gemm: ") + m.name + " is a null pointer but has " + m.shape() + " elements");
  }
  // (rows - 1) * ld + cols elements must fit in one array and in the address space.
  check_matrix_extent("gemm", m.name, m.data, m.rows, m.cols, m.ld, 1, m.element_size);
}

// Whether the byte range [start, end) meets a row of m.  Rows are sorted and disjoint (ld >=
// cols): only the row starting at or before `start` and the next one can meet it.
inline bool range_meets_rows(std::uintptr_t start, std::uintptr_t end, const stored_matrix& m) noexcept {
  const std::uintptr_t base = m.begin();
  if (end <= base || start >= base + m.extent_bytes()) return false;
  const std::size_t first = start > base ? (start - base) / m.stride_bytes() : 0;
  for (std::size_t r = first; r < first + 2 && r < m.rows; ++r) {
    const std::uintptr_t row_start = base + r * m.stride_bytes();
    if (row_start < end && start < row_start + m.row_bytes()) return true;
  }
  return false;
}

// Whether two stored matrices share a byte: each row of the one with fewer rows against the other.
inline bool matrices_overlap(const stored_matrix& x, const stored_matrix& y) noexcept {
  if (!x.has_elements() || !y.has_elements()) return false;
  if (x.begin() + x.extent_bytes() <= y.begin() || y.begin() + y.extent_bytes() <= x.begin()) return false;
  const stored_matrix& few = x.rows <= y.rows ? x : y;
  const stored_matrix& many = x.rows <= y.rows ? y : x;
  for (std::size_t r = 0; r < few.rows; ++r) {
    const std::uintptr_t start = few.begin() + r * few.stride_bytes();
    if (range_meets_rows(start, start + few.row_bytes(), many)) return true;
  }
  return false;
}

inline void check_gemm_arguments(const stored_matrix& a, const char* a_cols, const stored_matrix& b, const char* b_cols,
                                 const stored_matrix& c) {
  check_stored_matrix(a, a_cols);
  check_stored_matrix(b, b_cols);
  check_stored_matrix(c, "N");
  for (const stored_matrix* input : {&a, &b}) {
    if (matrices_overlap(c, *input)) {
      throw invalid_argument(std::string("gemm: C (") + c.shape() + ", ldc = " + std::to_string(c.ld) + ") overlaps " +
                             input->name + " (" + input->shape() + ", " + input->ld_name + " = " +
                             std::to_string(input->ld) + "); write the product to separate memory");
    }
  }
}

}  // namespace mixprec::detail
