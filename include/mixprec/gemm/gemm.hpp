// Matrix product with float accumulation (DESIGN.md, "CPU matrix product"):
//
//   C = alpha * op(A) * op(B) + beta * C        row-major; op(A) is M x K, op(B) is K x N, C is M x N
//
//   gemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);                        // the contract
//   gemm(transpose::no, transpose::yes, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, options);
//
// A and B: float or any mixprec type (any mix).  Every product of two elements is exact and
// every sum is a float sum: no product or partial sum is ever rounded to a narrow format.
//
// Transposes (BLAS's row-major convention): with transpose::no, A is stored as M rows of lda >= K
// elements; with transpose::yes, A is stored as its transpose, K rows of lda >= M elements.
// Likewise B: K rows of ldb >= N elements, or N rows of ldb >= K.  An MLP layer needs no copy:
//   forward  Y  = X * W^T   gemm(no,  yes, batch, out, in, 1, X, in,  W, in,  0, Y,  out)
//   dX = dY * W             gemm(no,  no,  batch, in, out, 1, dY, out, W, in, 0, dX, in)
//   dW = dY^T * X           gemm(yes, no,  out, in, batch, 1, dY, out, X, in, 0, dW, in)
// Column-major matrices: C^T = op(B)^T op(A)^T, so a column-major caller passes the operands
// swapped, gemm(tb, ta, N, M, K, alpha, B, ldb, A, lda, beta, C, ldc, options with scale_a and
// scale_b swapped), and gets the same bits as the row-major call (products commute exactly;
// the order over k is unchanged).
//
// BLAS conventions: M == 0 or N == 0 does nothing.  K == 0 or alpha == 0: C = beta * C, A and B
// are not read.  beta == 0: C is not read (NaN or inf in C do not propagate).
//
// Rounding (docs/gemm.md has the order of each path and the error bounds): each element's
// products are summed into one float (the path decides the order), s; then, with
// factor = (alpha * scale_a) * scale_b rounded in float left to right,
//   beta == 0:  C = factor * s                 (one rounding)
//   otherwise:  C = fma(factor, s, beta * C)   (beta * C rounded, then one fused rounding)
// For exact fp8 scaling pass powers of two as scales: factor and factor * s are then exact
// (barring overflow and underflow).
//
// Errors (mixprec::invalid_argument, before anything is read or written): a leading dimension
// below its row length, a null pointer for a matrix with elements, C overlapping A or B,
// a matrix too large to address, a path this machine cannot run.
//
// Paths, threads: options.hpp.  The caller's float environment (rounding mode, FTZ/DAZ) does
// not change the result: the product runs in round-to-nearest without flushing
// (detail/environment.hpp).  Per thread, gemm keeps packing buffers of a few MiB, sized by the
// blocking, never by the operands.
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <algorithm>
#include <cstddef>

#include "../bulk/simd_path.hpp"
#include "detail/arguments.hpp"
#include "detail/driver.hpp"
#include "detail/environment.hpp"
#include "detail/sources.hpp"
#include "options.hpp"

namespace mixprec {
namespace detail {

// The product on two panel sources, op(A) as M rows of depth K and op(B)^T as N rows, with the
// arguments checked: what gemm and the block-scaled products (mx/gemm.hpp) share.
template <int = 0>
void gemm_on_sources(const panel_source& a, const panel_source& b, std::size_t M, std::size_t N, std::size_t K,
                     float alpha, float beta, float* C, std::size_t ldc, const gemm_options& options) {
  const gemm_path path = resolve_gemm_path(options);
  if (M == 0 || N == 0) return;
  const float_environment environment;
  if (K == 0 || alpha == 0.0f) {  // C = beta * C; A and B are not read
    for (std::size_t i = 0; i < M; ++i) {
      float* row = C + i * ldc;
      for (std::size_t j = 0; j < N; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  const float factor = alpha * options.scale_a * options.scale_b;
  const gemm_problem problem{K, factor, beta, C, ldc, decode_path_for(path)};
  unsigned threads = options.threads;
  if (threads == 0) {  // the global setting, for products large enough to share
    const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    const double shares = work / gemm_work_per_thread;
    threads = shares < 1.0 ? 1u : static_cast<unsigned>(std::min(static_cast<double>(gemm_threads()), shares));
  }
  run_on_path(path, a, b, problem, M, N, threads);
}

}  // namespace detail

template <class TA, class TB>
void gemm(transpose trans_a, transpose trans_b, std::size_t M, std::size_t N, std::size_t K, float alpha, const TA* A,
          std::size_t lda, const TB* B, std::size_t ldb, float beta, float* C, std::size_t ldc,
          const gemm_options& options = {}) {
  static_assert(detail::is_gemm_operand<TA>() && detail::is_gemm_operand<TB>(),
                "gemm's operands are float or mixprec types (whose values float holds)");
  const bool a_plain = trans_a == transpose::no, b_plain = trans_b == transpose::no;
  detail::check_gemm_arguments({"A", "lda", A, a_plain ? M : K, a_plain ? K : M, lda, sizeof(TA)}, a_plain ? "K" : "M",
                               {"B", "ldb", B, b_plain ? K : N, b_plain ? N : K, ldb, sizeof(TB)}, b_plain ? "N" : "K",
                               {"C", "ldc", C, M, N, ldc, sizeof(float)});
  // Both operands as rows x depth: op(A) is M x K; op(B)^T is N x K.
  const detail::strided_source<TA> a(A, lda, a_plain);
  const detail::strided_source<TB> b(B, ldb, !b_plain);
  detail::gemm_on_sources(a, b, M, N, K, alpha, beta, C, ldc, options);
}

template <class TA, class TB>
void gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const TA* A, std::size_t lda, const TB* B,
          std::size_t ldb, float beta, float* C, std::size_t ldc) {
  gemm(transpose::no, transpose::no, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace mixprec
