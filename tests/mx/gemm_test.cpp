// mx/gemm.hpp.  Through a naive float GEMM of the contract's signature and rounding (test helper
// only): the result equals, bit for bit, that GEMM applied chunk by chunk to the fully
// dequantised operands, and lies within the documented bound of the exact product of the
// dequantised values.  On the library's gemm (the default overload, MX panel sources): the bits
// of gemm<bfloat16, bfloat16> on the dequantised operands when they are bf16 values, of
// gemm<float, float> otherwise, within gemm's bound.
#include <mixprec/mx/gemm.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "random_floats.hpp"

namespace {

using namespace mixprec;

// The contract (DESIGN.md, "CPU matrix product"): each element's products summed in float in
// increasing k, then C = alpha * s (beta == 0) or fma(alpha, s, beta * C).
void naive_float_gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* A, std::size_t lda,
                      const float* B, std::size_t ldb, float beta, float* C, std::size_t ldc) {
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      float s = 0.0f;
      for (std::size_t k = 0; k < K; ++k) s += A[i * lda + k] * B[k * ldb + j];
      float& c = C[i * ldc + j];
      c = beta == 0.0f ? alpha * s : std::fma(alpha, s, beta * c);
    }
  }
}

// |c - exact| <= gamma_n (|alpha| Σ|â b̂| + |beta c0|) + slack for every element, exact and the
// magnitudes in double from the dequantised operands da (M × K) and db (K × N).
void require_within_bound(const std::vector<float>& c, const std::vector<float>& c0, const std::vector<float>& da,
                          const std::vector<float>& db, std::size_t M, std::size_t N, std::size_t K, float alpha,
                          float beta, std::size_t n, double slack) {
  const double u = std::ldexp(1.0, -24), gamma = static_cast<double>(n) * u / (1 - static_cast<double>(n) * u);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      double exact = static_cast<double>(beta) * c0[i * N + j], magnitude = std::fabs(exact);
      for (std::size_t k = 0; k < K; ++k) {
        const double p = static_cast<double>(alpha) * da[i * K + k] * db[k * N + j];
        exact += p;
        magnitude += std::fabs(p);
      }
      REQUIRE(std::fabs(c[i * N + j] - exact) <= gamma * magnitude + slack);
    }
  }
}

template <class TA, class TB>
void check_product(std::size_t M, std::size_t N, std::size_t K, mx_axis axis_a, mx_axis axis_b, std::size_t k_chunk,
                   float alpha, float beta) {
  const auto float_gemm = naive_float_gemm;
  const std::vector<float> a = gaussian(M * K, 1.0f, 1), b = gaussian(K * N, 1.0f, 2), c0 = gaussian(M * N, 1.0f, 3);
  const mx_matrix<TA> qa = mx_quantize<TA>(a.data(), M, K, K, axis_a);
  const mx_matrix<TB> qb = mx_quantize<TB>(b.data(), K, N, N, axis_b);
  std::vector<float> c = c0;
  mx_gemm(alpha, qa, qb, beta, c.data(), N, naive_float_gemm, k_chunk);

  // The same chunked accumulation over the fully dequantised operands.
  std::vector<float> da(M * K), db(K * N), expected = c0;
  mx_dequantize(qa, da.data(), K);
  mx_dequantize(qb, db.data(), N);
  for (std::size_t k0 = 0; k0 < K; k0 += k_chunk) {
    const std::size_t depth = std::min(k_chunk, K - k0);
    std::vector<float> pa(M * depth), pb(depth * N);
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t k = 0; k < depth; ++k) pa[i * depth + k] = da[i * K + k0 + k];
    }
    for (std::size_t k = 0; k < depth; ++k) {
      for (std::size_t j = 0; j < N; ++j) pb[k * N + j] = db[(k0 + k) * N + j];
    }
    float_gemm(M, N, depth, alpha, pa.data(), depth, pb.data(), N, k0 == 0 ? beta : 1.0f, expected.data(), N);
  }
  REQUIRE(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)) == 0);

  // Within gamma_(K + K/k_chunk + 1) of the exact product of the dequantised values.
  require_within_bound(c, c0, da, db, M, N, K, alpha, beta, K + (K + k_chunk - 1) / k_chunk + 1, 0.0);
}

}  // namespace

TEST_CASE("mx_gemm equals the float GEMM chunk by chunk on the dequantised operands, within the bound", "[mx]") {
  check_product<float8_e4m3fn, float8_e4m3fn>(17, 23, 96, mx_axis::rows, mx_axis::columns, 64, 1.0f, 0.0f);
  check_product<float8_e4m3fn, float8_e5m2>(9, 40, 200, mx_axis::rows, mx_axis::columns, 256, 0.5f, 2.0f);
  check_product<float6_e3m2fn, float4_e2m1fn>(31, 7, 77, mx_axis::rows, mx_axis::columns, 32, -1.0f, 1.0f);
  check_product<float6_e2m3fn, float8_e4m3fn>(12, 12, 130, mx_axis::columns, mx_axis::rows, 96, 1.0f, 0.0f);
  check_product<float4_e2m1fn, float4_e2m1fn>(5, 6, 1, mx_axis::rows, mx_axis::columns, 32, 1.0f, 0.0f);
  check_product<mxint8_element, float8_e4m3fn>(14, 9, 100, mx_axis::rows, mx_axis::columns, 64, 1.0f, 0.5f);
  check_product<mxint8_element, mxint8_element>(6, 33, 64, mx_axis::columns, mx_axis::rows, 32, 2.0f, 0.0f);
}

namespace {

// The default overload on gemm's driver: the bits of gemm on the dequantised operands (as bf16
// when every value is one, else as float), and gemm's bound gamma_(K + 1).
template <class TA, class TB>
void check_library_product(std::size_t M, std::size_t N, std::size_t K, mx_axis axis_a, mx_axis axis_b, float alpha,
                           float beta, float magnitude_a, bool expect_bf16, gemm_path path, std::size_t zero_rows = 0) {
  const std::vector<float> a0 = gaussian(M * K, 1.0f, 5), b = gaussian(K * N, 1.0f, 6), c0 = gaussian(M * N, 1.0f, 7);
  std::vector<float> a = a0;
  for (float& x : a) x *= magnitude_a;
  std::fill(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(zero_rows * K), 0.0f);
  if (!expect_bf16) a[1] = std::ldexp(1.0f, -136);  // with its block's scale 2^-127: e4m3's smallest subnormal
  const mx_matrix<TA> qa = mx_quantize<TA>(a.data(), M, K, K, axis_a);
  const mx_matrix<TB> qb = mx_quantize<TB>(b.data(), K, N, N, axis_b);
  gemm_options options;
  options.path = path;
  std::vector<float> c = c0;
  mx_gemm(alpha, qa, qb, beta, c.data(), N, options);

  std::vector<float> da(M * K), db(K * N), expected = c0;
  mx_dequantize(qa, da.data(), K);
  mx_dequantize(qb, db.data(), N);
  bool bf16_values = true;
  std::vector<bfloat16> ha(da.size()), hb(db.size());
  for (std::size_t i = 0; i < da.size(); ++i) bf16_values &= static_cast<float>(ha[i] = bfloat16(da[i])) == da[i];
  for (std::size_t i = 0; i < db.size(); ++i) bf16_values &= static_cast<float>(hb[i] = bfloat16(db[i])) == db[i];
  REQUIRE(bf16_values == expect_bf16);
  if (bf16_values) {
    gemm(transpose::no, transpose::no, M, N, K, alpha, ha.data(), K, hb.data(), N, beta, expected.data(), N, options);
  } else {
    gemm(transpose::no, transpose::no, M, N, K, alpha, da.data(), K, db.data(), N, beta, expected.data(), N, options);
  }
  REQUIRE(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)) == 0);

  // The same operands stored transposed (quantised as transposes with the other axis: the same
  // blocks): the same bits.
  std::vector<float> at(K * M), bt(N * K);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t k = 0; k < K; ++k) at[k * M + i] = a[i * K + k];
  }
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t j = 0; j < N; ++j) bt[j * K + k] = b[k * N + j];
  }
  const auto other = [](mx_axis axis) { return axis == mx_axis::rows ? mx_axis::columns : mx_axis::rows; };
  const mx_matrix<TA> qat = mx_quantize<TA>(at.data(), K, M, M, other(axis_a));
  const mx_matrix<TB> qbt = mx_quantize<TB>(bt.data(), N, K, K, other(axis_b));
  for (const transpose ta : {transpose::no, transpose::yes}) {
    for (const transpose tb : {transpose::no, transpose::yes}) {
      std::vector<float> ct = c0;
      mx_gemm(ta, tb, alpha, ta == transpose::yes ? qat : qa, tb == transpose::yes ? qbt : qb, beta, ct.data(), N,
              options);
      REQUIRE(std::memcmp(ct.data(), c.data(), c.size() * sizeof(float)) == 0);
    }
  }

  require_within_bound(c, c0, da, db, M, N, K, alpha, beta, K + 1, std::ldexp(1.0, -149));
}

}  // namespace

TEST_CASE("mx_gemm's default overload is gemm on the dequantised operands, bf16 kernels where exact", "[mx]") {
  for (const gemm_path path : {gemm_path::portable, best_gemm_path(), gemm_path::amx_bf16_emulated}) {
    INFO(to_string(path));
    check_library_product<float8_e4m3fn, float8_e4m3fn>(33, 29, 300, mx_axis::rows, mx_axis::columns, 1.0f, 0.0f, 1.0f,
                                                        true, path);
    check_library_product<float8_e5m2, float6_e2m3fn>(8, 64, 96, mx_axis::rows, mx_axis::columns, 0.5f, -1.0f, 1.0f,
                                                      true, path);
    check_library_product<float4_e2m1fn, float8_e4m3fn>(20, 3, 70, mx_axis::columns, mx_axis::rows, 2.0f, 1.0f, 1.0f,
                                                        true, path);
    check_library_product<float8_e4m3fn, float8_e5m2>(45, 70, 600, mx_axis::columns, mx_axis::columns, 1.0f, 0.5f, 1.0f,
                                                      true, path);
    // Zero blocks (scale code 0, as relu leaves in gradients) do not hold the bf16 kernels back.
    check_library_product<float8_e5m2, float8_e4m3fn>(40, 33, 128, mx_axis::rows, mx_axis::columns, 1.0f, 0.0f, 1.0f,
                                                      true, path, 20);
    // Row-wise blocks on both sides, over many panels of rows and depth.
    check_library_product<float8_e4m3fn, float8_e5m2>(70, 40, 1100, mx_axis::rows, mx_axis::rows, 1.0f, 0.0f, 1.0f,
                                                      true, path);
    // MXINT8 (7 significant bits, quantum 2^-6 × X: always bf16 values) with either float element.
    check_library_product<mxint8_element, float8_e4m3fn>(21, 35, 160, mx_axis::rows, mx_axis::columns, 1.0f, 0.0f, 1.0f,
                                                         true, path);
    check_library_product<float6_e3m2fn, mxint8_element>(9, 18, 70, mx_axis::columns, mx_axis::rows, 1.0f, 1.0f, 1.0f,
                                                         true, path);
    check_library_product<mxint8_element, mxint8_element>(12, 12, 96, mx_axis::rows, mx_axis::rows, 1.0f, 0.0f,
                                                          std::ldexp(1.0f, -120), true, path);
    // Values scaled by 2^-114: scales near 2^-121, values down to bf16's (and float's) subnormals,
    // still bf16 values, so still the bf16 kernels.
    check_library_product<float8_e4m3fn, float8_e4m3fn>(40, 24, 96, mx_axis::rows, mx_axis::columns, 1.0f, 0.0f,
                                                        std::ldexp(1.0f, -114), true, path);
    // A's first block scaled by 2^-127 and holding 2^-136, below bf16's 2^-133: the float kernels take it.
    check_library_product<float8_e4m3fn, float8_e4m3fn>(17, 40, 64, mx_axis::rows, mx_axis::columns, 1.0f, 0.0f,
                                                        std::ldexp(1.0f, -120), false, path);
  }
}

TEST_CASE("mx_dequantize_region is the matching part of mx_dequantize", "[mx]") {
  const std::vector<float> a = gaussian(70 * 45, 1.0f, 4);
  for (const mx_axis axis : {mx_axis::rows, mx_axis::columns}) {
    const mx_matrix<float6_e3m2fn> m = mx_quantize<float6_e3m2fn>(a.data(), 70, 45, 45, axis);
    std::vector<float> whole(70 * 45), part(20 * 30, -1.0f);
    mx_dequantize(m, whole.data(), 45);
    mx_dequantize_region(m, 33, 20, 7, 30, part.data(), 30);
    for (std::size_t r = 0; r < 20; ++r) {
      for (std::size_t c = 0; c < 30; ++c) REQUIRE(part[r * 30 + c] == whole[(33 + r) * 45 + 7 + c]);
    }
    CHECK_THROWS_WITH(mx_dequantize_region(m, 60, 20, 0, 1, part.data(), 1), Catch::Contains("outside the 70 × 45"));
  }
}

TEST_CASE("mx_gemm checks its shapes and chunk", "[mx]") {
  const mx_matrix<float8_e4m3fn> a(4, 64, mx_axis::rows), b(32, 4, mx_axis::columns), b2(64, 4, mx_axis::columns);
  std::vector<float> c(16, 1.0f);
  CHECK_THROWS_WITH(mx_gemm(1.0f, a, b, 0.0f, c.data(), 4, naive_float_gemm),
                    Catch::Contains("op(A) is 4 × 64 but op(B) is 32 × 4"));
  CHECK_THROWS_WITH(mx_gemm(transpose::yes, transpose::no, 1.0f, a, b2, 0.0f, c.data(), 4),
                    Catch::Contains("op(A) is 64 × 4 but op(B) is 64 × 4"));
  CHECK_THROWS_WITH(mx_gemm(1.0f, a, b2, 0.0f, static_cast<float*>(nullptr), 4),
                    Catch::Contains("null matrix pointer"));
  CHECK_THROWS_WITH(mx_gemm(1.0f, a, b2, 0.0f, c.data(), 4, naive_float_gemm, 48), Catch::Contains("k_chunk is 48"));
  const mx_matrix<float8_e4m3fn> empty_a(4, 0, mx_axis::rows), empty_b(0, 4, mx_axis::columns);
  mx_gemm(1.0f, empty_a, empty_b, 0.5f, c.data(), 4, naive_float_gemm);
  CHECK(c[0] == 0.5f);
}
