// cuda/detail/gemm_layout.hpp, on a CPU model of the warp instructions the GEMM kernel uses:
//
//   ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16: lane i gives the address of row i % 8 of
//     matrix i / 8 (16 bytes, eight 16-bit elements); lane l receives in register j the elements
//     (row l / 4, columns 2 (l % 4), +1) of matrix j, or with .trans (rows 2 (l % 4), +1;
//     column l / 4), the first in the low half
//   mma.sync.aligned.m16n8k16.row.col (16-bit) and m16n8k32 (8-bit): the fragment layouts of the
//     PTX ISA ("Matrix fragments for mma.m16n8k16 with floating point type", "... m16n8k32")
//
// With these, one block's worth of copies, fragment loads and mma steps computes the block's
// tile of A·B exactly (small integers, so no rounding), for the 16-bit and the 8-bit layouts;
// every copy covers its tile once; and no shared-memory access has a bank conflict.  This checks
// the kernel's index arithmetic against the PTX ISA's description, not against the hardware.
#include <mixprec/cuda/detail/gemm_layout.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <vector>

using namespace mixprec::gpu::detail;
using tiling = gemm_tiling;

namespace {

// Plain arrays indexed by int, as in the kernel.
struct registers {
  std::uint32_t lane[32][4];  // [lane][register]
};
struct b_registers {
  std::uint32_t lane[32][2];
};
struct accumulators {
  double lane[32][4];
};
struct lane_addresses {
  int lane[32];
};
struct shared_memory {
  std::uint8_t bytes[tiling::a_stage_bytes];
};
static_assert(tiling::a_stage_bytes == tiling::b_stage_bytes, "one buffer type serves both operands");

std::uint16_t load16(const shared_memory& smem, int offset) {
  return static_cast<std::uint16_t>(smem.bytes[offset] | (smem.bytes[offset + 1] << 8));
}

registers ldmatrix_x4(const shared_memory& smem, const lane_addresses& row_address, bool trans) {
  registers out{};
  for (int j = 0; j < 4; ++j) {
    for (int l = 0; l < 32; ++l) {
      const int r0 = trans ? 2 * (l % 4) : l / 4, c0 = trans ? l / 4 : 2 * (l % 4);
      const int r1 = trans ? r0 + 1 : r0, c1 = trans ? c0 : c0 + 1;
      const std::uint16_t e0 = load16(smem, row_address.lane[8 * j + r0] + 2 * c0);
      const std::uint16_t e1 = load16(smem, row_address.lane[8 * j + r1] + 2 * c1);
      out.lane[l][j] = e0 | (static_cast<std::uint32_t>(e1) << 16);
    }
  }
  return out;
}

// mma.m16n8k16 (16-bit elements read as unsigned integers) or m16n8k32 (bytes): d += a · b.
void mma(bool eight_bit, const registers& a, const b_registers& b, accumulators& c) {
  const int k_size = eight_bit ? 32 : 16;
  double A[16][32] = {}, B[32][8] = {};
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    for (int r = 0; r < 4; ++r) {
      const int row = g + (r & 1) * 8;
      if (eight_bit) {
        for (int e = 0; e < 4; ++e) A[row][(r >> 1) * 16 + 4 * t + e] = (a.lane[l][r] >> (8 * e)) & 0xFF;
      } else {
        for (int e = 0; e < 2; ++e) A[row][(r >> 1) * 8 + 2 * t + e] = (a.lane[l][r] >> (16 * e)) & 0xFFFF;
      }
    }
    for (int r = 0; r < 2; ++r) {
      if (eight_bit) {
        for (int e = 0; e < 4; ++e) B[r * 16 + 4 * t + e][g] = (b.lane[l][r] >> (8 * e)) & 0xFF;
      } else {
        for (int e = 0; e < 2; ++e) B[r * 8 + 2 * t + e][g] = (b.lane[l][r] >> (16 * e)) & 0xFFFF;
      }
    }
  }
  for (int l = 0; l < 32; ++l) {
    const int g = l >> 2, t = l & 3;
    for (int r = 0; r < 4; ++r) {
      const int row = g + (r >> 1) * 8, col = 2 * t + (r & 1);
      for (int k = 0; k < k_size; ++k) c.lane[l][r] += A[row][k] * B[k][col];
    }
  }
}

// One block tile: A is 128 × (64 bytes), B is (64 bytes of K) × 128; element values are small
// integers.  Returns the block's 128 × 128 outputs as the accumulators map them.
std::vector<double> simulate_block(bool eight_bit, const std::vector<std::uint32_t>& a_values,
                                   const std::vector<std::uint32_t>& b_values) {
  const int element = eight_bit ? 1 : 2, k_elements = tiling::stage_k_bytes / element;
  auto a_smem = std::make_unique<shared_memory>(), b_smem = std::make_unique<shared_memory>();
  std::memset(a_smem->bytes, 0xEE, sizeof a_smem->bytes);
  std::memset(b_smem->bytes, 0xEE, sizeof b_smem->bytes);
  const auto put = [element](shared_memory& smem, int offset, std::uint32_t v) {
    for (int e = 0; e < element; ++e) smem.bytes[offset + e] = static_cast<std::uint8_t>(v >> (8 * e));
  };
  const auto value = [](const std::vector<std::uint32_t>& values, int i) {
    return values[static_cast<std::size_t>(i)];
  };
  // A: the cp.async copies, chunk by chunk.
  for (int t = 0; t < tiling::threads; ++t) {
    for (int copy = 0; copy < tiling::copies_per_thread; ++copy) {
      const tile_chunk c = kmajor_copy_chunk(t, copy);
      for (int byte = 0; byte < 16; byte += element) {
        const int k = (c.chunk * 16 + byte) / element;
        put(*a_smem, kmajor_offset(c.row, c.chunk * 16 + byte), value(a_values, c.row * k_elements + k));
      }
    }
  }
  if (!eight_bit) {
    for (int t = 0; t < tiling::threads; ++t) {
      for (int copy = 0; copy < tiling::copies_per_thread; ++copy) {
        const tile_chunk c = nmajor_copy_chunk(t, copy);
        for (int byte = 0; byte < 16; byte += 2) {
          const int n = (c.chunk * 16 + byte) / 2;
          put(*b_smem, nmajor_offset(c.row, c.chunk * 16 + byte), value(b_values, c.row * tiling::block_n + n));
        }
      }
    }
  } else {
    // The register transpose of the 8-bit B: four rows of eight bytes per thread.
    for (int t = 0; t < tiling::threads; ++t) {
      const int k0 = fp8_b_row0(t), n0 = fp8_b_col0(t);
      std::uint32_t words[8];
      for (int half = 0; half < 2; ++half) {
        std::uint32_t rows[4], columns[4];
        for (int i = 0; i < 4; ++i) {
          rows[i] = 0;
          for (int e = 0; e < 4; ++e)
            rows[i] |= value(b_values, (k0 + i) * tiling::block_n + n0 + 4 * half + e) << (8 * e);
        }
        transpose_4x4_bytes(rows, columns, byte_permute);
        for (int j = 0; j < 4; ++j) words[4 * half + j] = columns[j];
      }
      for (int j = 0; j < 8; ++j) {
        const int w = fp8_b_store_word(t, j);
        std::memcpy(&b_smem->bytes[kmajor_offset(n0 + w, k0)], &words[w], 4);
      }
    }
  }
  std::vector<double> out(static_cast<std::size_t>(tiling::block_m * tiling::block_n), -1);
  for (int warp = 0; warp < tiling::threads / 32; ++warp) {
    accumulators acc[tiling::m_tiles][tiling::n_tiles] = {};
    for (int step = 0; step < tiling::steps_per_stage; ++step) {
      registers a_frag[tiling::m_tiles], b_pairs[tiling::n_tiles / 2];
      for (int mi = 0; mi < tiling::m_tiles; ++mi) {
        lane_addresses address{};
        for (int l = 0; l < 32; ++l) address.lane[l] = a_fragment_offset(warp_row0(warp), mi, step, l);
        a_frag[mi] = ldmatrix_x4(*a_smem, address, false);
      }
      for (int p = 0; p < tiling::n_tiles / 2; ++p) {
        lane_addresses address{};
        for (int l = 0; l < 32; ++l) {
          address.lane[l] = eight_bit ? b_fragment_offset_kmajor(warp_col0(warp), p, step, l)
                                      : b_fragment_offset_nmajor(warp_col0(warp), p, step, l);
        }
        b_pairs[p] = ldmatrix_x4(*b_smem, address, !eight_bit);
      }
      for (int mi = 0; mi < tiling::m_tiles; ++mi) {
        for (int ni = 0; ni < tiling::n_tiles; ++ni) {
          b_registers b{};
          for (int l = 0; l < 32; ++l) {
            for (int r = 0; r < 2; ++r) b.lane[l][r] = b_pairs[ni / 2].lane[l][b_register(ni, r)];
          }
          mma(eight_bit, a_frag[mi], b, acc[mi][ni]);
        }
      }
    }
    for (int mi = 0; mi < tiling::m_tiles; ++mi) {
      for (int ni = 0; ni < tiling::n_tiles; ++ni) {
        for (int l = 0; l < 32; ++l) {
          for (int h = 0; h < 2; ++h) {
            for (int j = 0; j < 2; ++j) {
              const int row = warp_row0(warp) + accumulator_row(mi, l, h);
              const int col = warp_col0(warp) + accumulator_col(ni, l, j);
              double& slot = out[static_cast<std::size_t>(row * tiling::block_n + col)];
              REQUIRE(slot == -1);  // each output written once
              slot = acc[mi][ni].lane[l][2 * h + j];
            }
          }
        }
      }
    }
  }
  return out;
}

void check_block_product(bool eight_bit) {
  const int k_elements = tiling::stage_k_bytes / (eight_bit ? 1 : 2);
  std::mt19937 random(eight_bit ? 8 : 16);
  std::uniform_int_distribution<std::uint32_t> small(0, eight_bit ? 255 : 1000);
  std::vector<std::uint32_t> a(static_cast<std::size_t>(tiling::block_m * k_elements)),
      b(static_cast<std::size_t>(k_elements * tiling::block_n));
  for (auto& v : a) v = small(random);
  for (auto& v : b) v = small(random);
  const std::vector<double> c = simulate_block(eight_bit, a, b);
  for (int i = 0; i < tiling::block_m; ++i) {
    for (int j = 0; j < tiling::block_n; ++j) {
      double expected = 0;
      for (int k = 0; k < k_elements; ++k) {
        expected += double(a[static_cast<std::size_t>(i * k_elements + k)]) *
                    b[static_cast<std::size_t>(k * tiling::block_n + j)];
      }
      INFO("row " << i << ", column " << j);
      REQUIRE(c[static_cast<std::size_t>(i * tiling::block_n + j)] == expected);
    }
  }
}

// 16-byte accesses go through shared memory a quarter warp at a time: the eight 16-byte units of a
// quarter must be in eight different bank groups (address / 16 mod 8).
void require_conflict_free_16(const lane_addresses& address) {
  for (int quarter = 0; quarter < 4; ++quarter) {
    std::set<int> groups;
    for (int l = 8 * quarter; l < 8 * quarter + 8; ++l) groups.insert((address.lane[l] / 16) % 8);
    REQUIRE(groups.size() == 8);
  }
}

}  // namespace

TEST_CASE("the swizzled layouts are one-to-one onto their stage buffers", "[gemm_layout]") {
  std::set<int> kmajor, nmajor;
  for (int row = 0; row < 128; ++row) {
    for (int byte = 0; byte < 64; ++byte) kmajor.insert(kmajor_offset(row, byte));
  }
  for (int k = 0; k < 32; ++k) {
    for (int byte = 0; byte < 256; ++byte) nmajor.insert(nmajor_offset(k, byte));
  }
  CHECK(kmajor.size() == tiling::a_stage_bytes);
  CHECK(*kmajor.rbegin() == tiling::a_stage_bytes - 1);
  CHECK(nmajor.size() == tiling::b_stage_bytes);
  CHECK(*nmajor.rbegin() == tiling::b_stage_bytes - 1);
  CHECK(tiling::shared_bytes == 48 * 1024);
}

TEST_CASE("the copies cover every 16-byte chunk of a stage once", "[gemm_layout]") {
  std::set<std::pair<int, int>> a, b;
  for (int t = 0; t < tiling::threads; ++t) {
    for (int copy = 0; copy < tiling::copies_per_thread; ++copy) {
      const tile_chunk ca = kmajor_copy_chunk(t, copy), cb = nmajor_copy_chunk(t, copy);
      CHECK((ca.row < 128 && ca.chunk < 4));
      CHECK((cb.row < 32 && cb.chunk < 16));
      a.insert({ca.row, ca.chunk});
      b.insert({cb.row, cb.chunk});
    }
  }
  CHECK(a.size() == 512);
  CHECK(b.size() == 512);
  // The 8-bit B: every (n, k) byte of the 128 × 64 transposed tile is stored once.
  std::set<int> stored;
  for (int t = 0; t < tiling::threads; ++t) {
    for (int j = 0; j < 8; ++j) {
      for (int e = 0; e < 4; ++e)
        stored.insert(kmajor_offset(fp8_b_col0(t) + fp8_b_store_word(t, j), fp8_b_row0(t) + e));
    }
  }
  CHECK(stored.size() == tiling::b_stage_bytes);
}

TEST_CASE("one block's copies, ldmatrix loads and mma steps compute its tile of A·B (16-bit)", "[gemm_layout]") {
  check_block_product(false);
}

TEST_CASE("one block's copies, transposes, ldmatrix loads and mma steps compute its tile of A·B (8-bit)",
          "[gemm_layout]") {
  check_block_product(true);
}

TEST_CASE("no shared-memory access of the GEMM has a bank conflict", "[gemm_layout]") {
  for (int warp = 0; warp < 8; ++warp) {
    for (int copy = 0; copy < tiling::copies_per_thread; ++copy) {
      lane_addresses a{}, b{};
      for (int l = 0; l < 32; ++l) {
        const tile_chunk ca = kmajor_copy_chunk(32 * warp + l, copy), cb = nmajor_copy_chunk(32 * warp + l, copy);
        a.lane[l] = kmajor_offset(ca.row, ca.chunk * 16);
        b.lane[l] = nmajor_offset(cb.row, cb.chunk * 16);
      }
      require_conflict_free_16(a);
      require_conflict_free_16(b);
    }
    for (int step = 0; step < tiling::steps_per_stage; ++step) {
      for (int mi = 0; mi < tiling::m_tiles; ++mi) {
        lane_addresses address{};
        for (int l = 0; l < 32; ++l) address.lane[l] = a_fragment_offset(warp_row0(warp), mi, step, l);
        require_conflict_free_16(address);
      }
      for (int p = 0; p < tiling::n_tiles / 2; ++p) {
        lane_addresses nmajor{}, kmajor{};
        for (int l = 0; l < 32; ++l) {
          nmajor.lane[l] = b_fragment_offset_nmajor(warp_col0(warp), p, step, l);
          kmajor.lane[l] = b_fragment_offset_kmajor(warp_col0(warp), p, step, l);
        }
        require_conflict_free_16(nmajor);
        require_conflict_free_16(kmajor);
      }
    }
    // The 8-bit B's 4-byte stores: all 32 lanes in 32 different banks, in each of the 8 stores.
    for (int j = 0; j < 8; ++j) {
      std::set<int> banks;
      for (int l = 0; l < 32; ++l) {
        const int t = 32 * warp + l;
        banks.insert((kmajor_offset(fp8_b_col0(t) + fp8_b_store_word(t, j), fp8_b_row0(t)) / 4) % 32);
      }
      REQUIRE(banks.size() == 32);
    }
  }
}

TEST_CASE("the launch order visits every block tile once", "[gemm_layout]") {
  for (const auto& shape : {std::pair<int, int>{1, 1}, {3, 5}, {8, 8}, {17, 4}, {64, 64}, {9, 1}}) {
    std::set<std::pair<int, int>> seen;
    const long long blocks = static_cast<long long>(shape.first) * shape.second;
    for (long long b = 0; b < blocks; ++b) {
      const block_tile t = tile_of_block(b, shape.first, shape.second);
      REQUIRE((t.row >= 0 && t.row < shape.first && t.col >= 0 && t.col < shape.second));
      seen.insert({t.row, t.col});
    }
    CHECK(static_cast<long long>(seen.size()) == blocks);
  }
}

TEST_CASE("the byte permutation and the 4x4 byte transpose follow __byte_perm", "[gemm_layout]") {
  CHECK(byte_permute(0x03020100u, 0x07060504u, 0x3210u) == 0x03020100u);
  CHECK(byte_permute(0x03020100u, 0x07060504u, 0x7654u) == 0x07060504u);
  CHECK(byte_permute(0x03020100u, 0x07060504u, 0x5140u) == 0x05010400u);
  const std::uint32_t rows[4] = {0x03020100u, 0x13121110u, 0x23222120u, 0x33323130u};
  std::uint32_t columns[4];
  transpose_4x4_bytes(rows, columns, byte_permute);
  CHECK(columns[0] == 0x30201000u);
  CHECK(columns[1] == 0x31211101u);
  CHECK(columns[2] == 0x32221202u);
  CHECK(columns[3] == 0x33231303u);
}
