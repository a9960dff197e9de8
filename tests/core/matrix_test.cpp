// matrix.hpp: views of any layout, owning matrices, conversions between dtypes.
#include <mixprec/matrix.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace mixprec;

TEST_CASE("a new matrix is zeros, aligned to 64 bytes, of its dtype", "[matrix]") {
  matrix m(dtype::bfloat16, 3, 5);
  CHECK(m.rows() == 3);
  CHECK(m.cols() == 5);
  CHECK(m.bytes() == 30);
  CHECK(reinterpret_cast<std::uintptr_t>(m.raw_data()) % 64 == 0);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 5; ++j) CHECK(m.value(i, j) == 0.0f);
  }
}

TEST_CASE("typed access to the wrong dtype throws dtype_mismatch naming both", "[matrix]") {
  matrix m(dtype::float16, 2, 2);
  CHECK_NOTHROW(m.data<float16>());
  CHECK_THROWS_AS(m.data<bfloat16>(), dtype_mismatch);
  CHECK_THROWS_WITH(m.data<float>(), Catch::Contains("float16") && Catch::Contains("float32"));
  CHECK_THROWS_AS(m.view().data_as<float8_e4m3fn>(), dtype_mismatch);
}

TEST_CASE("copies are deep and moves leave an empty matrix", "[matrix]") {
  matrix a(dtype::float32, 2, 2);
  a.data<float>()[3] = 7.0f;
  matrix b = a;
  b.data<float>()[3] = 1.0f;
  CHECK(a.value(1, 1) == 7.0f);
  matrix c = std::move(a);
  CHECK(c.value(1, 1) == 7.0f);
  CHECK(a.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
}

TEST_CASE("a view reads any strides, transposes and row ranges", "[matrix]") {
  // 3 × 4 column-major floats: element (i, j) at i + 3j.
  std::vector<float> data(12);
  for (std::size_t k = 0; k < 12; ++k) data[k] = static_cast<float>(k);
  const matrix_view v(data.data(), dtype::float32, 3, 4, 1, 3);
  CHECK(v.value(2, 1) == 5.0f);
  CHECK_FALSE(v.rows_contiguous());
  const matrix_view t = v.transposed();
  CHECK(t.rows() == 4);
  CHECK(t.value(1, 2) == 5.0f);
  CHECK(t.rows_contiguous());
  CHECK(v.rows_range(1, 2).value(1, 3) == 11.0f);
  CHECK_THROWS_AS(v.rows_range(2, 2), invalid_argument);
}

TEST_CASE("views reject null data and sizes that overflow", "[matrix]") {
  CHECK_THROWS_AS(matrix_view(nullptr, dtype::float32, 2, 2, 2, 1), invalid_argument);
  CHECK_NOTHROW(matrix_view(nullptr, dtype::float32, 0, 5, 5, 1));
  const std::size_t huge = std::size_t{1} << 40;
  CHECK_THROWS_AS(matrix(dtype::float32, huge, huge), invalid_argument);
  // Strides whose farthest element lies beyond the largest array (either stride, or their sum).
  const float one = 1.0f;
  const std::size_t most = std::numeric_limits<std::size_t>::max();
  CHECK_THROWS_WITH(matrix_view(&one, dtype::float32, 3, 1, most / 2, 1), Catch::Contains("spans more than"));
  CHECK_THROWS_WITH(matrix_view(&one, dtype::float32, 1, 3, 1, most / 2), Catch::Contains("strides 1 and"));
  CHECK_THROWS_AS(matrix_view(&one, dtype::float32, 2, 2, std::size_t{1} << 60, std::size_t{1} << 60),
                  invalid_argument);
  CHECK_NOTHROW(matrix_view(&one, dtype::float32, 1, 1, most, most));  // one element: no stride is taken
}

TEST_CASE("convert rounds each element once with the scalar conversion, from any layout", "[matrix]") {
  std::vector<float> data;
  for (int k = 0; k < 60; ++k)
    data.push_back(std::ldexp(1.0f + 0.013f * static_cast<float>(k), k % 21 - 10) * (k % 2 ? -1.f : 1.f));
  data[7] = NAN;
  data[8] = INFINITY;
  data[9] = 1e9f;
  for (bool column_major : {false, true}) {
    const matrix_view v = column_major ? matrix_view(data.data(), dtype::float32, 6, 10, 1, 6)
                                       : matrix_view(data.data(), dtype::float32, 6, 10, 10, 1);
    for (dtype to : all_dtypes) {
      const matrix m = convert(v, to, rounding::toward_zero, overflow::saturate);
      visit_dtype(to, [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (std::size_t i = 0; i < 6; ++i) {
          for (std::size_t j = 0; j < 10; ++j) {
            const float x = v.value(i, j);
            const T expected = convert<T>(x, rounding::toward_zero, overflow::saturate);
            const T got = m.data<T>()[i * 10 + j];
            if constexpr (std::is_same<T, float>::value) {
              CHECK((std::isnan(x) ? std::isnan(got) : got == expected));
            } else {
              CHECK(got.bits() == expected.bits());
            }
          }
        }
      });
    }
  }
}

TEST_CASE("matrix::to and copy_of keep values that the target holds", "[matrix]") {
  matrix m(dtype::bfloat16, 2, 3);
  for (std::size_t k = 0; k < 6; ++k) m.data<bfloat16>()[k] = bfloat16(static_cast<float>(k) * 0.375f - 1.0f);
  const matrix f = m.to(dtype::float32);
  const matrix back = f.to(dtype::bfloat16);
  for (std::size_t k = 0; k < 6; ++k) CHECK(back.data<bfloat16>()[k].bits() == m.data<bfloat16>()[k].bits());
  const matrix copy = matrix::copy_of(m.view().transposed());
  CHECK(copy.rows() == 3);
  CHECK(copy.value(2, 1) == m.value(1, 2));
}

TEST_CASE("converting into the same dtype without saturation copies the codes, NaN payloads included", "[matrix]") {
  matrix m(dtype::float16, 1, 3);
  m.data<float16>()[0] = float16::from_bits(0x7C01);  // a signalling NaN
  m.data<float16>()[1] = float16::from_bits(0xFC00);  // -inf
  m.data<float16>()[2] = float16::from_bits(0x0001);  // the smallest subnormal
  const matrix copy = m.to(dtype::float16);
  for (std::size_t k = 0; k < 3; ++k) CHECK(copy.data<float16>()[k].bits() == m.data<float16>()[k].bits());
  const matrix saturated = m.to(dtype::float16, rounding::nearest_even, overflow::saturate);
  CHECK(saturated.data<float16>()[1].bits() == 0xFBFF);  // -inf becomes -max under saturate
}
