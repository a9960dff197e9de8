// The host-side checks of gpu::gemm (cuda/gemm.cuh and cuda/gemm_cublaslt.cuh), in plain C++ so
// that their messages are tested on any host (tests/cuda/gemm_arguments_test.cpp): sizes, leading
// dimensions, null pointers, an output overlapping an input, the grid limit; and which loader
// the kernel may use (16-byte cp.async copies need 16-byte aligned rows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "../../errors.hpp"
#include "../errors.hpp"
#include "gemm_layout.hpp"

namespace mixprec::gpu::detail {

// One operand as the checks see it: `rows` × `cols` elements of `element_size` bytes, row-major
// with leading dimension `ld`.
struct gemm_operand {
  const char* name;
  const void* data;
  std::size_t rows, cols, ld, element_size;

  std::size_t elements() const noexcept { return rows * cols; }
  // The bytes it spans: [begin, end).
  std::uintptr_t begin() const noexcept { return reinterpret_cast<std::uintptr_t>(data); }
  std::uintptr_t end() const noexcept { return begin() + ((rows - 1) * ld + cols) * element_size; }
};

inline void check_gemm_arguments(const char* function, std::size_t M, std::size_t N, std::size_t K,
                                 const gemm_operand& a, const gemm_operand& b, const gemm_operand& c) {
  const auto fail = [function](const std::string& what) {
    throw invalid_argument(std::string(function) + ": " + what);
  };
  constexpr std::size_t limit = static_cast<std::size_t>(std::numeric_limits<int>::max());
  const std::pair<const char*, std::size_t> sizes[] = {{"M", M}, {"N", N}, {"K", K}};
  for (const auto& [name, value] : sizes) {
    if (value > limit)
      fail(std::string(name) + " = " + std::to_string(value) + " exceeds the limit " + std::to_string(limit));
  }
  for (const gemm_operand* x : {&a, &b, &c}) {
    if (x->elements() == 0) continue;
    if (x->ld < x->cols) {
      fail(std::string("ld") + x->name + " = " + std::to_string(x->ld) + " is smaller than its " +
           std::to_string(x->cols) + " columns (" + x->name + " is " + std::to_string(x->rows) + " × " +
           std::to_string(x->cols) + ", row-major)");
    }
    if (x->ld > limit)
      fail(std::string("ld") + x->name + " = " + std::to_string(x->ld) + " exceeds the limit " + std::to_string(limit));
    if (x->data == nullptr) {
      fail(std::string("null ") + x->name + " pointer with " + std::to_string(x->rows) + " × " +
           std::to_string(x->cols) + " elements");
    }
  }
  if (c.elements() == 0) return;
  for (const gemm_operand* input : {&a, &b}) {
    if (input->elements() != 0 && input->begin() < c.end() && c.begin() < input->end()) {
      fail(std::string("C overlaps ") + input->name + "; the product needs a separate output");
    }
  }
  const std::size_t tiles =
      ((M + gemm_tiling::block_m - 1) / gemm_tiling::block_m) * ((N + gemm_tiling::block_n - 1) / gemm_tiling::block_n);
  if (tiles > limit) {
    fail(std::to_string(tiles) + " tiles of 128 × 128 exceed the grid limit " + std::to_string(limit));
  }
}

struct gemm_operands {
  gemm_operand a, b, c;
};

// The operands of C = alpha A B + beta C, checked (throws invalid_argument).
template <class TA, class TB>
gemm_operands checked_gemm_operands(const char* function, std::size_t M, std::size_t N, std::size_t K, const TA* A,
                                    std::size_t lda, const TB* B, std::size_t ldb, const float* C, std::size_t ldc) {
  const gemm_operands x{
      {"A", A, M, K, lda, sizeof(TA)}, {"B", B, K, N, ldb, sizeof(TB)}, {"C", C, M, N, ldc, sizeof(float)}};
  check_gemm_arguments(function, M, N, K, x.a, x.b, x.c);
  return x;
}

// Whether every 16-byte chunk the kernel copies is 16-byte aligned in memory and lies wholly
// inside or wholly outside the matrix (then cp.async copies it); otherwise the kernel copies
// element by element.  8-bit B goes through registers 8 bytes at a time, so it needs 8.
inline bool gemm_rows_aligned(const gemm_operand& x, std::size_t alignment) noexcept {
  return x.begin() % alignment == 0 && (x.ld * x.element_size) % alignment == 0 &&
         (x.cols * x.element_size) % alignment == 0;
}
inline bool gemm_vector_loads(const gemm_operand& a, const gemm_operand& b) noexcept {
  return gemm_rows_aligned(a, 16) && gemm_rows_aligned(b, b.element_size == 1 ? 8 : 16);
}

inline void require_capability(const char* function, const std::string& what, int needed, int device, int capability) {
  if (capability < needed) throw unsupported_device(device_too_old(function, what, needed, device, capability));
}

}  // namespace mixprec::gpu::detail
