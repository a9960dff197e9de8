// Which elements of an MX operand share a scale (mx/quantize.hpp), apart so that a recipe can
// name it without the quantiser.
#pragma once

namespace mixprec {

// Which elements share a scale.  block: each block of 32 its own (OCP MX).  tile: each 32 × 32
// tile (rows 32i ... 32i + 31, columns 32j ... 32j + 31; the last ones shorter) takes the scale of
// its amax, shared by the 32 blocks that cross it (Transformer Engine's MXFP8 "2D quantization",
// MXFP8BlockScaling(enable_2d_quantization=True), for weights): the rows' blocks and the columns'
// blocks of a tile then hold the same scale and the same codes, so a weight quantised along
// either axis is the same numbers.  Stored as per-block scales: the container, dequantisation and
// the product are unchanged.
enum class mx_scale_sharing { block, tile };

constexpr const char* to_string(mx_scale_sharing s) noexcept { return s == mx_scale_sharing::block ? "block" : "tile"; }

}  // namespace mixprec
