// gemm/gemm.hpp: C = alpha * op(A) * op(B) + beta * C with exact products and float sums.
// Every path this machine has, every pair of float, bf16, fp16, e4m3fn, e5m2 and some exotic
// formats: each element bit for bit in the path's documented order (gemm_reference.hpp) and
// within the documented error bound of the exact result; BLAS conventions; threads; errors.
// The [.exhaustive] sweep (sizes 1-300 in every dimension) runs under the `exhaustive` label.
#include <mixprec/gemm/gemm.hpp>
#include <mixprec/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gemm_check.hpp"

using namespace mixprec;
using gemm_test::case_spec;
using gemm_test::operands;
using gemm_test::values;

namespace {

// A user-defined format wider than bf16 (10 significant bits, 6 exponent bits): the float kernels
// in sequential order, derived from its traits like any other.
using float16_e6m9 = minifloat<binary_format<6, 9, 31, special_encoding::ieee>>;

template <class F>
void for_each_main_type(F f) {
  f(float{});
  f(bfloat16{});
  f(float16{});
  f(float8_e4m3fn{});
  f(float8_e5m2{});
}

template <class TA, class TB>
void require_exact_and_bounded(const case_spec& spec) {
  const operands<TA, TB> x(spec);
  const gemm_test::check_result r = gemm_test::run_and_check(x);
  INFO(r.first_failure);
  REQUIRE(r.not_same_order == 0);
  REQUIRE(r.outside_bound == 0);
}

// Sizes around every blocking factor and tile: the AVX-512 tile is 12 x 32, AVX2 6 x 16,
// portable 4 x 16, AMX 32 x 32 with chunks of 32 k; kc is 256 (float kernels) or 512 (bf16).
const std::size_t small_shapes[][3] = {{1, 1, 1}, {13, 33, 7}, {37, 70, 300}, {5, 3, 513}, {33, 65, 31}};

}  // namespace

TEST_CASE("the contract's example: 2 x 2 bf16 product", "[gemm]") {
  const bfloat16 A[] = {bfloat16(1.f), bfloat16(2.f), bfloat16(3.f), bfloat16(4.f)};
  const bfloat16 B[] = {bfloat16(5.f), bfloat16(6.f), bfloat16(7.f), bfloat16(8.f)};
  float C[4] = {1.f, 1.f, 1.f, 1.f};
  gemm(2, 2, 2, 1.f, A, 2, B, 2, 0.f, C, 2);
  CHECK(C[0] == 19.f);
  CHECK(C[1] == 22.f);
  CHECK(C[2] == 43.f);
  CHECK(C[3] == 50.f);
}

TEST_CASE("issue 5: 8 x 4096 by 4096 x 8 bf16 ones sums to exactly 4096 on every path", "[gemm]") {
  // Eigen's bfloat16 product rounds every partial sum to bf16 and stops at 256 + ... = 1536.
  const std::vector<bfloat16> A(8 * 4096, bfloat16(1.f)), B(4096 * 8, bfloat16(1.f));
  for (gemm_path path : supported_gemm_paths()) {
    std::vector<float> C(64, -1.f);
    gemm_options options;
    options.path = path;
    gemm(transpose::no, transpose::no, 8, 8, 4096, 1.f, A.data(), 4096, B.data(), 8, 0.f, C.data(), 8, options);
    INFO(to_string(path));
    for (float c : C) REQUIRE(c == 4096.f);
  }
}

TEST_CASE("every path sums every type pair in its order, within the bound", "[gemm]") {
  for (gemm_path path : supported_gemm_paths()) {
    for (const auto& shape : small_shapes) {
      for_each_main_type([&](auto a) {
        for_each_main_type([&](auto b) {
          case_spec spec;
          spec.M = shape[0], spec.N = shape[1], spec.K = shape[2];
          spec.path = path;
          spec.kind = values::wide_range;
          spec.seed = static_cast<std::uint32_t>(shape[0] * 7 + shape[2]);
          require_exact_and_bounded<decltype(a), decltype(b)>(spec);
        });
      });
    }
  }
}

TEST_CASE("exotic formats take the path their traits allow", "[gemm]") {
  static_assert(detail::exact_in_bfloat16<float6_e2m3fn>() && detail::exact_in_bfloat16<float8_e4m3fnuz>(),
                "fp6 and fnuz fp8 values are bf16 values");
  static_assert(detail::exact_in_bfloat16<float8_e8m0fnu>() && !detail::exact_in_bfloat16<float16_e6m9>(),
                "e8m0 is (2^-127 is a bf16 subnormal); 10 significant bits are not");
  for (gemm_path path : supported_gemm_paths()) {
    case_spec spec;
    spec.M = 29, spec.N = 45, spec.K = 67, spec.path = path, spec.kind = values::wide_range;
    require_exact_and_bounded<float6_e2m3fn, float8_e4m3fnuz>(spec);
    require_exact_and_bounded<float4_e2m1fn, float8_e5m2fnuz>(spec);
    require_exact_and_bounded<float16_e6m9, float>(spec);
    spec.kind = values::gaussian;
    require_exact_and_bounded<float8_e8m0fnu, bfloat16>(spec);
  }
}

TEST_CASE("transposed operands, every combination, on every path", "[gemm]") {
  for (gemm_path path : supported_gemm_paths()) {
    for (transpose ta : {transpose::no, transpose::yes}) {
      for (transpose tb : {transpose::no, transpose::yes}) {
        case_spec spec;
        spec.M = 41, spec.N = 35, spec.K = 77, spec.trans_a = ta, spec.trans_b = tb, spec.path = path;
        spec.ld_padding = 3;  // odd leading dimensions: bf16 pairs read as words at any alignment
        require_exact_and_bounded<bfloat16, float8_e4m3fn>(spec);
        require_exact_and_bounded<float, float16>(spec);
        // bf16 on both sides: the packing moves codes (both layouts, both panel kinds)
        require_exact_and_bounded<bfloat16, bfloat16>(spec);
        require_exact_and_bounded<float8_e5m2, bfloat16>(spec);
      }
    }
  }
}

TEST_CASE("alpha, beta and the per-tensor scales", "[gemm]") {
  const float alphas[] = {0.f, 1.f, -1.f, 0.5f, 1.7f};
  const float betas[] = {0.f, 1.f, -1.f, 0.5f, 0.3f};
  const float scales[][2] = {{1.f, 1.f}, {0.25f, 8.f}, {1.3f, 0.7f}};
  for (gemm_path path : {gemm_path::portable, best_gemm_path(), gemm_path::amx_bf16_emulated}) {
    for (float alpha : alphas) {
      for (float beta : betas) {
        for (const auto& scale : scales) {
          case_spec spec;
          spec.M = 14, spec.N = 33, spec.K = 40, spec.alpha = alpha, spec.beta = beta;
          spec.scale_a = scale[0], spec.scale_b = scale[1], spec.path = path;
          require_exact_and_bounded<float8_e4m3fn, float8_e5m2>(spec);
          require_exact_and_bounded<float16, float>(spec);
        }
      }
    }
  }
}

TEST_CASE("sums continued over K blocks, with C kept apart for beta", "[gemm]") {
  // K beyond every kc (256 and 512), beta != 0: the running sums live in a separate buffer.
  for (gemm_path path : supported_gemm_paths()) {
    for (float beta : {0.f, 0.75f}) {
      case_spec spec;
      spec.M = 27, spec.N = 40, spec.K = 1100, spec.beta = beta, spec.path = path;
      spec.kind = values::cancelling;
      require_exact_and_bounded<bfloat16, bfloat16>(spec);
      require_exact_and_bounded<float, float8_e5m2>(spec);
    }
  }
}

TEST_CASE("large-range and cancelling values stay within the bound", "[gemm]") {
  for (gemm_path path : supported_gemm_paths()) {
    for (values kind : {values::gaussian, values::wide_range, values::cancelling}) {
      case_spec spec;
      spec.M = 19, spec.N = 37, spec.K = 301, spec.kind = kind, spec.path = path;
      require_exact_and_bounded<float, float>(spec);
      require_exact_and_bounded<bfloat16, float16>(spec);
      require_exact_and_bounded<float8_e5m2, float8_e5m2>(spec);
    }
  }
}

TEST_CASE("bf16 subnormals and tiny products are never flushed", "[gemm]") {
  // vdpbf16ps and TDPBF16PS flush subnormal inputs and subnormal sums; the kernels must send
  // such tiles to the exact float kernels, which sum in the same order.
  for (gemm_path path : supported_gemm_paths()) {
    case_spec spec;
    spec.M = 50, spec.N = 70, spec.K = 130, spec.kind = values::tiny, spec.path = path;
    require_exact_and_bounded<bfloat16, bfloat16>(spec);
    spec.beta = 0.5f, spec.K = 1030;
    require_exact_and_bounded<bfloat16, bfloat16>(spec);
  }
  // A bf16 subnormal (2^-130) times 2^10: the exact product 2^-120 is a normal float.
  const std::vector<bfloat16> A(3 * 64, bfloat16::from_bits(0x0008)), B(64 * 5, bfloat16(1024.f));
  for (gemm_path path : supported_gemm_paths()) {
    std::vector<float> C(15);
    gemm_options options;
    options.path = path;
    gemm(transpose::no, transpose::no, 3, 5, 64, 1.f, A.data(), 64, B.data(), 5, 0.f, C.data(), 5, options);
    INFO(to_string(path));
    for (float c : C) REQUIRE(c == std::ldexp(1.f, -114));
  }
}

TEST_CASE("running sums too small for the bf16 instructions are continued exactly", "[gemm]") {
  // K = 600 is two K blocks of the bf16 kernels (kc = 512).  Block 1: products 2^-70 * 2^-70 =
  // 2^-140 (the float kernel takes them), summing to the subnormal 512 * 2^-140 = 2^-131.
  // Block 2: products that are exactly 0 or 2^-110, which the instructions could take, but they
  // would read the running sum 2^-131 as zero (DAZ).
  const std::size_t M = 4, N = 6, K = 600;
  std::vector<bfloat16> A(M * K), B(K * N);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t k = 0; k < K; ++k) A[i * K + k] = k < 512 ? bfloat16(std::ldexp(1.f, -70)) : bfloat16(0.f);
  }
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t j = 0; j < N; ++j) B[k * N + j] = k < 512 ? bfloat16(std::ldexp(1.f, -70)) : bfloat16(1.f);
  }
  A[K - 1] = bfloat16(std::ldexp(1.f, -110));  // row 0 also gets 2^-110 * 1 at the very end
  for (gemm_path path : supported_gemm_paths()) {
    std::vector<float> C(M * N);
    gemm_options options;
    options.path = path;
    gemm(transpose::no, transpose::no, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N, options);
    INFO(to_string(path));
    for (std::size_t j = 0; j < N; ++j) REQUIRE(C[j] == std::ldexp(1.f, -110) + std::ldexp(1.f, -131));
    for (std::size_t i = 1; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) REQUIRE(C[i * N + j] == std::ldexp(1.f, -131));
    }
  }
}

TEST_CASE("inf and NaN inputs and overflowing products give the same-order sum's inf or NaN", "[gemm]") {
  for (gemm_path path : supported_gemm_paths()) {
    case_spec spec;
    spec.M = 17, spec.N = 40, spec.K = 45, spec.path = path;
    operands<bfloat16, float8_e5m2> x(spec);
    x.A[3] = bfloat16(std::numeric_limits<float>::infinity());
    x.A[spec.K * 5 + 7] = bfloat16(std::numeric_limits<float>::quiet_NaN());
    x.A[spec.K * 9 + 2] = bfloat16(std::ldexp(1.f, 127));  // times |b| >= 2: overflows float
    x.B[spec.N * 11 + 4] = float8_e5m2(-std::numeric_limits<float>::infinity());
    const gemm_test::check_result r = gemm_test::run_and_check(x);
    INFO(r.first_failure);
    REQUIRE(r.not_same_order == 0);
    REQUIRE(r.outside_bound == 0);
  }
}

TEST_CASE("the thread count does not change a bit", "[gemm][threads]") {
  const std::size_t shapes[][3] = {{203, 67, 300}, {37, 290, 520}};  // split by rows, by columns
  for (gemm_path path : supported_gemm_paths()) {
    for (const auto& shape : shapes) {
      case_spec spec;
      spec.M = shape[0], spec.N = shape[1], spec.K = shape[2], spec.path = path, spec.beta = 0.5f;
      spec.kind = values::tiny;
      const operands<bfloat16, float8_e4m3fn> x(spec);
      std::vector<float> one_thread;
      for (unsigned threads : {1u, 2u, 3u, 5u}) {
        std::vector<float> C = x.C;
        gemm_options options;
        options.threads = threads;
        options.path = path;
        gemm(transpose::no, transpose::no, spec.M, spec.N, spec.K, 1.f, x.A.data(), x.lda, x.B.data(), x.ldb, 0.5f,
             C.data(), x.ldc, options);
        if (threads == 1) {
          one_thread = C;
        } else {
          INFO(to_string(path) << " threads " << threads);
          REQUIRE(std::memcmp(C.data(), one_thread.data(), C.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

TEST_CASE("a column-major caller swaps the operands and gets the row-major bits", "[gemm]") {
  for (gemm_path path : supported_gemm_paths()) {
    case_spec spec;
    spec.M = 23, spec.N = 51, spec.K = 90, spec.path = path, spec.trans_b = transpose::yes;
    spec.scale_a = 0.5f, spec.scale_b = 3.f, spec.beta = 1.f;
    const operands<bfloat16, float> x(spec);
    std::vector<float> row_major = x.C;
    gemm_options options;
    options.path = path, options.scale_a = 0.5f, options.scale_b = 3.f;
    gemm(transpose::no, transpose::yes, spec.M, spec.N, spec.K, 1.f, x.A.data(), x.lda, x.B.data(), x.ldb, 1.f,
         row_major.data(), x.ldc, options);
    // The same arrays read column-major: A^T (K x M, ld lda), B^T is N x K, C^T is N x M.
    std::vector<float> column_major(spec.N * spec.M);
    for (std::size_t i = 0; i < spec.M; ++i) {
      for (std::size_t j = 0; j < spec.N; ++j) column_major[j * spec.M + i] = x.C[i * x.ldc + j];
    }
    gemm_options swapped = options;
    swapped.scale_a = options.scale_b, swapped.scale_b = options.scale_a;
    gemm(transpose::no, transpose::yes, spec.N, spec.M, spec.K, 1.f, x.B.data(), x.ldb, x.A.data(), x.lda, 1.f,
         column_major.data(), spec.M, swapped);
    INFO(to_string(path));
    for (std::size_t i = 0; i < spec.M; ++i) {
      for (std::size_t j = 0; j < spec.N; ++j) {
        REQUIRE(std::memcmp(&column_major[j * spec.M + i], &row_major[i * x.ldc + j], sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("BLAS conventions: beta == 0 does not read C, alpha == 0 or K == 0 does not read A or B", "[gemm]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float8_e5m2> A(6 * 4, float8_e5m2(2.f)), B(4 * 5, float8_e5m2(0.5f));
  for (gemm_path path : supported_gemm_paths()) {
    gemm_options options;
    options.path = path;
    std::vector<float> C(30, nan);
    gemm(transpose::no, transpose::no, 6, 5, 4, 1.f, A.data(), 4, B.data(), 5, 0.f, C.data(), 5, options);
    for (float c : C) REQUIRE(c == 4.f);
    // alpha == 0: C = beta * C, A and B full of NaN are not read.
    const std::vector<float> nan_a(6 * 4, nan), nan_b(4 * 5, nan);
    std::vector<float> D(30, 3.f);
    gemm(transpose::no, transpose::no, 6, 5, 4, 0.f, nan_a.data(), 4, nan_b.data(), 5, 0.5f, D.data(), 5, options);
    for (float d : D) REQUIRE(d == 1.5f);
    gemm(transpose::no, transpose::no, 6, 5, 4, 0.f, nan_a.data(), 4, nan_b.data(), 5, 0.f, C.data(), 5, options);
    for (float c : C) REQUIRE(c == 0.f);
    // K == 0: C = beta * C; with beta == 0, NaN in C becomes 0.
    std::fill(C.begin(), C.end(), nan);
    gemm(transpose::no, transpose::no, 6, 5, 0, 1.f, nan_a.data(), 4, nan_b.data(), 5, 0.f, C.data(), 5, options);
    for (float c : C) REQUIRE(c == 0.f);
    std::fill(D.begin(), D.end(), 3.f);
    gemm(transpose::no, transpose::no, 6, 5, 0, 1.f, nan_a.data(), 4, nan_b.data(), 5, -1.f, D.data(), 5, options);
    for (float d : D) REQUIRE(d == -3.f);
    // M == 0 or N == 0: nothing happens (C may then be null).
    gemm(transpose::no, transpose::no, 0, 5, 4, 1.f, static_cast<const float*>(nullptr), 4, nan_b.data(), 5, 0.f,
         static_cast<float*>(nullptr), 5, options);
    std::fill(D.begin(), D.end(), 3.f);
    gemm(transpose::no, transpose::no, 6, 0, 4, 1.f, nan_a.data(), 4, static_cast<const float*>(nullptr), 5, 0.f,
         D.data(), 5, options);
    for (float d : D) REQUIRE(d == 3.f);
  }
}

TEST_CASE("the caller's rounding mode and flush-to-zero do not change the result", "[gemm]") {
#if MIXPREC_X86_SIMD
  case_spec spec;
  spec.M = 20, spec.N = 40, spec.K = 100, spec.kind = values::tiny;
  const operands<bfloat16, float> x(spec);
  std::vector<float> expected = x.C, got = x.C;
  gemm(transpose::no, transpose::no, spec.M, spec.N, spec.K, 1.f, x.A.data(), x.lda, x.B.data(), x.ldb, 0.f,
       expected.data(), x.ldc);
  const unsigned saved = __builtin_ia32_stmxcsr();
  const unsigned flushing_toward_zero = (saved & ~0x6000u) | 0x6000u | 0x8040u;  // RZ, FTZ, DAZ
  __builtin_ia32_ldmxcsr(flushing_toward_zero);
  gemm(transpose::no, transpose::no, spec.M, spec.N, spec.K, 1.f, x.A.data(), x.lda, x.B.data(), x.ldb, 0.f, got.data(),
       x.ldc);
  const unsigned after = __builtin_ia32_stmxcsr();
  __builtin_ia32_ldmxcsr(saved);
  CHECK((after & ~0x3Fu) == (flushing_toward_zero & ~0x3Fu));  // control bits restored, flags may be raised
  REQUIRE(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
#else
  SUCCEED("MXCSR is x86 only");
#endif
}

TEST_CASE("bad arguments are invalid_argument naming the value", "[gemm]") {
  std::vector<float> A(64), B(64), C(64);
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(gemm(4, 4, 5, 1.f, A.data(), 4, B.data(), 4, 0.f, C.data(), 4),
                    Contains("lda = 4") && Contains("K = 5"));
  CHECK_THROWS_WITH(gemm(transpose::yes, transpose::no, 6, 4, 4, 1.f, A.data(), 5, B.data(), 4, 0.f, C.data(), 4),
                    Contains("lda = 5") && Contains("M = 6"));
  CHECK_THROWS_WITH(gemm(4, 6, 4, 1.f, A.data(), 4, B.data(), 4, 0.f, C.data(), 6), Contains("ldb = 4"));
  CHECK_THROWS_WITH(gemm(transpose::no, transpose::yes, 4, 4, 7, 1.f, A.data(), 7, B.data(), 6, 0.f, C.data(), 4),
                    Contains("ldb = 6") && Contains("K = 7"));
  CHECK_THROWS_WITH(gemm(4, 4, 4, 1.f, A.data(), 4, B.data(), 4, 0.f, C.data(), 3), Contains("ldc = 3"));
  CHECK_THROWS_WITH(gemm(4, 4, 4, 1.f, static_cast<const float*>(nullptr), 4, B.data(), 4, 0.f, C.data(), 4),
                    Contains("A is a null pointer") && Contains("4 x 4"));
  CHECK_THROWS_WITH(gemm(4, 4, 4, 1.f, A.data(), 4, B.data(), 4, 0.f, static_cast<float*>(nullptr), 4),
                    Contains("C is a null pointer"));
  CHECK_THROWS_AS(gemm(4, 4, 4, 1.f, A.data(), 4, B.data(), 4, 0.f, A.data() + 10, 4), invalid_argument);
  CHECK_THROWS_WITH(gemm(4, 4, 4, 1.f, A.data(), 4, C.data(), 4, 0.f, C.data() + 3, 8),
                    Contains("overlaps B") && Contains("ldc = 8"));
  // Side by side in one array (columns 0-3 are A, 4-7 are C): no element shared, accepted.
  std::vector<float> both(4 * 8, 1.f);
  gemm(4, 4, 4, 1.f, both.data(), 8, B.data(), 4, 0.f, both.data() + 4, 8);
  CHECK(both[4] == 0.f);
  // A bf16 A directly below C's last row, in one buffer: no overlap.
  std::vector<float> buffer(16 + 8);
  const auto* bf16_after = reinterpret_cast<const bfloat16*>(buffer.data() + 16);
  gemm(4, 4, 4, 1.f, bf16_after, 4, B.data(), 4, 0.f, buffer.data(), 4);
  // An extent past what a pointer offset addresses.
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  CHECK_THROWS_WITH(gemm(3, 4, 4, 1.f, A.data(), huge, B.data(), 4, 0.f, C.data(), 4), Contains("spans more than"));
  if (!gemm_path_supported(gemm_path::amx_bf16)) {
    gemm_options options;
    options.path = gemm_path::amx_bf16;
    CHECK_THROWS_WITH(
        gemm(transpose::no, transpose::no, 4, 4, 4, 1.f, A.data(), 4, B.data(), 4, 0.f, C.data(), 4, options),
        Contains("amx_bf16"));
  }
}

TEST_CASE("exhaustive: sizes 1-300 in every dimension, every pair, path, transpose and value kind",
          "[.exhaustive][gemm]") {
  std::mt19937 rng(2024);
  std::uniform_int_distribution<std::size_t> size(1, 300);
  const std::vector<gemm_path> paths = supported_gemm_paths();
  const float alphas[] = {1.f, -1.f, 0.5f, 1.7f}, betas[] = {0.f, 1.f, -0.5f, 0.3f};
  std::size_t cases = 0, elements = 0;
  double worst = 0.0;
  std::string worst_case;
  for (int round = 0; round < 4; ++round) {
    for (gemm_path path : paths) {
      for_each_main_type([&](auto a) {
        for_each_main_type([&](auto b) {
          case_spec spec;
          spec.M = size(rng), spec.N = size(rng), spec.K = size(rng);
          spec.trans_a = rng() % 2 == 0 ? transpose::no : transpose::yes;
          spec.trans_b = rng() % 2 == 0 ? transpose::no : transpose::yes;
          spec.alpha = alphas[rng() % 4], spec.beta = betas[rng() % 4];
          spec.kind = static_cast<values>(rng() % 4);
          spec.path = path, spec.seed = static_cast<std::uint32_t>(rng()), spec.ld_padding = rng() % 3;
          spec.threads = 1 + static_cast<unsigned>(rng() % 3);
          const operands<decltype(a), decltype(b)> x(spec);
          const gemm_test::check_result r = gemm_test::run_and_check(x);
          INFO(r.first_failure);
          REQUIRE(r.not_same_order == 0);
          REQUIRE(r.outside_bound == 0);
          ++cases, elements += r.elements;
          if (r.worst_ratio > worst) worst = r.worst_ratio, worst_case = spec.describe();
        });
      });
    }
  }
  WARN("exhaustive gemm sweep: " << cases << " products, " << elements
                                 << " elements, all in order and bounded; largest error / bound " << worst << " ("
                                 << worst_case << ")");
}
