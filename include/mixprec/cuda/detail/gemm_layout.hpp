// Where every byte of the tensor-core GEMM (cuda/gemm.cuh) lives: the tiling, the shared-memory
// layouts with their XOR swizzles, which thread copies what, which address each lane gives
// ldmatrix, and which output element each accumulator register holds.  Plain __host__
// __device__ C++: the kernel computes its addresses with these functions, and
// tests/cuda/gemm_layout_test.cpp runs them through a CPU model of ldmatrix and mma.sync (their
// PTX ISA fragment layouts) to check that a block computes A·B, that every copy covers its tile
// once, and that no shared-memory access has a bank conflict.
//
// The tiling (docs/cuda.md, "GEMM"):
//   block   128 × 128 outputs, 8 warps as 2 (M) × 4 (N), each warp 64 × 32
//   stage   64 bytes of K: bfloat16/float16 32 elements (two mma.m16n8k16 steps),
//           e4m3/e5m2 64 elements (two mma.m16n8k32 steps); 3 stages in flight (48 KiB)
//   A       [row][64 bytes], K contiguous, filled by cp.async (16 bytes per thread and copy)
//   B       16-bit: [k][256 bytes], N contiguous as in memory, read with ldmatrix.trans;
//           8-bit: transposed on the way in to [n][64 bytes], K contiguous, read like A
//           (ldmatrix has no 8-bit transpose before sm_100)
#pragma once

#include <cstdint>

#include "../../config.hpp"

namespace mixprec::gpu::detail {

struct gemm_tiling {
  static constexpr int block_m = 128;
  static constexpr int block_n = 128;
  static constexpr int stage_k_bytes = 64;  // bytes of K per stage (of one row of A)
  static constexpr int step_k_bytes = 32;   // bytes of K per mma step
  static constexpr int steps_per_stage = stage_k_bytes / step_k_bytes;
  static constexpr int stages = 3;
  static constexpr int threads = 256;
  static constexpr int warps_n = 4;
  static constexpr int warp_m = 64;
  static constexpr int warp_n = 32;
  static constexpr int m_tiles = warp_m / 16;  // mma tiles per warp: 4 × 4 of 16 × 8
  static constexpr int n_tiles = warp_n / 8;
  static constexpr int a_stage_bytes = block_m * stage_k_bytes;  // 8 KiB
  static constexpr int b_stage_bytes = block_n * stage_k_bytes;  // 8 KiB, either layout
  static constexpr int stage_bytes = a_stage_bytes + b_stage_bytes;
  static constexpr int shared_bytes = stages * stage_bytes;               // 48 KiB: no opt-in needed
  static constexpr int copies_per_thread = a_stage_bytes / 16 / threads;  // 16-byte chunks, per operand
  static constexpr int raster_group = 8;  // block rows per group in the launch order (L2 reuse)
  // Two resident blocks per multiprocessor (96 KiB of shared memory, <= 128 registers a thread),
  // so that one block's loads overlap the other's mma.
  static constexpr int blocks_per_multiprocessor = 2;
};

// A tile with 64-byte rows (A, and the 8-bit B transposed): the 16-byte chunk c of row r is
// stored at chunk c ^ ((r >> 1) & 3).  Eight consecutive rows at one logical chunk then fall in
// eight different 16-byte bank groups (r & 1 picks the half of a 128-byte line, the XOR the
// chunk within it), so ldmatrix reads and the cp.async writes are conflict-free.
MIXPREC_HOST_DEVICE constexpr int kmajor_offset(int row, int byte) noexcept {
  return row * 64 + (((byte >> 4) ^ ((row >> 1) & 3)) << 4) + (byte & 15);
}

// The 16-bit B tile, [k][256 bytes]: chunk c of row k is stored at c ^ (k & 7), so eight
// consecutive k rows at one logical chunk (an ldmatrix.trans matrix) are in eight bank groups.
MIXPREC_HOST_DEVICE constexpr int nmajor_offset(int k, int byte) noexcept {
  return k * 256 + (((byte >> 4) ^ (k & 7)) << 4) + (byte & 15);
}

struct tile_chunk {
  int row;
  int chunk;  // 16-byte chunk within the row
};

// Copy `copy` (0 or 1) of thread t: consecutive threads take consecutive chunks of a row.
MIXPREC_HOST_DEVICE constexpr tile_chunk kmajor_copy_chunk(int thread, int copy) noexcept {
  const int id = thread + gemm_tiling::threads * copy;
  return {id >> 2, id & 3};
}
MIXPREC_HOST_DEVICE constexpr tile_chunk nmajor_copy_chunk(int thread, int copy) noexcept {
  const int id = thread + gemm_tiling::threads * copy;
  return {id >> 4, id & 15};
}

// The warp's corner in the block tile.
MIXPREC_HOST_DEVICE constexpr int warp_row0(int warp) noexcept {
  return (warp / gemm_tiling::warps_n) * gemm_tiling::warp_m;
}
MIXPREC_HOST_DEVICE constexpr int warp_col0(int warp) noexcept {
  return (warp % gemm_tiling::warps_n) * gemm_tiling::warp_n;
}

// ldmatrix.x4 for the A fragment of mma tile mi at k-step `step`: lane l gives row l % 8 of
// matrix l / 8, the matrices being (rows 0-7, k bytes 0-15), (rows 8-15, 0-15), (0-7, 16-31),
// (8-15, 16-31) of the 16 × 32-byte fragment: the registers a0..a3 of mma.m16n8k16 (16-bit) and
// of mma.m16n8k32 (8-bit) in order (PTX ISA, "Matrix fragments for mma.m16n8k16 / m16n8k32").
MIXPREC_HOST_DEVICE constexpr int a_fragment_offset(int row0, int mi, int step, int lane) noexcept {
  const int row = row0 + mi * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
  const int byte = step * gemm_tiling::step_k_bytes + (lane >> 4) * 16;
  return kmajor_offset(row, byte);
}

// ldmatrix.x4.trans for the B fragments of mma tiles 2p and 2p + 1 (16-bit B, [k][n]): the
// matrices are (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15); transposed,
// each gives a lane the pair (k = 2 (l % 4), +1; n = l / 4): registers b0, b1 of tile 2p, then
// b0, b1 of tile 2p + 1.
MIXPREC_HOST_DEVICE constexpr int b_fragment_offset_nmajor(int col0, int pair, int step, int lane) noexcept {
  const int k = step * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
  const int n = col0 + pair * 16 + (lane >> 4) * 8;
  return nmajor_offset(k, n * 2);
}

// ldmatrix.x4 for the B fragments of tiles 2p and 2p + 1 (8-bit B, transposed to [n][k]): the
// matrices are (n 0-7, k bytes 0-15), (n 0-7, 16-31), (n 8-15, 0-15), (n 8-15, 16-31); each
// gives lane l the four k bytes 4 (l % 4) .. +3 of column n = l / 4: b0, b1 of each tile.
MIXPREC_HOST_DEVICE constexpr int b_fragment_offset_kmajor(int col0, int pair, int step, int lane) noexcept {
  const int n = col0 + pair * 16 + (lane & 7) + (lane >> 4) * 8;
  const int byte = step * gemm_tiling::step_k_bytes + ((lane >> 3) & 1) * 16;
  return kmajor_offset(n, byte);
}

// Register r (0, 1) of the B fragment of tile ni is register b_register(ni, r) of the x4 load of
// pair ni / 2.
MIXPREC_HOST_DEVICE constexpr int b_register(int ni, int r) noexcept { return (ni & 1) * 2 + r; }

// Accumulator register 2 h + j of tile (mi, ni) holds the output at (row, col) of the warp tile
// (PTX ISA: c0, c1 at row groupID, columns 2 threadID_in_group + {0, 1}; c2, c3 eight rows below).
MIXPREC_HOST_DEVICE constexpr int accumulator_row(int mi, int lane, int h) noexcept {
  return mi * 16 + (lane >> 2) + h * 8;
}
MIXPREC_HOST_DEVICE constexpr int accumulator_col(int ni, int lane, int j) noexcept {
  return ni * 8 + (lane & 3) * 2 + j;
}

// 8-bit B: thread t loads 4 rows (k = 4 (t % 16) .. +3) × 8 bytes (n = fp8_b_col0(t) .. +7) of the
// 64 × 128-byte tile, transposes them in registers into 8 words of 4 k bytes, and stores word j
// at (n0 + j, k).  A warp covers all 16 k groups and two groups of 8 n; the second half of the
// warp stores its words in the order j ^ 1, so that in every store the two halves write rows of
// different parity (different 64-byte halves of the bank space): 32 different banks.
MIXPREC_HOST_DEVICE constexpr int fp8_b_row0(int thread) noexcept { return 4 * (thread & 15); }
MIXPREC_HOST_DEVICE constexpr int fp8_b_col0(int thread) noexcept { return 8 * (thread >> 4); }
MIXPREC_HOST_DEVICE constexpr int fp8_b_store_word(int thread, int j) noexcept { return j ^ ((thread >> 4) & 1); }

// __byte_perm on the host (CUDA Math API: byte i of the result is byte s_i of the 8-byte value
// {y, x}, s_i the i-th nibble of s).
MIXPREC_HOST_DEVICE constexpr std::uint32_t byte_permute(std::uint32_t x, std::uint32_t y, std::uint32_t s) noexcept {
  std::uint32_t result = 0;
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t pick = (s >> (4 * i)) & 7;
    const std::uint32_t byte = pick < 4 ? (x >> (8 * pick)) & 0xFF : (y >> (8 * (pick - 4))) & 0xFF;
    result |= byte << (8 * i);
  }
  return result;
}

// Four rows of four bytes to four columns: out[j] holds byte j of in[0], in[1], in[2], in[3].
template <class Permute>
MIXPREC_HOST_DEVICE constexpr void transpose_4x4_bytes(const std::uint32_t (&in)[4], std::uint32_t (&out)[4],
                                                       Permute permute) noexcept {
  const std::uint32_t low01 = permute(in[0], in[1], 0x5140u);   // in0.b0 in1.b0 in0.b1 in1.b1
  const std::uint32_t low23 = permute(in[2], in[3], 0x5140u);   // in2.b0 in3.b0 in2.b1 in3.b1
  const std::uint32_t high01 = permute(in[0], in[1], 0x7362u);  // in0.b2 in1.b2 in0.b3 in1.b3
  const std::uint32_t high23 = permute(in[2], in[3], 0x7362u);
  out[0] = permute(low01, low23, 0x5410u);
  out[1] = permute(low01, low23, 0x7632u);
  out[2] = permute(high01, high23, 0x5410u);
  out[3] = permute(high01, high23, 0x7632u);
}

// Launch order of the blocks: groups of raster_group block rows, column by column within a
// group, so that blocks running together share rows of A and columns of B in L2.
struct block_tile {
  int row;  // tile row (M / 128)
  int col;  // tile column (N / 128)
};
MIXPREC_HOST_DEVICE constexpr block_tile tile_of_block(long long block, int tiles_m, int tiles_n) noexcept {
  const long long per_group = static_cast<long long>(gemm_tiling::raster_group) * tiles_n;
  const long long group = block / per_group;
  const int first_row = static_cast<int>(group * gemm_tiling::raster_group);
  const int rows = tiles_m - first_row < gemm_tiling::raster_group ? tiles_m - first_row : gemm_tiling::raster_group;
  const long long within = block % per_group;
  return {first_row + static_cast<int>(within % rows), static_cast<int>(within / rows)};
}

}  // namespace mixprec::gpu::detail
