// Matrix product on MX operands (issue 7): C = alpha × A × B + beta × C with A (M × K) and B
// (K × N) in MX formats and fp32 accumulation, either on the library's gemm or through any float
// GEMM with the contract signature of DESIGN.md ("CPU matrix product"):
//
//   mixprec::mx_gemm(1.0f, a, b, 0.0f, c, ldc);                // mixprec::gemm's driver
//   mixprec::mx_gemm(1.0f, a, b, 0.0f, c, ldc, float_gemm);    // any other (a BLAS sgemm, ...)
//
//   void float_gemm(std::size_t M, std::size_t N, std::size_t K, float alpha, const float* A,
//                   std::size_t lda, const float* B, std::size_t ldb, float beta, float* C,
//                   std::size_t ldc);          // C = alpha * A * B + beta * C, row-major
//
// On the library's gemm, the MX matrices are its panel sources (gemm/detail/sources.hpp): the
// packing reads them block by block, each element decoded and multiplied by its block's scale
// (exact: every MX value is a float, mx/quantize.hpp), and nothing past the source changes.
// When every value of both operands is a bfloat16 value (the element types have at most 8
// significant bits, and no block's scale takes a value's last bit below bf16's 2^-133; checked
// from the scales on every call), gemm's bf16 kernels (AMX, vdpbf16ps) take the product; the
// result is then the bits of gemm<bfloat16, bfloat16> on the dequantised operands, otherwise of
// gemm<float, float> on them, with gemm's order and bound (docs/gemm.md).  An fp8 block layer so
// runs at the bf16 product's rate, with no dequantised copy of either operand.
//
// Through a float GEMM, K is taken in chunks of k_chunk (a multiple of 32, default 256): the
// chunk's columns of A and rows of B are dequantised into float panels, then float_gemm(M, N,
// k_chunk, alpha, panel_a, k_chunk, panel_b, N, beta_k, C, ldc) with beta_k = beta for the first
// chunk and 1 after it.  So C accumulates in float, chunk by chunk in increasing k, each chunk's
// sum in float_gemm's own order; with the contract's rounding (each element's products summed in
// float, then C = fma(alpha, s, beta × C)) the result is within
// gamma_(K + K / k_chunk + 1) × (|alpha| Σ|â_ik b̂_kj| + |beta C|) of the exact product of the
// dequantised operands (gamma_n = n u / (1 - n u), u = 2^-24; docs/fp8.md).  The quantisation
// error of â against the original A is separate (mx/quantize.hpp).
//
// Either operand may be blocked along either axis.  Blocks along K (A by rows, B by columns) are
// the layout a hardware MX product takes, and the one the packing reads fastest.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "../errors.hpp"
#include "../gemm/detail/sources.hpp"
#include "../gemm/gemm.hpp"
#include "../gemm/options.hpp"
#include "matrix.hpp"
#include "quantize.hpp"

namespace mixprec {
namespace detail {

// op(A)'s columns must be op(B)'s rows; C must be there for M × N elements.
template <class TA, class TB>
void check_mx_product(const mx_matrix<TA>& a, bool a_transposed, const mx_matrix<TB>& b, bool b_transposed,
                      const float* c, std::size_t ldc) {
  const std::size_t M = a_transposed ? a.cols() : a.rows(), K = a_transposed ? a.rows() : a.cols();
  const std::size_t b_rows = b_transposed ? b.cols() : b.rows(), N = b_transposed ? b.rows() : b.cols();
  if (b_rows != K) {
    throw invalid_argument("mx_gemm: op(A) is " + std::to_string(M) + " × " + std::to_string(K) + " but op(B) is " +
                           std::to_string(b_rows) + " × " + std::to_string(N) +
                           " (op(A)'s columns must be op(B)'s rows)");
  }
  check_mx_arguments("mx_gemm", c, M, N, ldc);
}

// An MX matrix as one of gemm's panel sources (rows × depth, sources.hpp): X(r, k) = m(r, k), or
// m(k, r) when `swapped` (op(A) = Aᵀ; gemm sees op(B) transposed, so B swaps unless transposed).
template <class T>
class mx_source final : public panel_source {
 public:
  mx_source(const mx_matrix<T>& m, bool swapped) : m_(m), swapped_(swapped) {
    // A block's values are multiples of 2^(q + code - 127), q the element type's smallest
    // quantum exponent: the smallest scale code among the blocks that hold a non-zero element
    // bounds every value's last bit (an all-zero block, scale code 0 under every rule, holds
    // only zeros; the NaN scale, 255, only NaN).
    constexpr int q = mx_element<T>::min_quantum_exponent;
    int smallest_code = 255;
    for (std::size_t i = 0; i < m.blocks(); ++i) {
      const int code = m.scales()[i].bits();
      if (code >= smallest_code) continue;
      unsigned char codes[mx_block_size];
      unpack_codes<mx_element<T>::bits>(m.block_data(i), mx_block_size, codes);
      bool zero = true;
      for (unsigned char c : codes) zero &= mx_element<T>::is_zero_code(c);
      if (!zero) smallest_code = code;
    }
    // bf16 holds 8 significant bits down to 2^-133.
    exact_ = mx_element<T>::significant_bits <= 8 && q + smallest_code - mx_unit_scale_code >= -133;
  }

  bool exact_in_bfloat16() const noexcept override { return exact_; }
  // No bound from the scales: one block of tiny gradients would send every tile of the product
  // to the exact float fallback, where the key of each packed panel spares all the others.
  int smallest_key() const noexcept override { return bf16_key_unsafe; }
  // Cheap along the blocks: X's rows run along m's rows when swapped.
  bool rows_contiguous() const noexcept override { return (m_.axis() == mx_axis::rows) == swapped_; }
  void read(std::size_t row, std::size_t rows, std::size_t k, std::size_t depth, float* out,
            simd_path path) const override {
    if (swapped_) {  // out[d * rows + r] = m(k + d, row + r): a region of m as it is stored
      mx_dequantize_region(m_, k, depth, row, rows, out, rows);
      return;
    }
    // m(row + r, k + d): 16 rows at a time, transposed out by k.
    constexpr std::size_t rows_at_once = 16;
    alignas(64) float lines[rows_at_once * max_read_depth];
    for (std::size_t r0 = 0; r0 < rows; r0 += rows_at_once) {
      const std::size_t count = std::min(rows_at_once, rows - r0);
      mx_dequantize_region(m_, row + r0, count, k, depth, lines, max_read_depth);
      transpose(lines, max_read_depth, count, depth, out + r0, rows, path);
    }
  }
  // bf16 codes straight from the element codes (the source's cheap order is m's own: lines of m
  // along rows or columns, blocks along each line): a table gives each code's bf16 code and the
  // block's scale 2^(s - 127) adds s - 127 to the exponent fields.  A block where that does not
  // give the float product's bits (a scaled value outside bf16's normal range, inf or NaN in it,
  // the NaN scale) is read as floats instead, as read() reads it.
  bool read_bfloat16(std::size_t row, std::size_t rows, std::size_t k, std::size_t depth, std::uint16_t* out,
                     std::size_t ld, simd_path path) const override {
    if constexpr (has_bfloat16_table<T>()) {
      if (!exact_) return false;
      const bool along_rows = rows_contiguous();  // lines are k, positions the rows; else the reverse
      const std::size_t line0 = along_rows ? k : row, lines = along_rows ? depth : rows;
      const std::size_t position0 = along_rows ? row : k, positions = along_rows ? rows : depth;
      const std::size_t first_block = position0 / mx_block_size;
      const std::size_t blocks = (position0 + positions + mx_block_size - 1) / mx_block_size - first_block;
      for (std::size_t line = 0; line < lines; ++line) {
        if (line + prefetch_distance < lines) {  // a line's blocks are adjacent (mx/matrix.hpp)
          const std::size_t ahead = m_.block_index_unchecked(line0 + line + prefetch_distance, first_block);
          prefetch_run(m_.block_data(ahead), blocks * mx_matrix<T>::block_bytes);
        }
        decode_line(line0 + line, position0, positions, out + line * ld, path);
      }
      return true;
    } else {
      return panel_source::read_bfloat16(row, rows, k, depth, out, ld, path);
    }
  }

 private:
  // out[p - position0] = bf16 code of m's element at (line, p), p in [position0, position0 + positions).
  void decode_line(std::size_t line, std::size_t position0, std::size_t positions, std::uint16_t* out,
                   simd_path path) const {
    constexpr std::size_t group = 16;  // blocks decoded at once
    alignas(64) unsigned char codes[group * mx_block_size];
    alignas(64) std::uint16_t words[group * mx_block_size];
    int deltas[group];
    bool failed[group];
    const bfloat16_table& table = bfloat16_table_of<T>();
    const std::size_t end = position0 + positions;
    for (std::size_t j0 = position0 / mx_block_size; j0 * mx_block_size < end; j0 += group) {
      std::size_t blocks = 0;
      for (; blocks < group && (j0 + blocks) * mx_block_size < end; ++blocks) {
        const std::size_t index = m_.block_index_unchecked(line, j0 + blocks);
        if constexpr (mx_element<T>::bits != 8) {
          unpack_codes<mx_element<T>::bits>(m_.block_data(index), mx_block_size, codes + blocks * mx_block_size);
        }
        // The NaN scale (code 255) as a shift no field survives (>= 255): read as floats below.
        const int scale_code = m_.scales()[index].bits();
        deltas[blocks] = scale_code == 255 ? 255 : scale_code - static_cast<int>(mx_unit_scale_code);
      }
      // A line's blocks are adjacent (mx/matrix.hpp), and 8-bit codes are stored as they are.
      const unsigned char* line_codes =
          mx_element<T>::bits == 8 ? m_.block_data(m_.block_index_unchecked(line, j0)) : codes;
      // Whole blocks go straight to out; a group with a part of a block goes through words.
      const bool whole = position0 % mx_block_size == 0 && (j0 + blocks) * mx_block_size <= end;
      std::uint16_t* const target = whole ? out + (j0 * mx_block_size - position0) : words;
      lookup_scaled_blocks(line_codes, blocks, deltas, table, target, failed, path);
      for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t start = (j0 + b) * mx_block_size;
        const std::size_t first = std::max(position0, start), last = std::min(end, start + mx_block_size);
        if (failed[b]) {
          float values[mx_block_size];
          const bool by_rows = m_.axis() == mx_axis::rows;
          mx_dequantize_region(m_, by_rows ? line : first, by_rows ? 1 : last - first, by_rows ? first : line,
                               by_rows ? last - first : 1, values, by_rows ? last - first : 1);
          for (std::size_t p = first; p < last; ++p) {
            out[p - position0] = static_cast<std::uint16_t>(bit_cast<std::uint32_t>(values[p - first]) >> 16);
          }
        } else if (!whole) {
          std::copy(words + b * mx_block_size + (first - start), words + b * mx_block_size + (last - start),
                    out + (first - position0));
        }
      }
    }
  }

  const mx_matrix<T>& m_;
  bool swapped_;
  bool exact_ = false;
};

}  // namespace detail

template <class TA, class TB, class FloatGemm,
          class = std::enable_if_t<
              std::is_invocable<FloatGemm&, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t,
                                const float*, std::size_t, float, float*, std::size_t>::value>>
void mx_gemm(float alpha, const mx_matrix<TA>& a, const mx_matrix<TB>& b, float beta, float* c, std::size_t ldc,
             FloatGemm&& float_gemm, std::size_t k_chunk = 256) {
  const std::size_t M = a.rows(), N = b.cols(), K = a.cols();
  detail::check_mx_product(a, false, b, false, c, ldc);
  if (k_chunk == 0 || k_chunk % mx_block_size != 0) {
    throw invalid_argument("mx_gemm: k_chunk is " + std::to_string(k_chunk) + ", it must be a positive multiple of 32");
  }
  if (M == 0 || N == 0) return;
  if (K == 0) {  // no chunk: C = beta * C as the contract's GEMM does (beta == 0: C is not read)
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  const std::size_t width = std::min(k_chunk, K);
  std::vector<float> panel_a(M * width), panel_b(width * N);
  for (std::size_t k0 = 0; k0 < K; k0 += k_chunk) {
    const std::size_t depth = std::min(k_chunk, K - k0);
    mx_dequantize_region(a, 0, M, k0, depth, panel_a.data(), depth);
    mx_dequantize_region(b, k0, depth, 0, N, panel_b.data(), N);
    float_gemm(M, N, depth, alpha, static_cast<const float*>(panel_a.data()), depth,
               static_cast<const float*>(panel_b.data()), N, k0 == 0 ? beta : 1.0f, c, ldc);
  }
}

// On mixprec::gemm's driver, the MX matrices its panel sources (see above): C = alpha op(A)
// op(B) + beta C, op as gemm's (transpose::yes: the matrix is stored as the operand's transpose,
// which gives the same blocks as quantising that transpose with the other axis).  Options as
// gemm's (path, threads; scale_a and scale_b multiply as there).
template <class TA, class TB>
void mx_gemm(transpose trans_a, transpose trans_b, float alpha, const mx_matrix<TA>& a, const mx_matrix<TB>& b,
             float beta, float* c, std::size_t ldc, const gemm_options& options = {}) {
  const bool a_transposed = trans_a == transpose::yes, b_transposed = trans_b == transpose::yes;
  detail::check_mx_product(a, a_transposed, b, b_transposed, c, ldc);
  const detail::mx_source<TA> sa(a, a_transposed);
  const detail::mx_source<TB> sb(b, !b_transposed);
  detail::gemm_on_sources(sa, sb, a_transposed ? a.cols() : a.rows(), b_transposed ? b.rows() : b.cols(),
                          a_transposed ? a.rows() : a.cols(), alpha, beta, c, ldc, options);
}

template <class TA, class TB>
void mx_gemm(float alpha, const mx_matrix<TA>& a, const mx_matrix<TB>& b, float beta, float* c, std::size_t ldc,
             const gemm_options& options = {}) {
  mx_gemm(transpose::no, transpose::no, alpha, a, b, beta, c, ldc, options);
}

}  // namespace mixprec
