// mixprec::gemm on Eigen objects: exact products, float accumulation, whatever the scalar types
// and storage orders.
//
//   Eigen::Matrix<mixprec::bfloat16, -1, -1> a = ..., b = ...;
//   Eigen::MatrixXf c = mixprec::eigen::matmul(a, b);        // float result, never a bf16 sum
//   mixprec::eigen::gemm(0.5f, a, b.transpose(), 1.0f, c);   // c = 0.5·a·bᵀ + c
//
// A and B: any Eigen dense expression whose scalar is float or a mixprec type.  Objects with
// direct access and a unit inner stride (Matrix, Map, Block, Transpose of those) are read in
// place, the storage order becoming gemm's transpose flag; anything else (expressions, strided
// maps) is evaluated into a temporary first.  C: a float Matrix, Map or Block with unit inner
// stride, in either storage order; a column-major C is computed as Cᵀ = Bᵀ·Aᵀ, which gives the
// same bits as the row-major call (docs/gemm.md).  Shapes that do not match, and a C without
// unit inner stride, throw mixprec::invalid_argument.
#pragma once

#include <string>
#include <type_traits>

#include <Eigen/Core>

#include "../gemm/gemm.hpp"
#include "numtraits.hpp"

namespace mixprec::eigen {
namespace detail {

// An operand as gemm reads it: stored rows (no) or the transpose of stored rows (yes).
template <class Scalar>
struct stored_operand {
  const Scalar* data;
  std::size_t ld;
  transpose op;
};

template <class Derived>
constexpr bool readable_in_place = (int(Eigen::internal::traits<Derived>::Flags) & Eigen::DirectAccessBit) != 0;

// Reads x in place when it can, else from `temporary`, which it fills.
template <class Derived, class Plain>
stored_operand<typename Derived::Scalar> stored(const Eigen::MatrixBase<Derived>& x, Plain& temporary) {
  if constexpr (readable_in_place<Derived>) {
    const Derived& d = x.derived();
    if (d.innerStride() == 1) {
      const auto ld = static_cast<std::size_t>(d.outerStride());
      return {d.data(), ld, Derived::IsRowMajor ? transpose::no : transpose::yes};
    }
  }
  temporary = x;
  return {temporary.data(), static_cast<std::size_t>(temporary.outerStride()),
          Plain::IsRowMajor ? transpose::no : transpose::yes};
}

inline transpose flipped(transpose t) { return t == transpose::no ? transpose::yes : transpose::no; }

}  // namespace detail

// C = alpha·A·B + beta·C (BLAS conventions: beta == 0 does not read C).
template <class DA, class DB, class DC>
void gemm(float alpha, const Eigen::MatrixBase<DA>& A, const Eigen::MatrixBase<DB>& B, float beta,
          Eigen::MatrixBase<DC>& C, const gemm_options& options = {}) {
  using TA = typename DA::Scalar;
  using TB = typename DB::Scalar;
  static_assert(std::is_same<typename DC::Scalar, float>::value, "mixprec::eigen::gemm: C holds float");
  static_assert(detail::readable_in_place<DC>,
                "mixprec::eigen::gemm: C must be a Matrix, Map or Block (direct access)");
  const auto M = static_cast<std::size_t>(A.rows()), K = static_cast<std::size_t>(A.cols());
  const auto N = static_cast<std::size_t>(B.cols());
  if (static_cast<std::size_t>(B.rows()) != K || static_cast<std::size_t>(C.rows()) != M ||
      static_cast<std::size_t>(C.cols()) != N) {
    throw invalid_argument("mixprec::eigen::gemm: shapes " + std::to_string(A.rows()) + "×" + std::to_string(A.cols()) +
                           " times " + std::to_string(B.rows()) + "×" + std::to_string(B.cols()) + " into " +
                           std::to_string(C.rows()) + "×" + std::to_string(C.cols()));
  }
  DC& c = C.derived();
  if (c.innerStride() != 1) {
    throw invalid_argument("mixprec::eigen::gemm: C has inner stride " + std::to_string(c.innerStride()) +
                           "; gemm writes rows (or columns) of consecutive floats");
  }
  Eigen::Matrix<TA, Eigen::Dynamic, Eigen::Dynamic> a_temporary;
  Eigen::Matrix<TB, Eigen::Dynamic, Eigen::Dynamic> b_temporary;
  const detail::stored_operand<TA> a = detail::stored(A, a_temporary);
  const detail::stored_operand<TB> b = detail::stored(B, b_temporary);
  const auto ldc = static_cast<std::size_t>(c.outerStride());
  if constexpr (DC::IsRowMajor) {
    mixprec::gemm(a.op, b.op, M, N, K, alpha, a.data, a.ld, b.data, b.ld, beta, c.data(), ldc, options);
  } else {  // Cᵀ = Bᵀ·Aᵀ, row-major
    gemm_options swapped = options;
    std::swap(swapped.scale_a, swapped.scale_b);
    mixprec::gemm(detail::flipped(b.op), detail::flipped(a.op), N, M, K, alpha, b.data, b.ld, a.data, a.ld, beta,
                  c.data(), ldc, swapped);
  }
}

// A·B as a float matrix: exact products, float accumulation.
template <class DA, class DB>
Eigen::MatrixXf matmul(const Eigen::MatrixBase<DA>& A, const Eigen::MatrixBase<DB>& B,
                       const gemm_options& options = {}) {
  Eigen::MatrixXf C(A.rows(), B.cols());
  mixprec::eigen::gemm(1.0f, A, B, 0.0f, C, options);
  return C;
}

}  // namespace mixprec::eigen
