// .cast<>() between float and mixprec types through mixprec's conversions, whole matrices on
// the bulk path:
//
//   Eigen::MatrixXf w = ...;
//   Eigen::Matrix<mixprec::bfloat16, -1, -1> wb = w.cast<mixprec::bfloat16>();  // convert_n
//   Eigen::MatrixXf back = wb.cast<float>();                                    // convert_n
//
// Element by element, Eigen's cast already uses mixprec's scalar conversion (static_cast,
// i.e. minifloat's constructor: nearest-even, correctly rounded, from double too).  This
// header adds the bulk path: an assignment `dst = src.cast<To>()` in which src and dst are
// both contiguous arrays in the same storage order (Matrix, Array, contiguous Maps and column
// blocks of column-major matrices ...) and one of From/To is a minifloat and the other float
// or a minifloat, runs convert_n over the whole array (SIMD, threads as set_bulk_threads says),
// which gives the scalar conversion's bits (docs/bulk.md).  Everything else — strided views,
// mixed storage orders, casts inside larger expressions, arrays that overlap — takes Eigen's
// element loop with the same scalar conversion, so the result never depends on the path.
#pragma once

#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "../bulk/convert_n.hpp"
#include "numtraits.hpp"

namespace mixprec::eigen::detail {

template <class T>
constexpr bool is_minifloat_v = mixprec::detail::is_minifloat<T>::value;

template <class From, class To>
constexpr bool bulk_castable =
    !std::is_same<From, To>::value &&
    (is_minifloat_v<From> || is_minifloat_v<To>)&&(is_minifloat_v<From> || std::is_same<From, float>::value) &&
    (is_minifloat_v<To> || std::is_same<To, float>::value);

// Whether x is one contiguous array (inner stride 1, outer stride = inner size).
template <class X>
bool is_contiguous(const X& x) {
  if constexpr ((int(Eigen::internal::traits<X>::Flags) & Eigen::DirectAccessBit) == 0) {
    return false;
  } else {
    return x.innerStride() == 1 && (x.outerSize() <= 1 || x.outerStride() == x.innerSize());
  }
}

template <class Src, class Dst>
bool same_layout(const Dst& dst) {
  const bool vector = dst.rows() == 1 || dst.cols() == 1;
  return vector || bool(Dst::IsRowMajor) == bool(Src::IsRowMajor);
}

template <class Dst, class Src>
bool overlap(const Dst& dst, const Src& src) {
  const auto d = reinterpret_cast<std::uintptr_t>(dst.data());
  const auto s = reinterpret_cast<std::uintptr_t>(src.data());
  const auto d_end = d + static_cast<std::uintptr_t>(dst.size()) * sizeof(typename Dst::Scalar);
  const auto s_end = s + static_cast<std::uintptr_t>(src.size()) * sizeof(typename Src::Scalar);
  return d < s_end && s < d_end;
}

}  // namespace mixprec::eigen::detail

namespace Eigen::internal {

template <class DstXprType, class Arg, class From, class To>
struct Assignment<DstXprType, CwiseUnaryOp<scalar_cast_op<From, To>, Arg>, assign_op<To, To>, Dense2Dense,
                  std::enable_if_t<mixprec::eigen::detail::bulk_castable<From, To>>> {
  using SrcXprType = CwiseUnaryOp<scalar_cast_op<From, To>, Arg>;
  static void run(DstXprType& dst, const SrcXprType& src, const assign_op<To, To>& func) {
    resize_if_allowed(dst, src, func);
    using Source = std::remove_cv_t<std::remove_reference_t<Arg>>;
    const Source& from = src.nestedExpression();
    if constexpr ((int(traits<Source>::Flags) & DirectAccessBit) != 0 &&
                  (int(traits<DstXprType>::Flags) & DirectAccessBit) != 0) {
      namespace d = mixprec::eigen::detail;
      if (d::is_contiguous(from) && d::is_contiguous(dst) && d::same_layout<Source>(dst) && !d::overlap(dst, from)) {
        mixprec::convert_n(from.data(), static_cast<std::size_t>(from.size()), dst.data());
        return;
      }
    }
    call_dense_assignment_loop(dst, src, func);
  }
};

}  // namespace Eigen::internal
