// What a micro-kernel is told about the C tile it computes, and the one epilogue every path
// applies.
//
// A micro-kernel sums the products of one packed A micro-panel and one packed B micro-panel
// (depth k values) into an MR x NR tile of float sums.  The sums start from +0 or continue
// partial sums of earlier K blocks (a float stored and reloaded is the same float, so a chain
// continued through memory is the same chain).  At the end the tile is either stored raw (more
// K blocks follow) or finished with the epilogue:
//
//   beta == 0:  C = factor * sum                  (C is not read: NaN/inf in C do not matter)
//   otherwise:  C = fma(factor, sum, beta * C)    (beta * C rounded once, then one fused rounding)
//
// where factor = (alpha * scale_a) * scale_b, rounded in float left to right (gemm.hpp).
#pragma once

#include <cmath>
#include <cstddef>

namespace mixprec::detail {

struct tile_io {
  const float* partial = nullptr;  // MR x NR partial sums to continue (row stride partial_ld); null: start at +0
  std::size_t partial_ld = 0;
  float* out = nullptr;  // where the tile goes (row stride out_ld); may be `partial`
  std::size_t out_ld = 0;
  bool final = false;  // apply the epilogue (else store the raw sums)
  float factor = 1.0f;
  float beta = 0.0f;
};

// The epilogue on one element, as the vector kernels compute it lane by lane.
inline float finish_element(float sum, float old, const tile_io& io) noexcept {
  if (!io.final) return sum;
  if (io.beta == 0.0f) return io.factor * sum;
  return std::fma(io.factor, sum, io.beta * old);
}

}  // namespace mixprec::detail
