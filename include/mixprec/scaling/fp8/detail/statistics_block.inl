// The body of quantization_statistics.hpp's measure_block for one vector width
// (MIXPREC_STATISTICS_WIDTH floats), included once per instruction set inside its namespace and
// target region.  Not a header of its own.
//
// The 16 lanes are statistics_lanes / W vectors of W floats (GCC/Clang vector extensions).  Value
// i goes to lane i % 16, and every lane does the same operations in the same order whatever W
// is, so every version gives the same bits.  Vectors are loaded in place and never passed by
// value (a vector argument's ABI depends on the target); a cast between the two vector types
// reinterprets the bits.  (One 64-byte vector on the baseline was slower: without AVX-512, GCC
// lowered its selects through memory.)

constexpr std::size_t width = MIXPREC_STATISTICS_WIDTH;
using float_vector = float __attribute__((vector_size(width * sizeof(float))));
using count_vector = std::int32_t __attribute__((vector_size(width * sizeof(float))));

// x, hidden from the optimiser: a product passed through it is rounded on its own, never fused
// with the addition after it.  GCC contracts a multiply and an add into an FMA where the target
// has one (-ffp-contract=fast, its default in GNU mode; Clang within an expression), and AVX-512F
// brings FMA: without this the AVX-512 version's sums of squares differed from the others' in
// the last bits.  A register operand ("v": any SSE/AVX register), so it costs no instruction.
template <class T>
inline T unfused(T x) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+v"(x));
#elif defined(__GNUC__) || defined(__clang__)
  __asm__("" : "+m"(x));
#endif
  return x;
}

// centre: a value near the block's mean (the previous block's mean), about which the deviations
// are summed (the shifted-data variance: sum (x - c) and sum (x - c)^2 give the mean and the sum
// of squares about it with little cancellation when c is near the mean, and the sum of x^2 for
// the l2 norm).  Two passes over the block, in L1: x alone, then x with float(q); each keeps at
// most 7 accumulators of V vectors, so that AVX2's 16 registers hold them (one pass with all 13
// spilled and ran 1.4 times slower).  With one vector per accumulator (AVX-512) the two passes
// run as one loop.  amax is the larger of -min and max, and a NaN shows as a
// NaN sum of |x|.
// (Quantised: decoded is not null; a template parameter so that the loop has no branch.)
template <bool Quantised>
statistics_partial measure_lanes(const float* x, std::size_t len, const float* decoded, float scale_inv, float bound,
                                 float centre) noexcept {
  constexpr std::size_t L = statistics_lanes, W = width, V = L / W;
  constexpr float inf = std::numeric_limits<float>::infinity();
  const float_vector zero = {}, infinite = zero + inf;
  float_vector shifted[V], deviations[V], l1[V], low[V], high[V], smallest[V], error[V];
  count_vector nonzero_x[V], nonzero_q[V], over[V], tail_valid[V];
  for (std::size_t k = 0; k < V; ++k) {
    shifted[k] = deviations[k] = l1[k] = error[k] = zero;
    low[k] = smallest[k] = infinite;
    high[k] = -infinite;
    nonzero_x[k] = nonzero_q[k] = over[k] = tail_valid[k] = count_vector{};
  }
  // The tail is padded with zeros and masked out of the extremes and the shifted sums (a zero
  // adds nothing to the other sums and counts).
  const std::size_t whole = len / L * L;
  float tail_x[L] = {}, tail_f[L] = {};
  for (std::size_t i = whole; i < len; ++i) tail_x[i - whole] = x[i];
  if constexpr (Quantised) {
    for (std::size_t i = whole; i < len; ++i) tail_f[i - whole] = decoded[i];
  }
  for (std::size_t j = 0; j < L; ++j) tail_valid[j / W][j % W] = j < len - whole ? -1 : 0;

  // The whole vectors in one loop and the padded tail in another: a select of the tail's mask in
  // the loop made every extreme a chain of five dependent instructions (perf: 1.7 cycles a value
  // on AVX-512); with the mask a constant of all ones, it folds away and each extreme is a compare
  // and a blend.
  count_vector all_lanes[V];
  for (auto& lanes : all_lanes) lanes = count_vector{} - 1;
  auto first_pass = [&](const float* px, const count_vector* valid) {
    MIXPREC_UNROLL(4)
    for (std::size_t k = 0; k < V; ++k) {
      float_vector v;
      std::memcpy(&v, px + k * W, sizeof v);
      const float_vector a = (float_vector)((count_vector)v & 0x7FFF'FFFF);
      const float_vector d = (float_vector)((count_vector)(v - centre) & valid[k]);
      shifted[k] += d;
      deviations[k] += unfused(d * d);
      low[k] = ((v < low[k]) & valid[k]) ? v : low[k];
      high[k] = ((v > high[k]) & valid[k]) ? v : high[k];
      l1[k] += a;
      // Zeros as infinity, off the chain, so that the running minimum is a min instruction.
      const float_vector nonzero_a = a != zero ? a : infinite;
      smallest[k] = nonzero_a < smallest[k] ? nonzero_a : smallest[k];
      nonzero_x[k] -= a != zero;  // a lane-wise comparison is -1 where true
    }
  };
  auto second_pass = [&](const float* px, const float* pf) {
    if constexpr (Quantised) {
      MIXPREC_UNROLL(4)
      for (std::size_t k = 0; k < V; ++k) {
        float_vector v, f;
        std::memcpy(&v, px + k * W, sizeof v);
        std::memcpy(&f, pf + k * W, sizeof f);
        const float_vector e = unfused(f * scale_inv) - v;
        error[k] += unfused(e * e);
        nonzero_q[k] -= f != zero;
        over[k] -= (v > bound) | (v < -bound);
      }
    } else {
      (void)px, (void)pf;
    }
  };
  // Each accumulator sees the same operations in the same order either way.  With AVX-512's 32
  // registers all 13 fit, and one pass lets the four chains of additions overlap.
  if constexpr (V == 1) {
    for (std::size_t i = 0; i < whole; i += L) {
      first_pass(x + i, all_lanes);
      second_pass(x + i, Quantised ? decoded + i : nullptr);
    }
    if (whole < len) {
      first_pass(tail_x, tail_valid);
      second_pass(tail_x, tail_f);
    }
  } else {
    for (std::size_t i = 0; i < whole; i += L) first_pass(x + i, all_lanes);
    if (whole < len) first_pass(tail_x, tail_valid);
    for (std::size_t i = 0; i < whole; i += L) second_pass(x + i, Quantised ? decoded + i : nullptr);
    if (whole < len) second_pass(tail_x, tail_f);
  }

  statistics_partial p;
  p.count = len;
  double shift = 0, m2 = 0;
  for (std::size_t j = 0; j < L; ++j) {
    const std::size_t k = j / W, w = j % W;
    shift += shifted[k][w];
    m2 += deviations[k][w];
    p.l1 += l1[k][w];
    p.square_error += error[k][w];
    p.min = std::min(p.min, low[k][w]);
    p.max = std::max(p.max, high[k][w]);
    p.smallest_nonzero = std::min(p.smallest_nonzero, smallest[k][w]);
    p.nonzero_x += static_cast<std::uint32_t>(nonzero_x[k][w]);
    p.nonzero_q += static_cast<std::uint32_t>(nonzero_q[k][w]);
    p.overflows += static_cast<std::uint32_t>(over[k][w]);
  }
  if (len > 0) {
    const double n = static_cast<double>(len), c = static_cast<double>(centre);
    p.mean = c + shift / n;
    p.m2 = std::max(0.0, m2 - shift * shift / n);
    p.sum_squares = m2 + unfused(2 * c * shift) + unfused(n * c * c);  // sum (d + c)^2
    p.nans = std::isnan(p.l1) ? 1 : 0;                                 // at least one; how many is not needed
  }
  return p;
}

inline statistics_partial measure_block(const float* x, std::size_t len, const float* decoded, float scale_inv,
                                        float bound, float centre) noexcept {
  return decoded != nullptr ? measure_lanes<true>(x, len, decoded, scale_inv, bound, centre)
                            : measure_lanes<false>(x, len, decoded, scale_inv, bound, centre);
}
