// The portable float micro-kernel: float_kernel.inl on plain arrays of 4 floats, each lane one
// std::fma.  No intrinsics and no target attributes: this is what a CPU without AVX2 (or a
// non-x86 build) runs.  The compiler turns the fma loops into vector fused multiply-adds where
// the target has them (GCC 12 on x86-64 with -mfma emits packed vfmadd; NEON's fmla should do
// the same on AArch64, not tried); elsewhere std::fma is the C library's correctly rounded
// fmaf, slow but exact, so the portable path gives the same bits as every other float path.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstring>

#include "../../config.hpp"
#include "tile.hpp"

namespace mixprec::detail::gemm_portable {

struct vector_ops {
  struct type {
    float lane[4];
  };
  static constexpr std::size_t width = 4;
  static MIXPREC_SIMD_INLINE type zero() { return type{{0.0f, 0.0f, 0.0f, 0.0f}}; }
  static MIXPREC_SIMD_INLINE type set1(float x) { return type{{x, x, x, x}}; }
  static MIXPREC_SIMD_INLINE type load(const float* p) {
    type v;
    std::memcpy(v.lane, p, sizeof(v.lane));
    return v;
  }
  static MIXPREC_SIMD_INLINE void store(float* p, const type& v) { std::memcpy(p, v.lane, sizeof(v.lane)); }
  static MIXPREC_SIMD_INLINE type broadcast(const float* p) { return set1(*p); }
  static MIXPREC_SIMD_INLINE type fma(const type& a, const type& b, const type& c) {
    type r;
    for (std::size_t i = 0; i < width; ++i) r.lane[i] = std::fma(a.lane[i], b.lane[i], c.lane[i]);
    return r;
  }
  static MIXPREC_SIMD_INLINE type mul(const type& a, const type& b) {
    type r;
    for (std::size_t i = 0; i < width; ++i) r.lane[i] = a.lane[i] * b.lane[i];
    return r;
  }
};

#include "float_kernel.inl"

using tile = float_tile<4, 16>;

}  // namespace mixprec::detail::gemm_portable
