// eigen/gemm.hpp: the Eigen wrapper gives mixprec::gemm's bits for every storage order of A, B
// and C, blocks, transposes and expressions, and fixes Eigen's own bf16 product (4096 ones).
#include <mixprec/eigen/gemm.hpp>

#include <catch2/catch.hpp>

#include <random>
#include <vector>

using namespace mixprec;

namespace {

template <class T, int Order = Eigen::ColMajor>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order> random_eigen(Eigen::Index rows, Eigen::Index cols,
                                                                     unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order> m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i) {
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = T(normal(gen));
  }
  return m;
}

// The reference: both operands copied to row-major arrays, the contract call.
template <class DA, class DB>
std::vector<float> contract_product(const DA& a, const DB& b, float alpha, float beta, const std::vector<float>& c0) {
  using TA = typename DA::Scalar;
  using TB = typename DB::Scalar;
  const Eigen::Matrix<TA, -1, -1, Eigen::RowMajor> ra = a;
  const Eigen::Matrix<TB, -1, -1, Eigen::RowMajor> rb = b;
  std::vector<float> c = c0;
  const auto m = static_cast<std::size_t>(a.rows()), k = static_cast<std::size_t>(a.cols()),
             n = static_cast<std::size_t>(b.cols());
  gemm(m, n, k, alpha, ra.data(), k, rb.data(), n, beta, c.data(), n);
  return c;
}

template <class DC>
std::vector<float> row_major_values(const DC& c) {
  std::vector<float> v;
  for (Eigen::Index i = 0; i < c.rows(); ++i) {
    for (Eigen::Index j = 0; j < c.cols(); ++j) v.push_back(c(i, j));
  }
  return v;
}

}  // namespace

TEST_CASE("every storage order of A, B and C gives the contract call's bits", "[eigen][gemm]") {
  const auto a_col = random_eigen<bfloat16>(23, 41, 1);
  const auto b_col = random_eigen<float16>(41, 17, 2);
  const Eigen::Matrix<bfloat16, -1, -1, Eigen::RowMajor> a_row = a_col;
  const Eigen::Matrix<float16, -1, -1, Eigen::RowMajor> b_row = b_col;
  const Eigen::MatrixXf c0 = random_eigen<float>(23, 17, 3);
  const std::vector<float> expected = contract_product(a_col, b_col, 0.75f, -0.5f, row_major_values(c0));
  Eigen::MatrixXf c_col = c0;
  Eigen::Matrix<float, -1, -1, Eigen::RowMajor> c_row = c0;
  mixprec::eigen::gemm(0.75f, a_col, b_col, -0.5f, c_col);
  CHECK(row_major_values(c_col) == expected);
  mixprec::eigen::gemm(0.75f, a_row, b_row, -0.5f, c_row);
  CHECK(row_major_values(c_row) == expected);
  c_col = c0;
  mixprec::eigen::gemm(0.75f, a_row, b_col, -0.5f, c_col);
  CHECK(row_major_values(c_col) == expected);
  c_row = c0;
  mixprec::eigen::gemm(0.75f, a_col, b_row, -0.5f, c_row);
  CHECK(row_major_values(c_row) == expected);
}

TEST_CASE("blocks, transposes and expressions are read correctly", "[eigen][gemm]") {
  const auto big = random_eigen<float8_e4m3fn>(40, 50, 4);
  const auto w = random_eigen<float>(12, 30, 5);
  const auto block = big.block(3, 7, 20, 30);
  const Eigen::MatrixXf via_wrapper = mixprec::eigen::matmul(block, w.transpose());
  const std::vector<float> expected =
      contract_product(Eigen::Matrix<float8_e4m3fn, -1, -1>(block), Eigen::MatrixXf(w.transpose()), 1.0f, 0.0f,
                       std::vector<float>(20 * 12, 0.0f));
  CHECK(row_major_values(via_wrapper) == expected);
  // An expression without storage is evaluated first.
  const Eigen::MatrixXf sum = mixprec::eigen::matmul(w + w, w.transpose());
  const Eigen::MatrixXf twice = w + w;
  CHECK(row_major_values(sum) ==
        contract_product(twice, Eigen::MatrixXf(w.transpose()), 1.0f, 0.0f, std::vector<float>(12 * 12, 0.0f)));
  // Into a block of a larger C.
  Eigen::MatrixXf c = Eigen::MatrixXf::Constant(30, 20, 7.0f);
  auto target = c.block(2, 3, 20, 12);
  mixprec::eigen::gemm(1.0f, block, w.transpose(), 0.0f, target);
  CHECK(row_major_values(Eigen::MatrixXf(c.block(2, 3, 20, 12))) == expected);
  CHECK(c(0, 0) == 7.0f);
  CHECK(c(22, 3) == 7.0f);
}

TEST_CASE("the issue's example: 8×4096 by 4096×8 bf16 ones is exactly 4096 here", "[eigen][gemm]") {
  using bf16_matrix = Eigen::Matrix<bfloat16, Eigen::Dynamic, Eigen::Dynamic>;
  const bf16_matrix a = bf16_matrix::Constant(8, 4096, bfloat16(1.0f)),
                    b = bf16_matrix::Constant(4096, 8, bfloat16(1.0f));
  const Eigen::MatrixXf c = mixprec::eigen::matmul(a, b);
  CHECK((c.array() == 4096.0f).all());
}

TEST_CASE("shape mismatches and a strided C are errors", "[eigen][gemm]") {
  const Eigen::MatrixXf a(3, 4), b(5, 2);
  Eigen::MatrixXf c(3, 2);
  CHECK_THROWS_WITH(mixprec::eigen::gemm(1.0f, a, b, 0.0f, c), Catch::Contains("3×4 times 5×2"));
  Eigen::MatrixXf wide(3, 4);
  Eigen::Map<Eigen::MatrixXf, 0, Eigen::Stride<Eigen::Dynamic, 2>> strided(wide.data(), 3, 2,
                                                                           Eigen::Stride<Eigen::Dynamic, 2>(6, 2));
  const Eigen::MatrixXf b_ok(4, 2);
  CHECK_THROWS_WITH(mixprec::eigen::gemm(1.0f, a, b_ok, 0.0f, strided), Catch::Contains("inner stride 2"));
}
