// eigen/numtraits.hpp: every minifloat works as an Eigen scalar, element operations round like
// the scalar type, mixed expressions with float compute in float, and Eigen's own matrix
// product is what the header says it is (the scalar type's arithmetic).
#include <mixprec/eigen/numtraits.hpp>
#include <mixprec/io.hpp>

#include <catch2/catch.hpp>

#include <cmath>

#include "all_formats.hpp"

using namespace mixprec;

template <class T>
using dynamic_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

TEMPLATE_TEST_CASE("every mixprec type lives in Eigen expressions with its own rounding", "[eigen]", float16, bfloat16,
                   float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float6_e3m2fn, float6_e2m3fn,
                   float4_e2m1fn, float8_ue4m3, float8_e4m3, float8_e3m4, float8_e4m3b11fnuz, tfloat32) {
  using T = TestType;
  dynamic_matrix<T> a(3, 4), b(3, 4);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      a(i, j) = T(0.25f * static_cast<float>(i + 2 * j) + 0.5f);
      b(i, j) = T(0.5f * static_cast<float>(j - i));
    }
  }
  const dynamic_matrix<T> sum = a + b;
  const dynamic_matrix<T> product = a.cwiseProduct(b);
  const dynamic_matrix<T> quotient = a.cwiseQuotient(a);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      CHECK(sum(i, j).bits() == (a(i, j) + b(i, j)).bits());
      CHECK(product(i, j).bits() == (a(i, j) * b(i, j)).bits());
      CHECK(static_cast<float>(quotient(i, j)) == 1.0f);
    }
  }
  CHECK(static_cast<float>(a.cwiseAbs().maxCoeff()) == static_cast<float>(a.maxCoeff()));
  CHECK(a.allFinite());
  CHECK_FALSE(a.hasNaN());
  CHECK(a.isApprox(a));
  CHECK((a.transpose().transpose().array() == a.array()).all());
  STATIC_REQUIRE(std::is_same<typename Eigen::NumTraits<T>::Real, T>::value);
  CHECK(static_cast<float>(Eigen::NumTraits<T>::epsilon()) == static_cast<float>(std::numeric_limits<T>::epsilon()));
  CHECK(static_cast<float>(Eigen::NumTraits<T>::highest()) == static_cast<float>(std::numeric_limits<T>::max()));
}

TEST_CASE("Eigen's array functions call mixprec's correctly rounded math", "[eigen]") {
  Eigen::Array<bfloat16, Eigen::Dynamic, 1> x(5);
  for (int i = 0; i < 5; ++i) x(i) = bfloat16(0.3f * static_cast<float>(i) + 0.1f);
  const Eigen::Array<bfloat16, Eigen::Dynamic, 1> e = x.exp(), l = x.log(), s = x.sqrt(), t = x.tanh();
  for (int i = 0; i < 5; ++i) {
    CHECK(e(i).bits() == mixprec::exp(x(i)).bits());
    CHECK(l(i).bits() == mixprec::log(x(i)).bits());
    CHECK(s(i).bits() == mixprec::sqrt(x(i)).bits());
    CHECK(t(i).bits() == mixprec::tanh(x(i)).bits());
  }
  Eigen::Array<float16, 2, 1> special(float16(NAN), float16(INFINITY));
  CHECK(special.isNaN()(0));
  CHECK(special.isInf()(1));
  CHECK_FALSE(special.isFinite()(1));
}

TEST_CASE("a minifloat and a float combine into a float, computed in float", "[eigen]") {
  dynamic_matrix<bfloat16> a(2, 2);
  Eigen::MatrixXf f(2, 2);
  a << bfloat16(1.0f), bfloat16(3.0f), bfloat16(-0.5f), bfloat16(256.0f);
  f << 1e-3f, 0.1f, 3.0f, 1.0f / 3.0f;
  const Eigen::MatrixXf sum = a + f, difference = f - a, product = a.cwiseProduct(f);
  const Eigen::ArrayXXf quotient = f.array() / a.array();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      const float x = static_cast<float>(a(i, j));
      CHECK(sum(i, j) == x + f(i, j));
      CHECK(difference(i, j) == f(i, j) - x);
      CHECK(product(i, j) == x * f(i, j));
      CHECK(quotient(i, j) == f(i, j) / x);
    }
  }
}

TEST_CASE("A * B of bf16 matrices is Eigen's product in bf16 arithmetic, as documented", "[eigen]") {
  // The example: 8×4096 ones times 4096×8 ones.  Summed in bf16 every partial sum
  // above 256 stops growing (256 + 1 rounds back to 256 in 8 significant bits) in a plain
  // running sum; Eigen's blocked product adds blocks, so it ends higher, yet far from 4096.
  const dynamic_matrix<bfloat16> a = dynamic_matrix<bfloat16>::Constant(8, 4096, bfloat16(1.0f));
  const dynamic_matrix<bfloat16> b = dynamic_matrix<bfloat16>::Constant(4096, 8, bfloat16(1.0f));
  const dynamic_matrix<bfloat16> c = a * b;
  CHECK(static_cast<float>(c(0, 0)) < 4096.0f);
  CHECK(static_cast<float>(a.row(0).sum()) == 256.0f);
  // The float route is exact: every partial sum is an integer below 2^24.
  const Eigen::MatrixXf exact = a.cast<float>() * b.cast<float>();
  CHECK(exact(0, 0) == 4096.0f);
}

TEMPLATE_TEST_CASE("the narrow integers are Eigen integer scalars that wrap as ml_dtypes' do", "[eigen][intn]", int4,
                   uint4, int2, uint2, int1, uint1) {
  using T = TestType;
  using traits = Eigen::NumTraits<T>;
  STATIC_REQUIRE(traits::IsInteger == 1);
  STATIC_REQUIRE(traits::IsSigned == (T::is_signed ? 1 : 0));
  CHECK(traits::highest().value() == T::max_value);
  CHECK(traits::lowest().value() == T::min_value);
  // Every pair of values, added and multiplied element-wise, as the scalar operators wrap.
  constexpr int count = T::max_value - T::min_value + 1;
  dynamic_matrix<T> a(count, count), b(count, count);
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      a(i, j) = T(T::min_value + i);
      b(i, j) = T(T::min_value + j);
    }
  }
  const dynamic_matrix<T> sum = a + b;
  const dynamic_matrix<T> product = a.cwiseProduct(b);
  bool all = true;
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      all = all && sum(i, j) == a(i, j) + b(i, j) && product(i, j) == a(i, j) * b(i, j);
    }
  }
  CHECK(all);
  CHECK(a.maxCoeff().value() == T::max_value);
  CHECK(a.minCoeff().value() == T::min_value);
  // cast<float>() is exact; cast<T>() from float is the constructor: truncation, then the wrap.
  const Eigen::MatrixXf widened = a.template cast<float>();
  CHECK(widened(count - 1, 0) == static_cast<float>(T::max_value));
  Eigen::MatrixXf floats(1, 3);
  floats << 1.75f, -1.75f, static_cast<float>(T::max_value + 1);
  const dynamic_matrix<T> narrowed = floats.cast<T>();
  CHECK(narrowed(0, 0) == T(1));
  CHECK(narrowed(0, 1) == T(-1));
  CHECK(narrowed(0, 2) == T(T::max_value + 1));  // wraps to the lowest value
  CHECK(narrowed(0, 2).value() == T::min_value);
}

TEST_CASE("a sum of int4 values wraps; summing the float cast does not", "[eigen][intn]") {
  dynamic_matrix<int4> a = dynamic_matrix<int4>::Constant(2, 2, int4(3));
  CHECK(a.sum() == int4(-4));  // 12 wraps to 12 - 16
  CHECK(a.cast<float>().sum() == 12.0f);
  CHECK(a.cast<float>().mean() == 3.0f);
}
