// mixprec::matrix (run-time dtype, row-major) seen as Eigen matrices, and back.
//
//   mixprec::matrix h = ops::linear(x, w, b);                 // bfloat16 under autocast
//   auto hb = mixprec::eigen::as_eigen<mixprec::bfloat16>(h); // Eigen::Map, no copy; wrong T throws
//   Eigen::MatrixXf hf = mixprec::eigen::to_eigen<float>(h);  // converted copy (exact here)
//   mixprec::matrix m = mixprec::eigen::to_matrix(eigen_matrix); // copy, in its own dtype
//
// (Eigen objects with direct access are accepted wherever a matrix_view or an ops operand is,
// without a copy: this header is for the way back.)
#pragma once

#include <Eigen/Core>

#include "../matrix.hpp"
#include "cast.hpp"
#include "numtraits.hpp"

namespace mixprec::eigen {

template <class T>
using row_major_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The matrix's elements as an Eigen map of T; dtype_mismatch unless T is its dtype.
template <class T>
Eigen::Map<row_major_matrix<T>> as_eigen(matrix& m) {
  return Eigen::Map<row_major_matrix<T>>(m.data<T>(), static_cast<Eigen::Index>(m.rows()),
                                         static_cast<Eigen::Index>(m.cols()));
}
template <class T>
Eigen::Map<const row_major_matrix<T>> as_eigen(const matrix& m) {
  return Eigen::Map<const row_major_matrix<T>>(m.data<T>(), static_cast<Eigen::Index>(m.rows()),
                                               static_cast<Eigen::Index>(m.cols()));
}

// Any view converted to an Eigen matrix of T (rounded once where T is narrower).
template <class T>
row_major_matrix<T> to_eigen(const matrix_view& v) {
  matrix converted = convert(v, dtype_of<T>);
  return as_eigen<T>(converted);
}

// A copy of an Eigen object (or any view) as a matrix of its own dtype.
inline matrix to_matrix(const matrix_view& v) { return matrix::copy_of(v); }

}  // namespace mixprec::eigen
