// eigen/cast.hpp: .cast<>() between float and mixprec types gives the scalar conversion's
// bits on every route: the bulk route (contiguous, same storage order) and Eigen's element
// loop (strided blocks, mixed storage orders, overlapping storage).
#include <mixprec/eigen/cast.hpp>

#include <catch2/catch.hpp>

#include <cmath>

using namespace mixprec;

namespace {

Eigen::MatrixXf interesting_floats(Eigen::Index rows, Eigen::Index cols) {
  Eigen::MatrixXf f(rows, cols);
  for (Eigen::Index k = 0; k < f.size(); ++k) {
    f.data()[k] = std::ldexp(1.0f + 0.0137f * static_cast<float>(k % 97), static_cast<int>(k % 41) - 20) *
                  (k % 3 == 0 ? -1.0f : 1.0f);
  }
  f(0, 0) = NAN;
  f(1, 0) = INFINITY;
  f(2, 0) = -0.0f;
  f(3, 0) = 1e30f;
  return f;
}

template <class To, class Dst>
void check_codes(const Dst& dst, const Eigen::MatrixXf& from) {
  REQUIRE(dst.rows() == from.rows());
  REQUIRE(dst.cols() == from.cols());
  for (Eigen::Index i = 0; i < from.rows(); ++i) {
    for (Eigen::Index j = 0; j < from.cols(); ++j) CHECK(dst(i, j).bits() == To(from(i, j)).bits());
  }
}

}  // namespace

TEST_CASE("the bulk route gives the scalar conversion's codes", "[eigen][cast]") {
  const Eigen::MatrixXf f = interesting_floats(37, 29);
  CHECK(mixprec::eigen::detail::is_contiguous(f));
  check_codes<bfloat16>(Eigen::Matrix<bfloat16, -1, -1>(f.cast<bfloat16>()), f);
  check_codes<float16>(Eigen::Matrix<float16, -1, -1>(f.cast<float16>()), f);
  check_codes<float8_e4m3fn>(Eigen::Matrix<float8_e4m3fn, -1, -1>(f.cast<float8_e4m3fn>()), f);
  check_codes<float4_e2m1fn>(Eigen::Matrix<float4_e2m1fn, -1, -1>(f.cast<float4_e2m1fn>()), f);
  // Back to float: exact.
  const Eigen::Matrix<bfloat16, -1, -1> b = f.cast<bfloat16>();
  const Eigen::MatrixXf back = b.cast<float>();
  for (Eigen::Index k = 1; k < f.size(); ++k) CHECK(back.data()[k] == static_cast<float>(b.data()[k]));
  CHECK(std::isnan(back(0, 0)));
  // Between two formats: staged through float, one rounding.
  const Eigen::Matrix<float8_e5m2, -1, -1> q = b.cast<float8_e5m2>();
  for (Eigen::Index k = 0; k < f.size(); ++k) CHECK(q.data()[k].bits() == float8_e5m2(b.data()[k]).bits());
}

TEST_CASE("strided blocks and other storage orders take the element loop, with the same codes", "[eigen][cast]") {
  const Eigen::MatrixXf f = interesting_floats(40, 30);
  const auto block = f.block(3, 2, 20, 11);
  CHECK_FALSE(mixprec::eigen::detail::is_contiguous(block));
  const Eigen::Matrix<bfloat16, -1, -1> from_block = block.cast<bfloat16>();
  check_codes<bfloat16>(from_block, Eigen::MatrixXf(block));
  const Eigen::Matrix<float16, -1, -1, Eigen::RowMajor> row_major = f.cast<float16>();
  check_codes<float16>(row_major, f);
  // Into an existing map, on a column block (contiguous in a column-major matrix).
  Eigen::Matrix<bfloat16, -1, -1> target(40, 30);
  target.middleCols(5, 10) = f.middleCols(5, 10).cast<bfloat16>();
  check_codes<bfloat16>(Eigen::Matrix<bfloat16, -1, -1>(target.middleCols(5, 10)),
                        Eigen::MatrixXf(f.middleCols(5, 10)));
}

TEST_CASE("a cast into storage that overlaps its source narrows in place like Eigen's loop", "[eigen][cast]") {
  Eigen::VectorXf buffer = Eigen::VectorXf::LinSpaced(64, -3.0f, 5.0f);
  const Eigen::VectorXf original = buffer;
  Eigen::Map<Eigen::Matrix<float16, -1, 1>> narrow(reinterpret_cast<float16*>(buffer.data()), 64);
  narrow = buffer.cast<float16>();  // element i (2 bytes at 2i) is written after float i (at 4i) is read
  for (Eigen::Index i = 0; i < 64; ++i) CHECK(narrow(i).bits() == float16(original(i)).bits());
}
