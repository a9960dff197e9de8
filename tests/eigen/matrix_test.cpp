// eigen/matrix.hpp and matrix_view's Eigen constructor: Eigen objects are viewed without a
// copy in any storage order, and mixprec::matrix comes back as a map or a converted copy.
#include <mixprec/eigen/matrix.hpp>

#include <catch2/catch.hpp>

using namespace mixprec;

TEST_CASE("a view of an Eigen object sees its elements in place, any storage order or block", "[eigen]") {
  Eigen::MatrixXf column_major(3, 4);
  Eigen::Matrix<bfloat16, -1, -1, Eigen::RowMajor> row_major(3, 4);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      column_major(i, j) = static_cast<float>(10 * i + j);
      row_major(i, j) = bfloat16(static_cast<float>(10 * i + j));
    }
  }
  const matrix_view a(column_major), b(row_major);
  CHECK(a.type() == dtype::float32);
  CHECK(b.type() == dtype::bfloat16);
  CHECK(a.data() == column_major.data());
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      CHECK(a.value(i, j) == static_cast<float>(10 * i + j));
      CHECK(b.value(i, j) == static_cast<float>(10 * i + j));
    }
  }
  const matrix_view block(column_major.block(1, 1, 2, 3));
  CHECK(block.value(1, 2) == 23.0f);
  const matrix_view transposed(column_major.transpose());
  CHECK(transposed.rows() == 4);
  CHECK(transposed.value(3, 2) == 23.0f);
}

TEST_CASE("a matrix comes back as an Eigen map of its dtype, or as a converted copy", "[eigen]") {
  matrix m(dtype::float16, 2, 3);
  auto map = mixprec::eigen::as_eigen<float16>(m);
  map(1, 2) = float16(2.5f);
  CHECK(m.value(1, 2) == 2.5f);
  CHECK_THROWS_AS(mixprec::eigen::as_eigen<bfloat16>(m), dtype_mismatch);
  const Eigen::Matrix<float, -1, -1, Eigen::RowMajor> f = mixprec::eigen::to_eigen<float>(m);
  CHECK(f(1, 2) == 2.5f);
  const matrix copy = mixprec::eigen::to_matrix(f);
  CHECK(copy.type() == dtype::float32);
  CHECK(copy.value(1, 2) == 2.5f);
}
