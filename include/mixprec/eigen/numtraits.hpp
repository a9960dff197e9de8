// mixprec's value types as Eigen scalars: Eigen::Matrix<mixprec::bfloat16, ...> (and every
// other minifloat) in Eigen expressions.
//
//   Eigen::Matrix<mixprec::bfloat16, Eigen::Dynamic, Eigen::Dynamic> w = ...;
//   auto y = (w.array() * w.array()).exp();        // bf16 arithmetic, each operation rounded once
//   Eigen::MatrixXf z = w.cast<float>() + x;       // exact widening
//   Eigen::MatrixXf s = x + w;                     // mixed with float: computed in float
//
// What this header provides:
// - Eigen::NumTraits for every minifloat (epsilon, limits, costs; dummy_precision, the
//   tolerance of isApprox, is 8 epsilons);
// - the math functions Eigen's array methods call (exp, log, sqrt, abs, isnan, ...): mixprec's
//   correctly rounded <cmath> (cmath.hpp), found by argument-dependent lookup, plus the
//   numext overloads Eigen calls without it;
// - ScalarBinaryOpTraits with float in both orders: a minifloat and a float combine into a
//   float, computed as float(a) op b, rounded once (float holds every minifloat value);
//   + - * / only (comparisons between the two types are not defined: compare in one type).
//
// What A * B (a matrix product) of two mixprec-scalar matrices does: Eigen's own product,
// which computes in the scalar type, rounding every multiply and every add to it, as Eigen
// does for Eigen::bfloat16 (the sum of 4096 bf16 ones is 256 there, not 4096).  mixprec does
// not override Eigen's product: Eigen chooses among three code paths by size, and changing
// only some would make a result depend on the shape.  Products with float accumulation are
// mixprec::eigen::gemm / matmul (eigen/gemm.hpp), or mixprec::ops::matmul under autocast.
//
// The narrow integers (int4 ... uint1, intn.hpp) are integer scalars: element arithmetic wraps
// modulo 2^bits as ml_dtypes' does (a sum of int4s can wrap), cast<float>() is exact, and
// cast<int4>() from float is intn's constructor, ml_dtypes' astype (truncate, then wrap); for a
// rounded, saturating conversion use mixprec::convert<int4> or pack_n.
//
// e8m0 (float8_e8m0fnu) has no zero: Scalar(0) in Eigen's algorithms is NaN there.  It is a
// scale format; store it in Eigen matrices, compute with the others.
//
// Opt-in: this header includes <Eigen/Core>; the rest of mixprec never needs Eigen.
#pragma once

#include <functional>
#include <limits>

#include <Eigen/Core>

#include "../cmath.hpp"
#include "../intn.hpp"
#include "../limits.hpp"
#include "../types.hpp"

namespace Eigen {

template <class Format>
struct NumTraits<mixprec::minifloat<Format>> : GenericNumTraits<mixprec::minifloat<Format>> {
  using Scalar = mixprec::minifloat<Format>;
  using Real = Scalar;
  using NonInteger = Scalar;
  using Literal = Scalar;
  using Nested = Scalar;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = mixprec::format_traits<Format>::is_signed ? 1 : 0,
    RequireInitialization = 0,
    ReadCost = 1,
    // A conversion to the wide type and back around each operation.
    AddCost = 4,
    MulCost = 4,
  };
  static Scalar epsilon() { return std::numeric_limits<Scalar>::epsilon(); }
  static Scalar dummy_precision() { return Scalar(8.0f * static_cast<float>(epsilon())); }
  static Scalar highest() { return std::numeric_limits<Scalar>::max(); }
  static Scalar lowest() { return std::numeric_limits<Scalar>::lowest(); }
  static Scalar infinity() { return std::numeric_limits<Scalar>::infinity(); }
  static Scalar quiet_NaN() { return std::numeric_limits<Scalar>::quiet_NaN(); }
  static int digits10() { return std::numeric_limits<Scalar>::digits10; }
};

template <int Bits, bool Signed>
struct NumTraits<mixprec::intn<Bits, Signed>> : GenericNumTraits<mixprec::intn<Bits, Signed>> {
  using Scalar = mixprec::intn<Bits, Signed>;
  using Real = Scalar;
  using NonInteger = float;  // what Eigen computes a mean or a norm in: holds every value exactly
  using Literal = Scalar;
  using Nested = Scalar;
  enum {
    IsComplex = 0,
    IsInteger = 1,
    IsSigned = Signed ? 1 : 0,
    RequireInitialization = 0,
    ReadCost = 1,
    AddCost = 1,
    MulCost = 1,
  };
  static Scalar epsilon() { return Scalar(0); }
  static Scalar dummy_precision() { return Scalar(0); }
  static Scalar highest() { return std::numeric_limits<Scalar>::max(); }
  static Scalar lowest() { return std::numeric_limits<Scalar>::lowest(); }
  static int digits10() { return std::numeric_limits<Scalar>::digits10; }
};

template <class Format, class BinaryOp>
struct ScalarBinaryOpTraits<mixprec::minifloat<Format>, float, BinaryOp> {
  using ReturnType = float;
};
template <class Format, class BinaryOp>
struct ScalarBinaryOpTraits<float, mixprec::minifloat<Format>, BinaryOp> {
  using ReturnType = float;
};

namespace internal {

// a op b for a minifloat and a float: both read as float (exact), one float operation.
template <class Lhs, class Rhs, class Operation>
struct mixprec_float_binary_op : binary_op_base<Lhs, Rhs> {
  using result_type = float;
  float operator()(const Lhs& a, const Rhs& b) const {
    return Operation{}(static_cast<float>(a), static_cast<float>(b));
  }
};

template <class Format>
struct scalar_sum_op<mixprec::minifloat<Format>, float>
    : mixprec_float_binary_op<mixprec::minifloat<Format>, float, std::plus<float>> {};
template <class Format>
struct scalar_sum_op<float, mixprec::minifloat<Format>>
    : mixprec_float_binary_op<float, mixprec::minifloat<Format>, std::plus<float>> {};
template <class Format>
struct scalar_difference_op<mixprec::minifloat<Format>, float>
    : mixprec_float_binary_op<mixprec::minifloat<Format>, float, std::minus<float>> {};
template <class Format>
struct scalar_difference_op<float, mixprec::minifloat<Format>>
    : mixprec_float_binary_op<float, mixprec::minifloat<Format>, std::minus<float>> {};
template <class Format>
struct scalar_product_op<mixprec::minifloat<Format>, float>
    : mixprec_float_binary_op<mixprec::minifloat<Format>, float, std::multiplies<float>> {};
template <class Format>
struct scalar_product_op<float, mixprec::minifloat<Format>>
    : mixprec_float_binary_op<float, mixprec::minifloat<Format>, std::multiplies<float>> {};
template <class Format>
struct scalar_quotient_op<mixprec::minifloat<Format>, float>
    : mixprec_float_binary_op<mixprec::minifloat<Format>, float, std::divides<float>> {};
template <class Format>
struct scalar_quotient_op<float, mixprec::minifloat<Format>>
    : mixprec_float_binary_op<float, mixprec::minifloat<Format>, std::divides<float>> {};

}  // namespace internal

// Eigen calls these with the name in parentheses, which turns argument-dependent lookup off.
namespace numext {
template <class Format>
EIGEN_DEVICE_FUNC inline bool(isnan)(const mixprec::minifloat<Format>& x) {
  return mixprec::isnan(x);
}
template <class Format>
EIGEN_DEVICE_FUNC inline bool(isinf)(const mixprec::minifloat<Format>& x) {
  return mixprec::isinf(x);
}
template <class Format>
EIGEN_DEVICE_FUNC inline bool(isfinite)(const mixprec::minifloat<Format>& x) {
  return mixprec::isfinite(x);
}
}  // namespace numext

}  // namespace Eigen
