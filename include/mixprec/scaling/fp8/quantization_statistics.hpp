// How well a tensor quantises, with Transformer Engine's definitions (its debug features
// log_tensor_stats and log_fp8_tensor_stats; the formulas in
// transformer_engine/debug/features/utils/stats_computation.py):
//
//   auto t = mixprec::statistics_of(x, n);                      // min, max, mean, std, l1, l2, amax,
//                                                               // dynamic range
//   auto q = mixprec::quantization_statistics_of(x, n, x_fp8, scale_inv);   // underflows, overflows, mse
//   auto r = mixprec::quantize_with_statistics(x, n, x_fp8, scale);         // both, fused with the quantise
//   double d = mixprec::max_blockwise_dynamic_range(x, n, 32);
//   double e = mixprec::max_blockwise_dynamic_range(x, rows, cols, ldx, 16, 2);   // 16 × 16 tiles
//   auto b = mixprec::statistics_of_dequantized(x, ldx, y, ldy, rows, cols, scale_invs, count);
//                                                               // any quantiser, from its dequantised
//                                                               // values (mx/statistics.hpp: MX)
//
// The definitions, for x the float tensor, q its quantised codes and scale_inv the tensor's one
// inverse scale (the per-tensor recipes: delayed and current scaling):
//   std               unbiased (torch.std): sqrt(sum (x - mean)^2 / (n - 1)); 0 for n < 2
//   dynamic_range     log2(amax) - log2(smallest nonzero |x|); 0 when no x is nonzero (TE returns
//                     inf there, from log2 of an empty maximum)
//   underflows        count_nonzero(x) - count_nonzero(q): the nonzero values that became zero
//   overflows         #(x > max · scale_inv or x < -max · scale_inv), max the format's largest
//                     value (448 for e4m3, 57344 for e5m2): the values a saturating quantise
//                     clipped (TE's fp8_delayed_scaling_overflows)
//   total_square_error, mse   sum and mean of (float(q) · scale_inv - x)^2 (TE's mse_loss against
//                     the dequantised tensor)
//   scale_inv_min/max the tensor's scale_inv (TE takes them over a tensor's block scales)
//   max_blockwise_dynamic_range   the largest dynamic_range of the blocks of block_size
//                     consecutive values, or of a matrix's block_size × block_size tiles (TE's
//                     dims 1 and 2, with or without max_over_orientations; all-zero blocks count 0)
//
// A NaN in x makes min, max, mean, std, the norms, amax and the dynamic range NaN (as torch's
// reductions); infinities propagate by IEEE arithmetic.  Sums are taken in float over 16 lanes of
// blocks of 2048 values and in double across blocks (TE sums in float32 with torch's reductions),
// so the results agree with a double-precision reference to about 1e-6 relative; they are
// deterministic for a given bulk_threads().
//
// quantize_with_statistics quantises blocks of 2048 values with quantize_n's kernels and measures
// each block while it is in the L1 cache: one read of x from memory, as quantize_n alone.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../../bulk/quantize.hpp"
#include "../../bulk/simd_path.hpp"
#include "../../bulk/x86/target.hpp"
#include "../../detail/parallel.hpp"
#include "../../detail/text.hpp"
#include "../../errors.hpp"
#include "../../limits.hpp"
#include "format.hpp"

namespace mixprec {

// TE's log_tensor_stats of one float tensor.
struct tensor_statistics {
  std::size_t numel = 0;
  float min = 0;  // 0 for an empty tensor, as every field
  float max = 0;
  float amax = 0;  // TE's cur_amax
  double mean = 0;
  double std = 0;
  double l1_norm = 0;
  double l2_norm = 0;
  double dynamic_range = 0;
};

// TE's log_fp8_tensor_stats of one quantisation with one scale_inv.
struct quantization_statistics {
  std::size_t numel = 0;
  std::size_t underflows = 0;
  std::size_t overflows = 0;
  double underflows_percent = 0;  // 100 · underflows / numel
  double overflows_percent = 0;   // 100 · overflows / numel
  double total_square_error = 0;
  double mse = 0;
  float scale_inv_min = 0;
  float scale_inv_max = 0;
};

// The statistics of a tensor and of a quantisation of it.
struct quantization_report {
  tensor_statistics tensor;
  quantization_statistics quantization;
};

// A report and the recipe iteration it was measured at (delayed_scaler::statistics).
struct fp8_statistics_record {
  std::int64_t iteration = 0;
  quantization_report report;
};

// What quantize_with_statistics did and saw.
struct quantized_with_statistics {
  fp8_quantized quantized;  // amax, scale, scale_inv = 1 / scale
  tensor_statistics tensor;
  quantization_statistics quantization;
};

namespace detail {

constexpr std::size_t statistics_block = 2048;  // values measured (and quantised) at a time
constexpr std::size_t statistics_lanes = 16;

// The partial statistics of a run of values; merge() joins two runs (Chan et al.'s pairwise update
// of the mean and the sum of squared deviations).
struct statistics_partial {
  std::size_t count = 0;
  std::size_t nonzero_x = 0;
  std::size_t nonzero_q = 0;
  std::size_t overflows = 0;
  std::size_t nans = 0;  // nonzero if any value is NaN
  double mean = 0;
  double m2 = 0;  // sum of (x - mean)^2
  double l1 = 0;
  double sum_squares = 0;
  double square_error = 0;
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  float smallest_nonzero = std::numeric_limits<float>::infinity();

  void merge(const statistics_partial& o) noexcept {
    if (o.count == 0) return;
    if (count == 0) {
      *this = o;
      return;
    }
    const double total = static_cast<double>(count + o.count);
    const double delta = o.mean - mean;
    mean += delta * static_cast<double>(o.count) / total;
    m2 += o.m2 + delta * delta * static_cast<double>(count) * static_cast<double>(o.count) / total;
    count += o.count;
    nonzero_x += o.nonzero_x;
    nonzero_q += o.nonzero_q;
    overflows += o.overflows;
    nans += o.nans;
    l1 += o.l1;
    sum_squares += o.sum_squares;
    square_error += o.square_error;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    smallest_nonzero = std::min(smallest_nonzero, o.smallest_nonzero);
  }
};

}  // namespace detail
}  // namespace mixprec

// measure_block, once per instruction set: the 16 lanes as vectors of 4 floats (SSE2, the
// x86-64 baseline, and other targets), 8 (AVX2) or 16 (AVX-512).  Each lane does the same
// operations in the same order in every version, so they give the same bits.
#define MIXPREC_STATISTICS_WIDTH 4
namespace mixprec::detail::statistics_portable {
#include "detail/statistics_block.inl"
}  // namespace mixprec::detail::statistics_portable
#undef MIXPREC_STATISTICS_WIDTH
#if MIXPREC_X86_SIMD
MIXPREC_TARGET_BEGIN("avx2")
#define MIXPREC_STATISTICS_WIDTH 8
namespace mixprec::detail::statistics_avx2 {
#include "detail/statistics_block.inl"
}  // namespace mixprec::detail::statistics_avx2
#undef MIXPREC_STATISTICS_WIDTH
MIXPREC_TARGET_END
MIXPREC_TARGET_BEGIN("avx2,avx512f")
#define MIXPREC_STATISTICS_WIDTH 16
namespace mixprec::detail::statistics_avx512 {
#include "detail/statistics_block.inl"
}  // namespace mixprec::detail::statistics_avx512
#undef MIXPREC_STATISTICS_WIDTH
MIXPREC_TARGET_END
#endif

namespace mixprec {
namespace detail {

// One block of at most statistics_block values on the given SIMD path.  decoded: float(q) for
// each value (the codes decoded with scale 1), or nullptr for the tensor's statistics alone.
inline statistics_partial measure_block(simd_path path, const float* x, std::size_t len, const float* decoded,
                                        float scale_inv, float bound, float centre) noexcept {
#if MIXPREC_X86_SIMD
  if (path == simd_path::avx512 || path == simd_path::avx512_bf16) {
    return statistics_avx512::measure_block(x, len, decoded, scale_inv, bound, centre);
  }
  if (path == simd_path::avx2) return statistics_avx2::measure_block(x, len, decoded, scale_inv, bound, centre);
#else
  static_cast<void>(path);
#endif
  return statistics_portable::measure_block(x, len, decoded, scale_inv, bound, centre);
}

inline tensor_statistics tensor_statistics_from(const statistics_partial& p) {
  tensor_statistics t;
  t.numel = p.count;
  if (p.count == 0) return t;
  if (p.nans > 0) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    t.min = t.max = t.amax = nan;
    t.mean = t.std = t.l1_norm = t.l2_norm = t.dynamic_range = std::numeric_limits<double>::quiet_NaN();
    return t;
  }
  t.min = p.min;
  t.max = p.max;
  t.amax = std::max(-p.min, p.max);  // the largest magnitude
  t.mean = p.mean;
  t.std = p.count < 2 ? 0.0 : std::sqrt(p.m2 / static_cast<double>(p.count - 1));
  t.l1_norm = p.l1;
  t.l2_norm = std::sqrt(p.sum_squares);
  t.dynamic_range = p.nonzero_x == 0
                        ? 0.0
                        : std::log2(static_cast<double>(t.amax)) - std::log2(static_cast<double>(p.smallest_nonzero));
  return t;
}

inline quantization_statistics quantization_statistics_from(const statistics_partial& p, float scale_inv) {
  quantization_statistics q;
  q.numel = p.count;
  q.scale_inv_min = q.scale_inv_max = scale_inv;
  if (p.count == 0) return q;
  const double n = static_cast<double>(p.count);
  q.underflows = p.nonzero_x - p.nonzero_q;
  q.overflows = p.overflows;
  q.underflows_percent = 100.0 * static_cast<double>(q.underflows) / n;
  q.overflows_percent = 100.0 * static_cast<double>(q.overflows) / n;
  q.total_square_error = p.square_error;
  q.mse = p.square_error / n;
  return q;
}

inline void check_scale_inv(const char* function, float scale_inv) {
  if (!(scale_inv > 0.0f) || !std::isfinite(scale_inv)) {
    throw invalid_argument(std::string(function) + ": scale_inv is " + number_text(scale_inv) +
                           ", it must be finite and > 0");
  }
}

inline void check_input(const char* function, const float* x, std::size_t n) {
  if (n > 0 && x == nullptr) {
    throw invalid_argument(std::string(function) + ": null input pointer with n = " + std::to_string(n));
  }
  check_array_extent(function, "input", x, n);
}

// Runs measure(begin, end, centre, scratch) -> statistics_partial over blocks of statistics_block
// values, split over bulk_threads() as the bulk functions are, and merges the parts in order.
// centre: the previous block's mean (the chunk's first value, for its first block), finite;
// scratch: statistics_block floats of the chunk's own.
template <class Measure>
statistics_partial measure_in_blocks(const float* x, std::size_t n, Measure&& measure) {
  const work_split split = split_work(n, bulk_threads(), bulk_elements_per_thread, 64);
  std::vector<statistics_partial> parts(split.count);
  run_chunks(split, [&](std::size_t chunk, std::size_t begin, std::size_t end) {
    std::vector<float> scratch(statistics_block);
    float centre = begin < end && std::isfinite(x[begin]) ? x[begin] : 0.0f;
    for (std::size_t at = begin; at < end; at += statistics_block) {
      const statistics_partial block = measure(at, std::min(end, at + statistics_block), centre, scratch.data());
      if (std::isfinite(block.mean)) centre = static_cast<float>(block.mean);
      parts[chunk].merge(block);
    }
  });
  statistics_partial all;
  for (const statistics_partial& p : parts) all.merge(p);
  return all;
}

template <class T>
float largest_finite() noexcept {
  static_assert(std::numeric_limits<T>::is_specialized, "a quantised type with numeric_limits (limits.hpp)");
  return static_cast<float>(std::numeric_limits<T>::max());
}

}  // namespace detail

// TE's log_tensor_stats of x[0, n).
inline tensor_statistics statistics_of(const float* x, std::size_t n) {
  detail::check_input("statistics_of", x, n);
  const simd_path path = active_simd_path();
  return detail::tensor_statistics_from(
      detail::measure_in_blocks(x, n, [&](std::size_t begin, std::size_t end, float centre, float*) {
        return detail::measure_block(path, x + begin, end - begin, nullptr, 1.0f, 0.0f, centre);
      }));
}

// TE's statistics of q = the quantisation of x with one scale_inv (float(q) · scale_inv
// approximates x): underflows, overflows (against T's largest value), mse.
template <class T>
quantization_statistics quantization_statistics_of(const float* x, std::size_t n, const T* q, float scale_inv) {
  constexpr const char* function = "quantization_statistics_of";
  detail::check_input(function, x, n);
  if (n > 0 && q == nullptr) {
    throw invalid_argument(std::string(function) + ": null quantised pointer with n = " + std::to_string(n));
  }
  detail::check_array_extent(function, "quantised", q, n);
  detail::check_scale_inv(function, scale_inv);
  const float bound = detail::largest_finite<T>() * scale_inv;
  const simd_path path = active_simd_path();
  const detail::statistics_partial p =
      detail::measure_in_blocks(x, n, [&](std::size_t begin, std::size_t end, float centre, float* decoded) {
        detail::dequantize_serial(path, q + begin, end - begin, decoded, 1.0f, false);
        return detail::measure_block(path, x + begin, end - begin, decoded, scale_inv, bound, centre);
      });
  return detail::quantization_statistics_from(p, scale_inv);
}

// quantize_n(x, n, out, scale, r, o) and the statistics of x and of the quantisation, in one read
// of x: each block is quantised, decoded into a buffer on the stack and measured while in L1.
// quantized.scale_inv is 1 / scale (float division, as TE's and the recipes').
template <class T>
quantized_with_statistics quantize_with_statistics(const float* x, std::size_t n, T* out, float scale,
                                                   rounding r = rounding::nearest_even,
                                                   overflow o = overflow::saturate) {
  constexpr const char* function = "quantize_with_statistics";
  detail::check_bulk_arguments(function, x, n, out);
  if (!(scale > 0.0f) || !std::isfinite(scale)) {
    throw invalid_argument(std::string(function) + ": scale is " + detail::number_text(scale) +
                           ", it must be finite and > 0");
  }
  quantized_with_statistics result;
  result.quantized.scale = scale;
  result.quantized.scale_inv = 1.0f / scale;
  detail::check_scale_inv(function, result.quantized.scale_inv);
  const float bound = detail::largest_finite<T>() * result.quantized.scale_inv;
  const simd_path path = active_simd_path();
  const detail::statistics_partial p =
      detail::measure_in_blocks(x, n, [&](std::size_t begin, std::size_t end, float centre, float* decoded) {
        detail::quantize_serial(path, x + begin, end - begin, out + begin, scale, r, o, false);
        detail::dequantize_serial(path, out + begin, end - begin, decoded, 1.0f, false);
        return detail::measure_block(path, x + begin, end - begin, decoded, result.quantized.scale_inv, bound, centre);
      });
  result.tensor = detail::tensor_statistics_from(p);
  result.quantization = detail::quantization_statistics_from(p, result.quantized.scale_inv);
  result.quantized.amax = result.tensor.amax;  // NaN if any x is NaN, as quantize_n's
  return result;
}

// The statistics of any quantisation of a rows × cols matrix x (leading dimension ldx), from its
// dequantised values (dequantised, leading dimension ldd) and the inverse scales it used
// (scale_invs, count of them; their range is scale_inv_min/max): underflows (nonzero values whose
// dequantised value is 0) and the square error.  Overflows are not counted (TE counts them for
// per-tensor delayed scaling only; a block scale is set from its block's amax).  One thread.
inline quantization_report statistics_of_dequantized(const float* x, std::size_t ldx, const float* dequantised,
                                                     std::size_t ldd, std::size_t rows, std::size_t cols,
                                                     const float* scale_invs, std::size_t count) {
  constexpr const char* function = "statistics_of_dequantized";
  if (rows > 0 && cols > 0 && (x == nullptr || dequantised == nullptr)) {
    throw invalid_argument(std::string(function) + ": null " + (x == nullptr ? "input" : "dequantised") +
                           " pointer for a " + std::to_string(rows) + " × " + std::to_string(cols) + " matrix");
  }
  if (rows > 1 && (ldx < cols || ldd < cols)) {
    throw invalid_argument(std::string(function) + ": leading dimension " + std::to_string(ldx < cols ? ldx : ldd) +
                           " is less than cols = " + std::to_string(cols));
  }
  if (count > 0 && scale_invs == nullptr) {
    throw invalid_argument(std::string(function) + ": null scale_invs pointer with count = " + std::to_string(count));
  }
  const simd_path path = active_simd_path();
  detail::statistics_partial all;
  float centre = rows > 0 && cols > 0 && std::isfinite(x[0]) ? x[0] : 0.0f;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; c += detail::statistics_block) {
      const std::size_t len = std::min(cols - c, detail::statistics_block);
      const detail::statistics_partial block = detail::measure_block(
          path, x + r * ldx + c, len, dequantised + r * ldd + c, 1.0f, std::numeric_limits<float>::infinity(), centre);
      if (std::isfinite(block.mean)) centre = static_cast<float>(block.mean);
      all.merge(block);
    }
  }
  quantization_report result;
  result.tensor = detail::tensor_statistics_from(all);
  result.quantization = detail::quantization_statistics_from(all, 1.0f);
  float low = std::numeric_limits<float>::infinity(), high = -low;
  for (std::size_t i = 0; i < count; ++i) {
    low = std::min(low, scale_invs[i]);
    high = std::max(high, scale_invs[i]);
  }
  result.quantization.scale_inv_min = count == 0 ? 0.0f : low;
  result.quantization.scale_inv_max = count == 0 ? 0.0f : high;
  return result;
}

namespace detail {

// A rows × cols input matrix with leading dimension ld (named ld_name in the message).
inline void check_input_matrix(const char* function, const float* a, std::size_t rows, std::size_t cols,
                               const char* ld_name, std::size_t ld) {
  if (rows > 0 && cols > 0 && a == nullptr) {
    throw invalid_argument(std::string(function) + ": null input pointer for a " + std::to_string(rows) + " × " +
                           std::to_string(cols) + " matrix");
  }
  if (rows > 1 && ld < cols) {
    throw invalid_argument(std::string(function) + ": " + ld_name + " = " + std::to_string(ld) +
                           " is less than cols = " + std::to_string(cols));
  }
}

// Where a block quantiser's element of type T overflows (mixprec's definition: TE counts overflows
// for per-tensor delayed scaling only, where the scale comes from an older amax).  A block's
// scale comes from the block's own amax, but it is rounded (MX's OCP rule takes the power of two
// at or below amax / max; NVFP4's scale is rounded to ue4m3), so the block's largest values can
// land above T's largest finite value m.  They count as overflows when, divided by their block's
// decode scale, they lie beyond m's rounding range: the values that a saturating quantise clipped
// to ±m and a non-saturating one would have made infinite or NaN.  The boundary is m plus half the
// spacing of T's values at m, excluded when rounding to nearest even keeps a tie at m (m's code
// even) and included when it sends the tie up: |x| > 464·s for e4m3, |x| >= 61440·s for e5m2,
// |x| >= 7·s for e2m1, with s the decode scale (an MX block with amax 500 and scale 1 clips it to
// 448; 460 rounds to 448 and is not an overflow).
template <class T>
struct overflow_boundary {
  double ratio = 0;        // boundary / m
  bool inclusive = false;  // a value at the boundary overflows
  overflow_boundary() {
    const double m = static_cast<double>(static_cast<float>(std::numeric_limits<T>::max()));
    int e = 0;
    static_cast<void>(std::frexp(m, &e));  // m = f · 2^e, f in [0.5, 1)
    const double spacing = std::ldexp(1.0, e - std::numeric_limits<T>::digits);
    ratio = (m + spacing / 2) / m;
    inclusive = (std::numeric_limits<T>::max().bits() & 1u) != 0;
  }
  // largest: the decoded value of T's largest code in x's block (m times the decode scale).
  bool clipped(float x, float largest) const noexcept {
    const double limit = ratio * static_cast<double>(largest);
    const double a = std::fabs(static_cast<double>(x));
    return inclusive ? a >= limit : a > limit;
  }
};

// The report of a block quantiser's rows × cols matrix of T elements (mx_statistics,
// blockscale's fp8_block_statistics and nvfp4_statistics): checks the input a (leading dimension
// lda), decodes the matrix with dequantize(out, ldo) into a buffer and measures it against a with
// the quantiser's inverse scales; largest(r, c) is the decoded value of T's largest code in
// element (r, c)'s block, for the overflows (overflow_boundary).  `function` names the caller in
// the errors.
template <class T, class Dequantize, class Largest>
quantization_report dequantized_matrix_report(const char* function, const float* a, std::size_t lda, std::size_t rows,
                                              std::size_t cols, Dequantize&& dequantize,
                                              const std::vector<float>& scale_invs, Largest&& largest) {
  check_input_matrix(function, a, rows, cols, "lda", lda);
  std::vector<float> dequantised(rows * cols);  // the quantised matrix exists, so rows · cols fits
  if (!dequantised.empty()) dequantize(dequantised.data(), cols);
  quantization_report report =
      statistics_of_dequantized(a, lda, dequantised.data(), cols, rows, cols, scale_invs.data(), scale_invs.size());
  // A clipped value decodes to ±largest, below its own magnitude: only those are looked at.
  const overflow_boundary<T> boundary;
  std::size_t overflows = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const float x = a[r * lda + c];
      if (std::fabs(x) > std::fabs(dequantised[r * cols + c]) && boundary.clipped(x, largest(r, c))) ++overflows;
    }
  }
  report.quantization.overflows = overflows;
  report.quantization.overflows_percent =
      rows * cols == 0 ? 0.0 : 100.0 * static_cast<double>(overflows) / static_cast<double>(rows * cols);
  return report;
}

// The largest and smallest nonzero magnitude of one block, and whether it held a NaN.
struct magnitude_range {
  float high = 0, low = std::numeric_limits<float>::infinity();
  bool nan = false;
  void add(float x) noexcept {
    const float a = std::fabs(x);
    nan |= a != a;
    high = std::max(high, a);
    if (a != 0.0f) low = std::min(low, a);
  }
  // log2(high) - log2(low); 0 for a block with no nonzero value.
  double dynamic_range() const { return high == 0.0f ? 0.0 : std::log2(double{high}) - std::log2(double{low}); }
};

// The largest dynamic range over `blocks` blocks, block b holding the values value(b, 0..size-1);
// NaN if any value is NaN.
template <class Value>
double max_dynamic_range_of_blocks(std::size_t blocks, std::size_t size, Value value) {
  double largest = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    magnitude_range block;
    for (std::size_t i = 0; i < size; ++i) block.add(value(b, i));
    if (block.nan) return std::numeric_limits<double>::quiet_NaN();
    largest = std::max(largest, block.dynamic_range());
  }
  return largest;
}

}  // namespace detail

// The largest dynamic range (log2 of the largest over the smallest nonzero magnitude) of the
// blocks of block_size consecutive values of x; all-zero blocks count 0 (TE's
// compute_max_blockwise_dynamic_range with dims = 1).  n must be a multiple of block_size.
inline double max_blockwise_dynamic_range(const float* x, std::size_t n, std::size_t block_size) {
  constexpr const char* function = "max_blockwise_dynamic_range";
  detail::check_input(function, x, n);
  if (block_size == 0) throw invalid_argument(std::string(function) + ": block_size is 0");
  if (n % block_size != 0) {
    throw invalid_argument(std::string(function) + ": n = " + std::to_string(n) + " is not a multiple of block_size " +
                           std::to_string(block_size));
  }
  return detail::max_dynamic_range_of_blocks(n / block_size, block_size,
                                             [&](std::size_t b, std::size_t i) { return x[b * block_size + i]; });
}

// The same over a rows × cols matrix x (row-major, leading dimension ldx), as TE's
// compute_max_blockwise_dynamic_range treats a 2-D tensor:
//   dims 1: blocks of block_size consecutive values in row-major order (a block continues on the
//           next row when cols is not a multiple of block_size); rows · cols must be a multiple
//           of block_size;
//   dims 2: block_size × block_size tiles; rows and cols must be multiples of block_size;
//   max_over_orientations: also the blocks of the transposed matrix (1-D blocks down the
//           columns), and the larger of the two.
inline double max_blockwise_dynamic_range(const float* x, std::size_t rows, std::size_t cols, std::size_t ldx,
                                          std::size_t block_size, int dims, bool max_over_orientations = false) {
  constexpr const char* function = "max_blockwise_dynamic_range";
  detail::check_input_matrix(function, x, rows, cols, "ldx", ldx);
  if (dims != 1 && dims != 2) {
    throw invalid_argument(std::string(function) + ": dims is " + std::to_string(dims) + ", it must be 1 or 2");
  }
  if (block_size == 0) throw invalid_argument(std::string(function) + ": block_size is 0");
  if (rows != 0 && cols > std::numeric_limits<std::size_t>::max() / rows) {
    throw invalid_argument(std::string(function) + ": " + std::to_string(rows) + " × " + std::to_string(cols) +
                           " elements overflow size_t");
  }
  const std::size_t n = rows * cols;
  if (dims == 1 && n % block_size != 0) {
    throw invalid_argument(std::string(function) + ": " + std::to_string(rows) + " × " + std::to_string(cols) + " = " +
                           std::to_string(n) + " values are not a multiple of block_size " +
                           std::to_string(block_size));
  }
  if (dims == 2 && (rows % block_size != 0 || cols % block_size != 0)) {
    throw invalid_argument(std::string(function) + ": a " + std::to_string(rows) + " × " + std::to_string(cols) +
                           " matrix is not made of " + std::to_string(block_size) + " × " + std::to_string(block_size) +
                           " tiles");
  }
  if (dims == 2) {  // a tile's transpose holds the same values: one orientation says it all
    const std::size_t across = cols / block_size, tile = block_size * block_size;
    return detail::max_dynamic_range_of_blocks(n / tile, tile, [&](std::size_t t, std::size_t i) {
      const std::size_t r = (t / across) * block_size + i / block_size, c = (t % across) * block_size + i % block_size;
      return x[r * ldx + c];
    });
  }
  const double by_rows =
      detail::max_dynamic_range_of_blocks(n / block_size, block_size, [&](std::size_t b, std::size_t i) {
        const std::size_t k = b * block_size + i;  // in row-major order
        return x[(k / cols) * ldx + k % cols];
      });
  if (!max_over_orientations || by_rows != by_rows) return by_rows;
  const double by_columns =
      detail::max_dynamic_range_of_blocks(n / block_size, block_size, [&](std::size_t b, std::size_t i) {
        const std::size_t k = b * block_size + i;  // in column-major order
        return x[(k % rows) * ldx + k / rows];
      });
  return by_columns != by_columns ? by_columns : std::max(by_rows, by_columns);
}

// The statistics as one JSON object with TE's stat names: {"numel", "min", "max", "mean", "std",
// "l1_norm", "l2_norm", "cur_amax", "dynamic_range", "underflows_num", "underflows%",
// "overflows_num", "overflows%", "mse", "total_square_error", "scale_inv_min", "scale_inv_max"};
// inf and NaN as the strings "inf", "-inf", "nan" (detail/text.hpp).
inline std::string to_json(const quantization_report& r) {
  using detail::json_number;
  const tensor_statistics& t = r.tensor;
  const quantization_statistics& q = r.quantization;
  std::string out = "{\"numel\": " + std::to_string(t.numel);
  const auto field = [&out](const char* name, double value) {
    out.append(", \"").append(name).append("\": ").append(json_number(value));
  };
  field("min", t.min);
  field("max", t.max);
  field("mean", t.mean);
  field("std", t.std);
  field("l1_norm", t.l1_norm);
  field("l2_norm", t.l2_norm);
  field("cur_amax", t.amax);
  field("dynamic_range", t.dynamic_range);
  out.append(", \"underflows_num\": ").append(std::to_string(q.underflows));
  field("underflows%", q.underflows_percent);
  out.append(", \"overflows_num\": ").append(std::to_string(q.overflows));
  field("overflows%", q.overflows_percent);
  field("mse", q.mse);
  field("total_square_error", q.total_square_error);
  field("scale_inv_min", q.scale_inv_min);
  field("scale_inv_max", q.scale_inv_max);
  out.push_back('}');
  return out;
}

}  // namespace mixprec
