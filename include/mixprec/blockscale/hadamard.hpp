// The 16-point random Hadamard transform (RHT) of Transformer Engine's NVFP4 recipe (issue 16,
// item 6): each chunk of 16 consecutive values x becomes x · (S · H16) / 4, H16 the Sylvester
// Hadamard matrix (H1 = [1], H2n = [[H, H], [H, −H]]), S = diag(signs), TE's fixed wgrad signs by
// default (reference_nvfp4.py: _build_hadamard_matrix, get_wgrad_sign_vector, _apply_rht).
// (S·H/4)(S·H/4)ᵀ = I, so a product of two transformed operands along the transformed dimension
// is the untransformed product, up to rounding.
//
//   std::vector<float> y(n);
//   mixprec::blockscale::hadamard16(x, n, y.data());            // n a multiple of 16
//   mixprec::blockscale::hadamard16_inverse(y.data(), n, z);     // z ≈ x
//   mixprec::blockscale::hadamard16_columns(a, rows, cols, lda, out, ldo);   // each column, 16 rows at a time
//
// The order of operations (docs/blockscale.md, "Random Hadamard transform"), per chunk:
//   1. v_i = fl(x_i · (±0.25)), the sign s_i's: the products of TE's reference x @ (S·H · 0.25),
//      whose matrix entries are ±0.25; exact unless v_i is subnormal.
//   2. four butterfly stages h = 1, 2, 4, 8: for each i with bit h clear, (v_i, v_i+h) becomes
//      (fl(v_i + v_i+h), fl(v_i − v_i+h)).  Output j is then the sum of the 16 products in a
//      balanced tree over the index order; TE's reference sums them as its matrix product does,
//      so the two can differ in the last bits where a partial sum rounds.
// The inverse, x' · (S·H/4)ᵀ = x' · H · S / 4: step 1 with sign +1, step 2, then the signs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../config.hpp"
#include "../detail/extent.hpp"
#include "../errors.hpp"

namespace mixprec::blockscale {

inline constexpr std::size_t hadamard_size = 16;

// One sign (+1 or −1) per position of a chunk: S's diagonal.
using rht_sign_vector = std::array<int, hadamard_size>;

// TE's fixed signs, shared by every layer and tensor (reference_nvfp4.py get_wgrad_sign_vector;
// the same list in jax/quantize/hadamard.py).
inline constexpr rht_sign_vector te_rht_sign_vector = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
// No signs: TE's with_random_sign_mask = false (the plain H16 / 4).
inline constexpr rht_sign_vector rht_no_signs = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

namespace detail {

// Bit i set when sign i is −1; throws when a sign is neither +1 nor −1 (S would not be orthogonal).
inline std::uint32_t rht_negative_mask(const char* function, const rht_sign_vector& signs) {
  std::uint32_t mask = 0;
  for (std::size_t i = 0; i < hadamard_size; ++i) {
    if (signs[i] != 1 && signs[i] != -1) {
      throw invalid_argument(std::string(function) + ": sign " + std::to_string(i) + " is " + std::to_string(signs[i]) +
                             "; allowed: +1 or -1");
    }
    if (signs[i] == -1) mask |= 1u << i;
  }
  return mask;
}

// fl(x · factor), never fused into the butterfly's first addition: where fl(x · 0.25) is subnormal
// it rounds, and the transform must see the rounded product, as TE's reference does.  On the host
// the product is stored and read back (GCC's default -ffp-contract=fast would fuse it on a target
// with FMA); on the device __fmul_rn, which nvcc never contracts into an FMA (its default is
// -fmad=true), so that gpu::nvfp4_quantize's transform is this one bit for bit.  The butterfly
// below adds only sums, which no compiler can contract.
MIXPREC_HOST_DEVICE inline float rht_product(float x, float factor) noexcept {
#if MIXPREC_DEVICE_PASS
  return __fmul_rn(x, factor);
#else
  volatile float kept = x * factor;
  return kept;
#endif
}

MIXPREC_HOST_DEVICE inline void rht_butterfly(float (&v)[hadamard_size]) noexcept {
  for (std::size_t h = 1; h < hadamard_size; h *= 2) {
    for (std::size_t i = 0; i < hadamard_size; ++i) {
      if ((i & h) != 0) continue;
      const float a = v[i], b = v[i + h];
      v[i] = a + b;
      v[i + h] = a - b;
    }
  }
}

// v · (S·H/4) in place; negative: rht_negative_mask's bits.
MIXPREC_HOST_DEVICE inline void rht16(float (&v)[hadamard_size], std::uint32_t negative) noexcept {
  for (std::size_t i = 0; i < hadamard_size; ++i) v[i] = rht_product(v[i], (negative >> i) & 1u ? -0.25f : 0.25f);
  rht_butterfly(v);
}

// v · (S·H/4)ᵀ = v · H · S / 4 in place.
MIXPREC_HOST_DEVICE inline void rht16_inverse(float (&v)[hadamard_size], std::uint32_t negative) noexcept {
  for (std::size_t i = 0; i < hadamard_size; ++i) v[i] = rht_product(v[i], 0.25f);
  rht_butterfly(v);
  for (std::size_t i = 0; i < hadamard_size; ++i) v[i] = (negative >> i) & 1u ? -v[i] : v[i];
}

// The transform of `width` columns at once (v[i][k]: position i of column k's chunk), with the
// operations of rht16 / rht16_inverse on each column in the same order, so the same bits, in
// loops over k that the compiler vectorises (the scalar rht16 keeps its products apart with a
// volatile store per value, which no compiler vectorises).  The products are kept apart here by
// an empty asm that takes the array's address and clobbers memory: the compiler must store them
// and read them back, so no product is fused into the butterfly's first addition.
template <std::size_t Width>
inline void rht16_columns_block(float (&v)[hadamard_size][Width], std::uint32_t negative, bool inverse) noexcept {
  for (std::size_t i = 0; i < hadamard_size; ++i) {
    const float factor = !inverse && ((negative >> i) & 1u) != 0 ? -0.25f : 0.25f;
    for (std::size_t k = 0; k < Width; ++k) v[i][k] *= factor;
  }
  asm volatile("" : : "r"(&v) : "memory");
  for (std::size_t h = 1; h < hadamard_size; h *= 2) {
    for (std::size_t i = 0; i < hadamard_size; ++i) {
      if ((i & h) != 0) continue;
      for (std::size_t k = 0; k < Width; ++k) {
        const float a = v[i][k], b = v[i + h][k];
        v[i][k] = a + b;
        v[i + h][k] = a - b;
      }
    }
  }
  if (inverse) {
    for (std::size_t i = 0; i < hadamard_size; ++i) {
      if (((negative >> i) & 1u) == 0) continue;
      for (std::size_t k = 0; k < Width; ++k) v[i][k] = -v[i][k];
    }
  }
}

// Calls visit(c, v) for every chunk of 16 rows (from r0) of columns [c, c + Width) of a, v the
// transform (rht16_columns_block) of those 16 × Width values; the last columns (cols % Width)
// one at a time with Width 1.
constexpr std::size_t rht_columns_width = 16;
template <class Visit>
inline void rht_chunk_columns(const float* a, std::size_t lda, std::size_t r0, std::size_t cols, std::uint32_t negative,
                              bool inverse, Visit&& visit) {
  std::size_t c = 0;
  for (; c + rht_columns_width <= cols; c += rht_columns_width) {
    float v[hadamard_size][rht_columns_width];
    for (std::size_t i = 0; i < hadamard_size; ++i) {
      for (std::size_t k = 0; k < rht_columns_width; ++k) v[i][k] = a[(r0 + i) * lda + c + k];
    }
    rht16_columns_block(v, negative, inverse);
    visit(c, v);
  }
  for (; c < cols; ++c) {
    float v[hadamard_size][1];
    for (std::size_t i = 0; i < hadamard_size; ++i) v[i][0] = a[(r0 + i) * lda + c];
    rht16_columns_block(v, negative, inverse);
    visit(c, v);
  }
}

inline void check_rht_vector_arguments(const char* function, const float* x, std::size_t n, const float* out) {
  if (n % hadamard_size != 0) {
    throw invalid_argument(std::string(function) + ": n = " + std::to_string(n) +
                           " is not a multiple of the transform's 16 points");
  }
  if (n == 0) return;
  if (x == nullptr || out == nullptr) {
    throw invalid_argument(std::string(function) + ": null " + (x == nullptr ? "input" : "output") +
                           " pointer with n = " + std::to_string(n));
  }
  mixprec::detail::check_array_extent(function, "input", x, n);
  mixprec::detail::check_array_extent(function, "output", out, n);
  if (x != out && x < out + n && out < x + n) {
    throw invalid_argument(std::string(function) + ": the output array overlaps the input array (n = " +
                           std::to_string(n) + ") without being it; pass the same pointer to transform in place");
  }
}

template <class Chunk>
void rht_vector(const char* function, const float* x, std::size_t n, float* out, const rht_sign_vector& signs,
                Chunk chunk) {
  check_rht_vector_arguments(function, x, n, out);
  const std::uint32_t negative = rht_negative_mask(function, signs);
  for (std::size_t base = 0; base < n; base += hadamard_size) {
    float v[hadamard_size];
    for (std::size_t i = 0; i < hadamard_size; ++i) v[i] = x[base + i];
    chunk(v, negative);
    for (std::size_t i = 0; i < hadamard_size; ++i) out[base + i] = v[i];
  }
}

}  // namespace detail

// out[16k .. 16k+15] = x[16k .. 16k+15] · (S·H16) / 4 for every chunk k; out may be x (in place).
inline void hadamard16(const float* x, std::size_t n, float* out, const rht_sign_vector& signs = te_rht_sign_vector) {
  detail::rht_vector("hadamard16", x, n, out, signs,
                     [](float(&v)[hadamard_size], std::uint32_t negative) { detail::rht16(v, negative); });
}

// The inverse (the transpose): out = x · (S·H16 / 4)ᵀ chunk by chunk; out may be x.
inline void hadamard16_inverse(const float* x, std::size_t n, float* out,
                               const rht_sign_vector& signs = te_rht_sign_vector) {
  detail::rht_vector("hadamard16_inverse", x, n, out, signs,
                     [](float(&v)[hadamard_size], std::uint32_t negative) { detail::rht16_inverse(v, negative); });
}

namespace detail {

inline void rht_columns(const char* function, bool inverse, const float* a, std::size_t rows, std::size_t cols,
                        std::size_t lda, float* out, std::size_t ldo, const rht_sign_vector& signs) {
  if (rows % hadamard_size != 0) {
    throw invalid_argument(std::string(function) + ": rows = " + std::to_string(rows) +
                           " is not a multiple of the transform's 16 points");
  }
  const std::uint32_t negative = rht_negative_mask(function, signs);
  if (rows == 0 || cols == 0) return;
  const auto check = [&](const float* p, std::size_t ld, const char* name) {
    if (p == nullptr) {
      throw invalid_argument(std::string(function) + ": null " + name + " matrix pointer for " + std::to_string(rows) +
                             " × " + std::to_string(cols) + " elements");
    }
    if (ld < cols) {
      throw invalid_argument(std::string(function) + ": the " + name + " leading dimension " + std::to_string(ld) +
                             " is smaller than the " + std::to_string(cols) + " columns");
    }
    mixprec::detail::check_matrix_extent(function, name, p, rows, cols, ld, 1, sizeof(float));
  };
  check(a, lda, "input");
  check(out, ldo, "output");
  const float* a_end = a + (rows - 1) * lda + cols;
  const float* out_end = out + (rows - 1) * ldo + cols;
  if (!(a == out && lda == ldo) && a < out_end && out < a_end) {
    throw invalid_argument(std::string(function) +
                           ": the output matrix overlaps the input matrix without being it (same pointer and leading "
                           "dimension); transform into a separate buffer or in place");
  }
  // In place (a == out) is safe: each chunk is read whole before it is written.
  for (std::size_t r0 = 0; r0 < rows; r0 += hadamard_size) {
    rht_chunk_columns(a, lda, r0, cols, negative, inverse, [&](std::size_t c, const auto& v) {
      const std::size_t width = sizeof v[0] / sizeof(float);
      for (std::size_t i = 0; i < hadamard_size; ++i) {
        for (std::size_t k = 0; k < width; ++k) out[(r0 + i) * ldo + c + k] = v[i][k];
      }
    });
  }
}

}  // namespace detail

// Transforms each column of the rows × cols matrix a (row-major, leading dimension lda) in chunks
// of 16 consecutive rows, into out (leading dimension ldo; out may be a with ldo = lda): TE's RHT
// of the column-wise copy, which runs along the last dimension of the transpose (reference_nvfp4.py
// _quantize: _apply_rht(tensor.t())).  rows must be a multiple of 16, as _apply_rht requires.
inline void hadamard16_columns(const float* a, std::size_t rows, std::size_t cols, std::size_t lda, float* out,
                               std::size_t ldo, const rht_sign_vector& signs = te_rht_sign_vector) {
  detail::rht_columns("hadamard16_columns", false, a, rows, cols, lda, out, ldo, signs);
}

// Its inverse, column by column: what maps a transformed copy's dequantised values back.
inline void hadamard16_columns_inverse(const float* a, std::size_t rows, std::size_t cols, std::size_t lda, float* out,
                                       std::size_t ldo, const rht_sign_vector& signs = te_rht_sign_vector) {
  detail::rht_columns("hadamard16_columns_inverse", true, a, rows, cols, lda, out, ldo, signs);
}

}  // namespace mixprec::blockscale
