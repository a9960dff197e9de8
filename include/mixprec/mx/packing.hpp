// Packed storage of MX element codes: Bits = 8, 6 or 4 bits per element, no padding, so a block
// of 32 elements takes 32, 24 or 16 bytes.  The OCP MX spec leaves the memory layout open
// (v1.0 §5: it defines the values, not their arrangement); mixprec packs little-endian, as
// PyTorch's float4_e2m1fn_x2 and CUDA's __nv_fp4x2 do for fp4:
//
//   element k occupies bits [k·Bits, (k+1)·Bits) of the block, where bit j is bit (j mod 8) of
//   byte j / 8, the element's lowest bit first.
//
//   fp4: byte 0 = e1 << 4 | e0                          (two elements per byte, e0 low)
//   fp6: bytes 0..2 = e0 | e1 << 6 | e2 << 12 | e3 << 18  (four elements in three bytes)
//        byte 0 = e1[1:0] e0[5:0], byte 1 = e2[3:0] e1[5:2], byte 2 = e3[5:0] e2[5:4]
//
// Codes are the elements' bit patterns (minifloat::bits()), Bits wide.  These functions take
// raw bytes (an array of 1-byte minifloats may be read and written as unsigned char: its
// object representation).
#pragma once

#include "../detail/packed_codes.hpp"  // the packing itself, shared with the narrow integers
