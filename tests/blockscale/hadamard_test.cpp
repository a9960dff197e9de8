// blockscale/hadamard.hpp: TE's 16-point random Hadamard transform against a transcription of its
// reference (reference_nvfp4.py: _build_hadamard_matrix's Sylvester construction and sign matrix,
// _apply_rht's x @ (H · 1/sqrt(16))), exact identities of the matrix, the inverse, special values,
// and the transform fused into nvfp4_quantize's column-wise copy against the explicit composition.
#include <mixprec/blockscale/hadamard.hpp>
#include <mixprec/blockscale/nvfp4.hpp>
#include <mixprec/blockscale/nvfp4_gemm.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "simd_paths.hpp"

namespace {

using namespace mixprec::blockscale;

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// ---- TE's reference, transcribed (test-only; one float32 operation per step) ----

// _build_hadamard_matrix(16, with_random_sign_mask): h = [[1]], h = [[h, h], [h, -h]] until 16 × 16,
// then diag(signs) @ h (row i times sign i); _apply_rht multiplies it by 1/sqrt(16) = 0.25.
std::vector<float> reference_transform_matrix(const rht_sign_vector& signs) {
  std::vector<float> h{1.0f};
  for (std::size_t n = 1; n < 16; n *= 2) {
    std::vector<float> g(4 * n * n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        const float v = h[i * n + j];
        g[i * 2 * n + j] = v;
        g[i * 2 * n + n + j] = v;
        g[(n + i) * 2 * n + j] = v;
        g[(n + i) * 2 * n + n + j] = -v;
      }
    }
    h = g;
  }
  for (std::size_t i = 0; i < 16; ++i) {
    for (std::size_t j = 0; j < 16; ++j) h[i * 16 + j] = static_cast<float>(signs[i]) * h[i * 16 + j] * 0.25f;
  }
  return h;
}

float kept(float x) {  // a rounded product, never fused into the following addition
  volatile float k = x;
  return k;
}

// x_mat @ transform, each output the sum of its 16 products in index order (one of the orders a
// matrix product may take; torch picks its own).
std::vector<float> reference_rht(const std::vector<float>& x, const rht_sign_vector& signs) {
  const std::vector<float> t = reference_transform_matrix(signs);
  std::vector<float> out(x.size());
  for (std::size_t base = 0; base < x.size(); base += 16) {
    for (std::size_t j = 0; j < 16; ++j) {
      float acc = 0.0f;
      for (std::size_t i = 0; i < 16; ++i) acc = acc + kept(x[base + i] * t[i * 16 + j]);
      out[base + j] = acc;
    }
  }
  return out;
}

std::vector<float> rht(const std::vector<float>& x, const rht_sign_vector& signs = te_rht_sign_vector) {
  std::vector<float> out(x.size());
  hadamard16(x.data(), x.size(), out.data(), signs);
  return out;
}

// Distance in units in the last place between two finite floats (adjacent floats: 1).
std::int64_t ulps(float a, float b) {
  const auto ordered = [](float x) {
    const std::int64_t code = bits(x);
    return code & 0x8000'0000 ? -(code & 0x7FFF'FFFF) : code;
  };
  const std::int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// Deterministic on every platform (std::normal_distribution is not): sums of four uniforms on
// 24-bit grids, times 2^e.
std::vector<float> random_values(std::size_t n, std::uint32_t seed, int emin, int emax) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (float& x : v) {
    float s = -2.0f;
    for (int k = 0; k < 4; ++k) s += static_cast<float>(gen() >> 8) * 0x1p-24f;
    const int e = emin + static_cast<int>(gen() % static_cast<std::uint32_t>(emax - emin + 1));
    x = std::ldexp(s, e);
  }
  return v;
}

int sylvester_sign(std::size_t i, std::size_t j) {  // H16[i][j] = (-1)^popcount(i & j)
  int s = 1;
  for (std::size_t b = i & j; b != 0; b &= b - 1) s = -s;
  return s;
}

// ---- the transform ----

TEST_CASE("hadamard16: the transcribed reference matrix is S·H16/4 with TE's signs; e_k maps to row k", "[rht]") {
  const rht_sign_vector te = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};  // get_wgrad_sign_vector
  CHECK(te_rht_sign_vector == te);
  for (const rht_sign_vector& signs : {te_rht_sign_vector, rht_no_signs}) {
    const std::vector<float> t = reference_transform_matrix(signs);
    for (std::size_t k = 0; k < 16; ++k) {
      std::vector<float> e(16, 0.0f);
      e[k] = 1.0f;
      const std::vector<float> row = rht(e, signs);
      for (std::size_t j = 0; j < 16; ++j) {
        const float want = 0.25f * static_cast<float>(signs[k] * sylvester_sign(k, j));
        CHECK(t[k * 16 + j] == want);
        CHECK(bits(row[j]) == bits(want));
      }
      // and the inverse maps e_k to column k (the transpose's row k)
      std::vector<float> back(16);
      hadamard16_inverse(e.data(), 16, back.data(), signs);
      for (std::size_t j = 0; j < 16; ++j) CHECK(back[j] == t[j * 16 + k]);
    }
  }
}

TEST_CASE("hadamard16: (S·H/4)(S·H/4)ᵀ = I exactly in float", "[rht]") {
  const std::vector<float> t = reference_transform_matrix(te_rht_sign_vector);
  for (std::size_t i = 0; i < 16; ++i) {
    for (std::size_t j = 0; j < 16; ++j) {
      float dot = 0.0f;  // products ±1/16, partial sums multiples of 1/16 up to 1: all exact
      for (std::size_t k = 0; k < 16; ++k) dot += t[i * 16 + k] * t[j * 16 + k];
      CHECK(dot == (i == j ? 1.0f : 0.0f));
    }
  }
}

TEST_CASE("hadamard16: the sign vector maps to (4, 0, ..., 0); the all-ones vector likewise without signs", "[rht]") {
  std::vector<float> s(32);
  for (std::size_t i = 0; i < 32; ++i) s[i] = static_cast<float>(te_rht_sign_vector[i % 16]) * (i < 16 ? 1.0f : -2.0f);
  const std::vector<float> y = rht(s);
  for (std::size_t j = 0; j < 16; ++j) {
    CHECK(y[j] == (j == 0 ? 4.0f : 0.0f));
    CHECK(y[16 + j] == (j == 0 ? -8.0f : 0.0f));
  }
  const std::vector<float> ones(16, 1.0f);
  const std::vector<float> z = rht(ones, rht_no_signs);
  for (std::size_t j = 0; j < 16; ++j) CHECK(z[j] == (j == 0 ? 4.0f : 0.0f));
}

TEST_CASE("hadamard16 against the reference's matrix product: equal on exact sums, else within the two bounds",
          "[rht]") {
  // Small integers: every partial sum is exact in both orders, so the bits agree.
  std::vector<float> ints(16 * 64);
  std::mt19937 gen(5);
  for (float& x : ints) x = static_cast<float>(static_cast<int>(gen() % 33) - 16);
  const std::vector<float> a = rht(ints), b = reference_rht(ints, te_rht_sign_vector);
  for (std::size_t i = 0; i < ints.size(); ++i) CHECK(bits(a[i]) == bits(b[i]));

  // Random floats, the 16 of a chunk of one magnitude (as activations and gradients mostly are) or
  // each of its own (2^-20 .. 2^20): the butterfly sums each output's 16 exact products in a
  // balanced tree (error <= gamma_4 · Σ|products|), the transcription sequentially (gamma_15).
  struct measured {
    std::size_t differ, one_ulp, two_ulps;
    double worst;  // the largest |butterfly − reference| in units of u · Σ|products|
  };
  const auto compare = [](const std::vector<float>& x) {
    const std::vector<float> y = rht(x), r = reference_rht(x, te_rht_sign_vector);
    const double u = 0x1p-24, gamma4 = 4 * u / (1 - 4 * u), gamma15 = 15 * u / (1 - 15 * u);
    const std::vector<float> t = reference_transform_matrix(te_rht_sign_vector);
    measured m{0, 0, 0, 0.0};
    for (std::size_t base = 0; base < x.size(); base += 16) {
      for (std::size_t j = 0; j < 16; ++j) {
        double exact = 0, magnitude = 0;  // the products are exact floats; their double sum is exact here
        for (std::size_t i = 0; i < 16; ++i) {
          exact += static_cast<double>(x[base + i]) * t[i * 16 + j];
          magnitude += std::fabs(static_cast<double>(x[base + i]) * t[i * 16 + j]);
        }
        const float got = y[base + j], ref = r[base + j];
        CHECK(std::fabs(got - exact) <= gamma4 * magnitude);
        CHECK(std::fabs(ref - exact) <= gamma15 * magnitude);
        if (bits(got) != bits(ref)) {
          ++m.differ;
          m.one_ulp += ulps(got, ref) == 1;
          m.two_ulps += ulps(got, ref) == 2;
          m.worst = std::max(m.worst, std::fabs(static_cast<double>(got) - ref) / (u * magnitude));
        }
      }
    }
    return m;
  };
  // The measured result (docs/blockscale.md, "Random Hadamard transform"); the inputs are
  // deterministic, and so are these counts.
  const measured same = compare(random_values(16 * 4096, 42, 0, 0));
  INFO("one magnitude: differ " << same.differ << " of 65536, 1 ulp " << same.one_ulp << ", 2 ulps " << same.two_ulps
                                << ", worst " << std::llround(same.worst * 1000) << " mu·Σ|products|");
  CHECK(same.differ == 40728);
  CHECK(same.one_ulp == 20409);
  CHECK(same.two_ulps == 10442);
  CHECK(std::llround(same.worst * 1000) == 3733);
  const measured spread = compare(random_values(16 * 4096, 43, -20, 20));
  INFO("spread: differ " << spread.differ << " of 65536, 1 ulp " << spread.one_ulp << ", 2 ulps " << spread.two_ulps
                         << ", worst " << std::llround(spread.worst * 1000) << " mu·Σ|products|");
  CHECK(spread.differ == 34905);
  CHECK(spread.one_ulp == 26119);
  CHECK(spread.two_ulps == 5446);
  CHECK(std::llround(spread.worst * 1000) == 5720);
}

TEST_CASE("hadamard16_inverse undoes hadamard16: exactly on small integers, within 2·gamma_4·Σ|x| on floats", "[rht]") {
  std::vector<float> ints(16 * 32);
  std::mt19937 gen(9);
  for (float& x : ints) x = static_cast<float>(static_cast<int>(gen() % 257) - 128);
  for (const rht_sign_vector& signs : {te_rht_sign_vector, rht_no_signs}) {
    std::vector<float> y = rht(ints, signs);
    hadamard16_inverse(y.data(), y.size(), y.data(), signs);  // in place
    for (std::size_t i = 0; i < ints.size(); ++i) CHECK(y[i] == ints[i]);
    std::vector<float> z(ints.size());
    hadamard16_inverse(ints.data(), ints.size(), z.data(), signs);
    hadamard16(z.data(), z.size(), z.data(), signs);
    for (std::size_t i = 0; i < ints.size(); ++i) CHECK(z[i] == ints[i]);
  }
  const std::vector<float> x = random_values(16 * 1024, 7, -30, 30);
  std::vector<float> back(x.size());
  hadamard16_inverse(rht(x).data(), x.size(), back.data());
  const double u = 0x1p-24, gamma4 = 4 * u / (1 - 4 * u);
  for (std::size_t base = 0; base < x.size(); base += 16) {
    double sum = 0;
    for (std::size_t i = 0; i < 16; ++i) sum += std::fabs(static_cast<double>(x[base + i]));
    for (std::size_t i = 0; i < 16; ++i)
      CHECK(std::fabs(static_cast<double>(back[base + i]) - x[base + i]) <= 2 * gamma4 * sum);
  }
}

TEST_CASE("hadamard16: NaN and inf spread over their chunk only; overflow above FLT_MAX/4; subnormal products",
          "[rht]") {
  std::vector<float> x(48, 1.0f);
  x[3] = nan;
  x[16 + 5] = inf;
  x[32 + 2] = inf;
  x[32 + 9] = inf;
  const std::vector<float> y = rht(x);
  const std::vector<float> t = reference_transform_matrix(te_rht_sign_vector);
  std::size_t nans = 0;
  for (std::size_t j = 0; j < 16; ++j) {
    CHECK(std::isnan(y[j]));
    CHECK(y[16 + j] == (t[5 * 16 + j] > 0 ? inf : -inf));
    // two infinities: NaN where their signs in column j differ (8 of 16 columns: rows 2 and 9 are orthogonal)
    if (t[2 * 16 + j] != t[9 * 16 + j]) {
      CHECK(std::isnan(y[32 + j]));
      ++nans;
    } else {
      CHECK(y[32 + j] == (t[2 * 16 + j] > 0 ? inf : -inf));
    }
  }
  CHECK(nans == 8);

  // |x| <= FLT_MAX/4: no partial sum overflows; x = (FLT_MAX/4)·S reaches FLT_MAX exactly.
  std::vector<float> big(16), huge(16);
  for (std::size_t i = 0; i < 16; ++i) {
    big[i] = static_cast<float>(te_rht_sign_vector[i]) * (FLT_MAX / 4);
    huge[i] = static_cast<float>(te_rht_sign_vector[i]) * FLT_MAX;
  }
  const std::vector<float> b = rht(big);
  CHECK(b[0] == FLT_MAX);
  for (std::size_t j = 1; j < 16; ++j) CHECK(b[j] == 0.0f);
  // Above it partial sums overflow: the exact (4·FLT_MAX, 0, ..., 0) becomes inf and, where an inf
  // partial sum meets its opposite, NaN (output 8: inf − inf at the last stage); the reference's
  // sequential sums overflow too (to inf there).
  const std::vector<float> h = rht(huge), hr = reference_rht(huge, te_rht_sign_vector);
  CHECK(h[0] == inf);
  CHECK(std::isnan(h[8]));
  CHECK(h[1] == 0.0f);
  CHECK(hr[0] == inf);
  CHECK(hr[8] == inf);

  // fl(x · 0.25) rounds in the subnormals before the sums, as the reference's products do:
  // four 2^-149 give 0 (each product 2^-151 rounds to 0), not 4·2^-149 / 4.
  std::vector<float> tiny(16, 0.0f);
  for (std::size_t i = 0; i < 4; ++i) tiny[i] = 0x1p-149f;
  tiny[4] = 0x1p-147f;
  const std::vector<float> s = rht(tiny), sr = reference_rht(tiny, te_rht_sign_vector);
  for (std::size_t j = 0; j < 16; ++j) {
    CHECK(std::fabs(s[j]) == 0x1p-149f);
    CHECK(bits(s[j]) == bits(sr[j]));
  }
}

TEST_CASE("hadamard16_columns transforms each column 16 rows at a time; in place is the same", "[rht]") {
  const std::size_t rows = 48, cols = 5, lda = 7;
  const std::vector<float> a = random_values(rows * lda, 3, -4, 4);
  std::vector<float> out(rows * 6, -1.0f);
  hadamard16_columns(a.data(), rows, cols, lda, out.data(), 6);
  std::vector<float> in_place = a;
  hadamard16_columns(in_place.data(), rows, cols, lda, in_place.data(), lda);
  for (std::size_t c = 0; c < cols; ++c) {
    std::vector<float> column(rows);
    for (std::size_t r = 0; r < rows; ++r) column[r] = a[r * lda + c];
    const std::vector<float> want = rht(column);
    for (std::size_t r = 0; r < rows; ++r) {
      CHECK(bits(out[r * 6 + c]) == bits(want[r]));
      CHECK(bits(in_place[r * lda + c]) == bits(want[r]));
    }
  }
  for (std::size_t r = 0; r < rows; ++r) {
    CHECK(out[r * 6 + 5] == -1.0f);  // the padding column is left alone
    for (std::size_t c = cols; c < lda; ++c) CHECK(in_place[r * lda + c] == a[r * lda + c]);
  }
  std::vector<float> back(rows * cols);
  hadamard16_columns_inverse(out.data(), rows, cols, 6, back.data(), cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) CHECK(std::fabs(back[r * cols + c] - a[r * lda + c]) <= 1e-5f);
  }
}

TEST_CASE("hadamard16_columns on 16 columns at a time: the scalar transform's bits, subnormal products included",
          "[rht]") {
  // 37 columns: two blocks of 16 (the vector loops) and 5 one at a time.  fl(x · 0.25) rounds
  // in the subnormals, where a product fused into the first addition would give other bits.
  const std::size_t rows = 32, cols = 37, lda = 40;
  for (const rht_sign_vector& signs : {te_rht_sign_vector, rht_no_signs}) {
    // Rows 0-15 of every magnitude; rows 16-31 all near the subnormals, so that their sums keep
    // the bits a product rounds away.
    std::vector<float> a = random_values(rows * lda, 17, -140, 6);
    const std::vector<float> tiny = random_values(16 * lda, 19, -147, -123);
    std::copy(tiny.begin(), tiny.end(), a.begin() + 16 * lda);
    std::vector<float> out(rows * lda, -1.0f), back(rows * lda, -1.0f);
    hadamard16_columns(a.data(), rows, cols, lda, out.data(), lda, signs);
    hadamard16_columns_inverse(a.data(), rows, cols, lda, back.data(), lda, signs);
    std::size_t subnormal_products = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      std::vector<float> column(rows), inverse(rows);
      for (std::size_t r = 0; r < rows; ++r) {
        column[r] = a[r * lda + c];
        subnormal_products += std::fabs(column[r] * 0.25f) < std::numeric_limits<float>::min() && column[r] != 0;
      }
      const std::vector<float> want = rht(column, signs);
      hadamard16_inverse(column.data(), rows, inverse.data(), signs);
      for (std::size_t r = 0; r < rows; ++r) {
        INFO("row " << r << ", column " << c);
        CHECK(bits(out[r * lda + c]) == bits(want[r]));
        CHECK(bits(back[r * lda + c]) == bits(inverse[r]));
      }
    }
    CHECK(subnormal_products > 0);
  }
}

TEST_CASE("the quantiser's tile transform (kernels' rht16_columns): the scalar transform's bits on every path",
          "[rht][nvfp4]") {
  // 37 columns: whole vectors on the kernels (4, 8 or 16 wide), the rest by rht_chunk_columns;
  // rows 16-31 near the subnormals, where a product fused into the first addition gives other bits.
  const std::size_t rows = 32, cols = 37, lda = 40;
  std::vector<float> a = random_values(rows * lda, 23, -140, 6);
  const std::vector<float> tiny = random_values(16 * lda, 29, -147, -123);
  std::copy(tiny.begin(), tiny.end(), a.begin() + 16 * lda);
  for (const rht_sign_vector& signs : {te_rht_sign_vector, rht_no_signs}) {
    const std::uint32_t negative = mixprec::blockscale::detail::rht_negative_mask("test", signs);
    on_every_path_and_thread_count([&] {
      std::size_t differ = 0;
      for (std::size_t r0 = 0; r0 < rows; r0 += 16) {
        std::vector<float> out(16 * cols, -1.0f);
        mixprec::blockscale::detail::nvfp4_rht_tile(mixprec::active_simd_path(), a.data(), lda, r0, cols, negative,
                                                    out.data(), cols);
        for (std::size_t c = 0; c < cols; ++c) {
          std::vector<float> column(16);
          for (std::size_t i = 0; i < 16; ++i) column[i] = a[(r0 + i) * lda + c];
          const std::vector<float> want = rht(column, signs);
          for (std::size_t i = 0; i < 16; ++i) differ += bits(out[i * cols + c]) != bits(want[i]);
        }
      }
      CHECK(differ == 0);
    });
  }
}

TEST_CASE(
    "hadamard16: a product of two transformed operands along the transformed dimension is the untransformed "
    "one within (2·gamma_4 + gamma_4²) Σ_chunks Σ|a| Σ|b|",
    "[rht]") {
  const std::size_t m = 64, p = 3, q = 4;
  const std::vector<float> a = random_values(m * p, 11, -3, 3), b = random_values(m * q, 12, -3, 3);
  std::vector<float> ta(m * p), tb(m * q);
  hadamard16_columns(a.data(), m, p, p, ta.data(), p);
  hadamard16_columns(b.data(), m, q, q, tb.data(), q);
  const double u = 0x1p-24, gamma4 = 4 * u / (1 - 4 * u);
  for (std::size_t i = 0; i < p; ++i) {
    for (std::size_t j = 0; j < q; ++j) {
      double plain = 0, transformed = 0, bound = 0;
      for (std::size_t k = 0; k < m; ++k) {
        plain += static_cast<double>(a[k * p + i]) * b[k * q + j];
        transformed += static_cast<double>(ta[k * p + i]) * tb[k * q + j];
      }
      for (std::size_t k0 = 0; k0 < m; k0 += 16) {
        double sa = 0, sb = 0;
        for (std::size_t k = k0; k < k0 + 16; ++k) {
          sa += std::fabs(static_cast<double>(a[k * p + i]));
          sb += std::fabs(static_cast<double>(b[k * q + j]));
        }
        bound += sa * sb;
      }
      CHECK(std::fabs(transformed - plain) <= (2 * gamma4 + gamma4 * gamma4) * bound * (1 + 1e-9));
    }
  }
}

// ---- fused into NVFP4 ----

// Rows scaled by 2^-30 .. 2^30, zeros, and one outlier per column.
std::vector<float> nvfp4_input(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::vector<float> a = random_values(rows * cols, seed, 0, 0);
  std::mt19937 gen(seed + 1);
  for (std::size_t r = 0; r < rows; ++r) {
    const int e = static_cast<int>(gen() % 61) - 30;
    for (std::size_t c = 0; c < cols; ++c) {
      float& x = a[r * cols + c];
      x = gen() % 7 == 0 ? 0.0f : std::ldexp(x, e);
    }
  }
  for (std::size_t c = 0; c < cols && rows > 0; ++c) a[(gen() % rows) * cols + c] *= 1024.0f;
  return a;
}

// Codes, scales and per-tensor numbers of two copies, bit for bit.
std::size_t copy_differences(const nvfp4_matrix& x, const nvfp4_matrix& y) {
  std::size_t diff = 0;
  if (x.rows() != y.rows() || x.cols() != y.cols() || x.columnwise() != y.columnwise()) return 1;
  diff += bits(x.amax()) != bits(y.amax());
  diff += bits(x.tensor_scale()) != bits(y.tensor_scale());
  diff += bits(x.decode_scale()) != bits(y.decode_scale());
  for (std::size_t l = 0; l < x.lines(); ++l) {
    for (std::size_t j = 0; j < x.blocks_per_line(); ++j) diff += x.scale(l, j).bits() != y.scale(l, j).bits();
  }
  for (std::size_t r = 0; r < x.rows(); ++r) {
    for (std::size_t c = 0; c < x.cols(); ++c) diff += x.code(r, c) != y.code(r, c);
  }
  return diff;
}

TEST_CASE("nvfp4 columnwise_rht equals quantising the explicitly transformed matrix; the rowwise copy is unchanged",
          "[rht][nvfp4]") {
  struct shape {
    std::size_t rows, cols;
  };
  for (const shape s : {shape{48, 50}, shape{32, 17}, shape{16, 1}, shape{64, 48}, shape{0, 3}, shape{16, 0}}) {
    for (const nvfp4_rule rule : {nvfp4_rule::transformer_engine, nvfp4_rule::torchao}) {
      for (const nvfp4_tile tile : {nvfp4_tile::row_16, nvfp4_tile::square_16}) {
        for (const bool stochastic : {false, true}) {
          for (const rht_sign_vector& signs : {te_rht_sign_vector, rht_no_signs}) {
            const std::vector<float> a = nvfp4_input(s.rows, s.cols, static_cast<std::uint32_t>(s.rows * 131 + s.cols));
            std::vector<float> t(a.size());
            hadamard16_columns(a.data(), s.rows, s.cols, s.cols, t.data(), s.cols, signs);
            nvfp4_options o;
            o.rule = rule;
            o.tile = tile;
            o.columnwise = true;
            o.stochastic = {stochastic, 1234, 5, 6, 8};
            const nvfp4_tensor plain = nvfp4_quantize(a.data(), s.rows, s.cols, s.cols, o);
            const nvfp4_tensor explicit_rht = nvfp4_quantize(t.data(), s.rows, s.cols, s.cols, o);
            o.columnwise_rht = {true, signs};
            const nvfp4_tensor fused = nvfp4_quantize(a.data(), s.rows, s.cols, s.cols, o);
            INFO(s.rows << " × " << s.cols << " " << to_string(rule)
                        << (tile == nvfp4_tile::square_16 ? " 16×16" : " 1×16") << (stochastic ? " SR" : " RN")
                        << (signs == te_rht_sign_vector ? " TE signs" : " no signs"));
            CHECK(copy_differences(*fused.columnwise, *explicit_rht.columnwise) == 0);
            CHECK(copy_differences(*fused.rowwise, *plain.rowwise) == 0);
            CHECK(fused.columnwise->hadamard_transformed());
            CHECK_FALSE(fused.rowwise->hadamard_transformed());
            CHECK_FALSE(explicit_rht.columnwise->hadamard_transformed());
            // the transformed copy has its own amax, taken after the transform
            float amax = 0.0f;
            for (const float v : t) amax = std::max(amax, std::fabs(v));
            CHECK(fused.columnwise->amax() == amax);
            // nvfp4_dequantize returns the transformed matrix's values
            std::vector<float> out(a.size()), want(a.size());
            if (!a.empty()) {
              nvfp4_dequantize(*fused.columnwise, out.data(), s.cols);
              nvfp4_dequantize(*explicit_rht.columnwise, want.data(), s.cols);
            }
            std::size_t differ = 0;
            for (std::size_t i = 0; i < a.size(); ++i) differ += bits(out[i]) != bits(want[i]);
            CHECK(differ == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("nvfp4 columnwise_rht: NaN and inf inputs give the explicit composition's copy; ignored without that copy",
          "[rht][nvfp4]") {
  // One inf per chunk (amax inf), two in one chunk (NaN outputs: amax NaN), a NaN.
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<float> a = nvfp4_input(32, 20, 77);
    a[5 * 20 + 3] = inf;
    a[20 * 20 + 11] = -inf;
    if (variant == 1) a[9 * 20 + 3] = inf;
    if (variant == 2) a[31 * 20 + 19] = nan;
    std::vector<float> t(a.size());
    hadamard16_columns(a.data(), 32, 20, 20, t.data(), 20);
    for (const nvfp4_rule rule : {nvfp4_rule::transformer_engine, nvfp4_rule::torchao}) {
      nvfp4_options o;
      o.rule = rule;
      o.rowwise = false;
      o.columnwise = true;
      const nvfp4_tensor explicit_rht = nvfp4_quantize(t.data(), 32, 20, 20, o);
      o.columnwise_rht.enabled = true;
      const nvfp4_tensor fused = nvfp4_quantize(a.data(), 32, 20, 20, o);
      INFO("variant " << variant << " " << to_string(rule));
      CHECK(copy_differences(*fused.columnwise, *explicit_rht.columnwise) == 0);
      CHECK(std::isnan(fused.columnwise->amax()) == (variant != 0));
      if (variant == 0) CHECK(fused.columnwise->amax() == inf);
    }
  }
  // Without the column-wise copy the option changes nothing, whatever the rows.
  const std::vector<float> b = nvfp4_input(17, 16, 3);
  nvfp4_options o;
  o.columnwise_rht.enabled = true;
  const nvfp4_tensor with = nvfp4_quantize(b.data(), 17, 16, 16, o);
  const nvfp4_tensor without = nvfp4_quantize(b.data(), 17, 16, 16);
  CHECK(copy_differences(*with.rowwise, *without.rowwise) == 0);
  CHECK_FALSE(with.columnwise.has_value());
}

TEST_CASE("nvfp4 wgrad GEMM on two transformed column-wise copies equals the GEMM of the explicit composition",
          "[rht][nvfp4]") {
  // dW = dYᵀ · X over M = 48 tokens: A = dY's column-wise copy transposed, B = X's column-wise copy.
  const std::size_t m = 48, n = 24, k = 40;
  const std::vector<float> dy = nvfp4_input(m, n, 21), x = nvfp4_input(m, k, 22);
  std::vector<float> tdy(dy.size()), tx(x.size());
  hadamard16_columns(dy.data(), m, n, n, tdy.data(), n);
  hadamard16_columns(x.data(), m, k, k, tx.data(), k);
  nvfp4_options o;
  o.rowwise = false;
  o.columnwise = true;
  const nvfp4_tensor qdy_plain = nvfp4_quantize(dy.data(), m, n, n, o);
  const nvfp4_tensor qdy_explicit = nvfp4_quantize(tdy.data(), m, n, n, o);
  const nvfp4_tensor qx_explicit = nvfp4_quantize(tx.data(), m, k, k, o);
  o.columnwise_rht.enabled = true;
  const nvfp4_tensor qdy = nvfp4_quantize(dy.data(), m, n, n, o), qx = nvfp4_quantize(x.data(), m, k, k, o);
  const nvfp4_matrix a = qdy.columnwise->transposed();
  CHECK(a.rows() == n);
  CHECK(a.cols() == m);
  CHECK_FALSE(a.columnwise());
  CHECK(a.hadamard_transformed());
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < m; ++c) CHECK(bits(a.value(r, c)) == bits(qdy.columnwise->value(c, r)));
  }
  std::vector<float> fused(n * k), composed(n * k);
  nvfp4_gemm(1.0f, a, *qx.columnwise, 0.0f, fused.data(), k);
  nvfp4_gemm(1.0f, qdy_explicit.columnwise->transposed(), *qx_explicit.columnwise, 0.0f, composed.data(), k);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < fused.size(); ++i) differ += bits(fused[i]) != bits(composed[i]);
  CHECK(differ == 0);
  // One operand transformed and the other not is refused.
  CHECK_THROWS_AS(nvfp4_gemm(1.0f, qdy_plain.columnwise->transposed(), *qx.columnwise, 0.0f, fused.data(), k),
                  mixprec::invalid_argument);
  CHECK_THROWS_WITH(nvfp4_gemm(1.0f, qdy_plain.columnwise->transposed(), *qx.columnwise, 0.0f, fused.data(), k),
                    Catch::Contains("nvfp4_gemm: A's copy is not Hadamard-transformed and B's copy is (both or "
                                    "neither must be)"));
}

// ---- errors ----

TEST_CASE("hadamard16 and the fused option reject bad arguments, naming the value and the limit", "[rht]") {
  std::vector<float> x(64, 1.0f), y(64);
  CHECK_THROWS_AS(hadamard16(x.data(), 17, y.data()), mixprec::invalid_argument);
  CHECK_THROWS_WITH(hadamard16(x.data(), 17, y.data()),
                    Catch::Contains("hadamard16: n = 17 is not a multiple of the transform's 16 points"));
  CHECK_THROWS_WITH(hadamard16_inverse(x.data(), 40, y.data()),
                    Catch::Contains("hadamard16_inverse: n = 40 is not a multiple of the transform's 16 points"));
  rht_sign_vector bad = te_rht_sign_vector;
  bad[4] = 0;
  CHECK_THROWS_WITH(hadamard16(x.data(), 16, y.data(), bad),
                    Catch::Contains("hadamard16: sign 4 is 0; allowed: +1 or -1"));
  CHECK_THROWS_WITH(hadamard16(x.data(), 32, x.data() + 8),
                    Catch::Contains("hadamard16: the output array overlaps the input array (n = 32) without being it"));
  CHECK_THROWS_WITH(hadamard16(nullptr, 16, y.data()), Catch::Contains("hadamard16: null input pointer with n = 16"));
  hadamard16(nullptr, 0, nullptr);  // nothing to do
  CHECK_THROWS_WITH(hadamard16_columns(x.data(), 17, 2, 2, y.data(), 2),
                    Catch::Contains("hadamard16_columns: rows = 17 is not a multiple of the transform's 16 points"));
  CHECK_THROWS_WITH(hadamard16_columns(x.data(), 16, 4, 3, y.data(), 4),
                    Catch::Contains("hadamard16_columns: the input leading dimension 3 is smaller than the 4 columns"));
  CHECK_THROWS_WITH(hadamard16_columns(x.data(), 16, 2, 2, nullptr, 2),
                    Catch::Contains("hadamard16_columns: null output matrix pointer for 16 × 2 elements"));
  CHECK_THROWS_WITH(
      hadamard16_columns(x.data(), 16, 2, 3, x.data() + 1, 3),
      Catch::Contains("hadamard16_columns: the output matrix overlaps the input matrix without being it"));
  CHECK_THROWS_WITH(hadamard16_columns_inverse(x.data(), 16, 2, 2, y.data(), 2, bad),
                    Catch::Contains("hadamard16_columns_inverse: sign 4 is 0; allowed: +1 or -1"));

  nvfp4_options o;
  o.columnwise = true;
  o.columnwise_rht.enabled = true;
  CHECK_THROWS_AS(nvfp4_quantize(x.data(), 17, 2, 2, o), mixprec::invalid_argument);
  CHECK_THROWS_WITH(nvfp4_quantize(x.data(), 17, 2, 2, o),
                    Catch::Contains("nvfp4_quantize: columnwise_rht transforms each column in chunks of 16 rows; "
                                    "rows = 17 is not a multiple of 16"));
  o.columnwise_rht.signs[15] = 2;
  CHECK_THROWS_WITH(nvfp4_quantize(x.data(), 16, 2, 2, o),
                    Catch::Contains("nvfp4_quantize: sign 15 is 2; allowed: +1 or -1"));
}

}  // namespace
