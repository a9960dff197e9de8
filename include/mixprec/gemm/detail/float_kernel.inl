// The float micro-kernel, written once against a `vector_ops` struct (kernels_x86.hpp compiles
// it for AVX2 and AVX-512 inside their target regions, kernel_portable.hpp for plain C++).
//
// Tile MR x NR of C, NR a multiple of the vector width.  A micro-panel: depth lines of MR floats
// (line k holds A(i, k) for the MR rows); B micro-panel: depth lines of NR floats.  For each k
// in line order, each C element gets exactly one fused multiply-add:
//
//   sum(i, j) = fma(A(i, k), B(k, j), sum(i, j))
//
// so every element is one sequential fma chain over the lines, whatever MR, NR and the vector
// width: every target gives the same bits.  (A product of two floats is exact inside the fma;
// only the sum is rounded.)
//
// No include guard: included once per target, inside its namespace.

template <std::size_t MR, std::size_t NR>
struct float_tile {
  using V = vector_ops;
  using vec = typename V::type;
  static constexpr std::size_t mr = MR;
  static constexpr std::size_t nr = NR;
  static constexpr std::size_t columns = NR / V::width;
  static_assert(NR % V::width == 0, "a tile row is whole vectors");

  // The sums start at +0 or at the partial sums.
  static MIXPREC_SIMD_INLINE void start(vec (&sum)[MR][columns], const tile_io& io) {
    if (io.partial == nullptr) {
      MIXPREC_UNROLL(16)
      for (std::size_t i = 0; i < MR; ++i) {
        MIXPREC_UNROLL(4)
        for (std::size_t j = 0; j < columns; ++j) sum[i][j] = V::zero();
      }
    } else {
      MIXPREC_UNROLL(16)
      for (std::size_t i = 0; i < MR; ++i) {
        MIXPREC_UNROLL(4)
        for (std::size_t j = 0; j < columns; ++j) sum[i][j] = V::load(io.partial + i * io.partial_ld + j * V::width);
      }
    }
  }

  // Raw sums, or the epilogue of tile.hpp lane by lane.
  static MIXPREC_SIMD_INLINE void finish(vec (&sum)[MR][columns], const tile_io& io) {
    if (!io.final) {
      MIXPREC_UNROLL(16)
      for (std::size_t i = 0; i < MR; ++i) {
        MIXPREC_UNROLL(4)
        for (std::size_t j = 0; j < columns; ++j) V::store(io.out + i * io.out_ld + j * V::width, sum[i][j]);
      }
    } else if (io.beta == 0.0f) {
      const vec factor = V::set1(io.factor);
      MIXPREC_UNROLL(16)
      for (std::size_t i = 0; i < MR; ++i) {
        MIXPREC_UNROLL(4)
        for (std::size_t j = 0; j < columns; ++j) {
          V::store(io.out + i * io.out_ld + j * V::width, V::mul(factor, sum[i][j]));
        }
      }
    } else {
      const vec factor = V::set1(io.factor), beta = V::set1(io.beta);
      MIXPREC_UNROLL(16)
      for (std::size_t i = 0; i < MR; ++i) {
        MIXPREC_UNROLL(4)
        for (std::size_t j = 0; j < columns; ++j) {
          float* out = io.out + i * io.out_ld + j * V::width;
          V::store(out, V::fma(factor, sum[i][j], V::mul(beta, V::load(out))));
        }
      }
    }
  }

  static void run(std::size_t depth, const float* a, const float* b, const tile_io& io) {
    vec sum[MR][columns];
    start(sum, io);
    for (std::size_t k = 0; k < depth; ++k) {
      vec line[columns];
      MIXPREC_UNROLL(4)
      for (std::size_t j = 0; j < columns; ++j) line[j] = V::load(b + k * NR + j * V::width);
      MIXPREC_UNROLL(16)
      for (std::size_t i = 0; i < MR; ++i) {
        const vec element = V::broadcast(a + k * MR + i);
        MIXPREC_UNROLL(4)
        for (std::size_t j = 0; j < columns; ++j) sum[i][j] = V::fma(element, line[j], sum[i][j]);
      }
    }
    finish(sum, io);
  }
};
