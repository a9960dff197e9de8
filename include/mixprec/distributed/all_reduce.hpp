// The MPI-free half of the gradient all-reduce (issue 19; mpi_all_reduce.hpp makes the calls):
// options and their checks, the bucket and shard plan, the encoding into the communication dtype
// and back, the owner's float reduction in rank order, the error bound, and a one-process
// emulation that defines the result.
//
//   all_reduce_options options;                    // bfloat16, 25 MiB buckets, averaged
//   emulate_all_reduce(ranks, p, n, options, out)   // what all_reduce_gradients gives every rank
//
// The scheme (docs/distributed.md): the float gradient arrays are concatenated in array order and
// cut into buckets of bucket_bytes / 4 elements; each bucket is cut into p contiguous shards,
// shard r (elements [m·r/p, m·(r+1)/p) of a bucket of m) owned by rank r.  Every rank encodes the
// bucket into the communication dtype and sends each owner its shard (a reduce-scatter made of
// point-to-point exchanges: MPI_Alltoallv); the owner decodes the p contributions to float and
// adds them in rank order, s = ((g_0 + g_1) + g_2) + ... + g_{p-1}, one float rounding per
// addition, divides by p if averaging (s / p, one rounding, exact for a power-of-two p), rounds
// the result once into the communication dtype, and every rank receives every owner's shard
// (MPI_Allgatherv) and decodes it.  Only bytes travel through MPI, never arithmetic: the result is
// independent of MPI's algorithms and of the order in which the ranks arrive.
//
// fp8 (float8_e4m3fn, float8_e5m2) is scaled per bucket: the bucket's amax over every rank (one
// MPI_Allreduce for all buckets) gives a power-of-two scale, 2^floor(log2(fp8_max / amax)) (TE's
// compute_scale_from_amax with force_pow_2_scales), so scaling and unscaling are exact; the sum's
// scale is taken from amax (averaging) or p·amax (summing) the same way.  Codes saturate.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../bulk/amax.hpp"
#include "../bulk/convert_n.hpp"
#include "../bulk/quantize.hpp"
#include "../dtype.hpp"
#include "../errors.hpp"
#include "../scaling/errors.hpp"
#include "../scaling/fp8/scale_rules.hpp"
#include "../scaling/unscale.hpp"
#include "../types.hpp"
#include "../scaling/all_reduce_options.hpp"

namespace mixprec {

namespace detail {

inline bool is_scaled_all_reduce_dtype(dtype d) noexcept {
  return d == dtype::float8_e4m3fn || d == dtype::float8_e5m2;
}

// Calls f(T{}) with T the element type of a communication dtype (float for float32).
template <class F>
void with_all_reduce_type(dtype d, F&& f) {
  switch (d) {
    case dtype::float32:
      return f(float{});
    case dtype::bfloat16:
      return f(bfloat16{});
    case dtype::float16:
      return f(float16{});
    case dtype::float8_e4m3fn:
      return f(float8_e4m3fn{});
    case dtype::float8_e5m2:
      return f(float8_e5m2{});
    default:
      throw invalid_argument(std::string("all_reduce_gradients: communication dtype ") + to_string(d) +
                             " is not one of float32, bfloat16, float16, float8_e4m3fn, float8_e5m2");
  }
}

inline std::size_t all_reduce_element_bytes(dtype d) {
  std::size_t bytes = 0;
  with_all_reduce_type(d, [&](auto t) { bytes = sizeof(t); });
  return bytes;
}

// The largest finite value of an fp8 communication dtype.
inline float all_reduce_fp8_max(dtype d) noexcept { return d == dtype::float8_e4m3fn ? 448.0f : 57344.0f; }

// The scale of a bucket whose values have magnitudes up to `amax`: a power of two (1 for 0, inf,
// NaN), so that x · scale and q · (1 / scale) are exact.
inline float all_reduce_scale(dtype d, float amax) noexcept {
  if (!is_scaled_all_reduce_dtype(d)) return 1.0f;
  return compute_scale_from_amax(amax, all_reduce_fp8_max(d), /*force_pow_2_scales=*/true, 0.0f, float_max);
}

// The scale of a reduced bucket: from amax when averaging, from p · amax (in double, rounded up
// to float) when summing.
inline float all_reduce_output_scale(dtype d, float amax, int world, bool average) noexcept {
  if (average || !std::isfinite(amax)) return all_reduce_scale(d, amax);
  const double bound = static_cast<double>(amax) * world;
  float as_float = static_cast<float>(bound);
  if (static_cast<double>(as_float) < bound)
    as_float = std::nextafter(as_float, std::numeric_limits<float>::infinity());
  return all_reduce_scale(d, as_float);
}

}  // namespace detail

// Checks the options for a world of `world` ranks; throws invalid_argument naming the value and
// the limit.
inline void validate(const all_reduce_options& options, int world) {
  const char* what = "all_reduce_gradients";
  if (!detail::is_all_reduce_dtype(options.communication)) {
    throw invalid_argument(std::string(what) + ": communication dtype " + to_string(options.communication) +
                           " is not one of float32, bfloat16, float16, float8_e4m3fn, float8_e5m2");
  }
  if (world < 1) throw invalid_argument(std::string(what) + ": world size " + std::to_string(world) + " is below 1");
  const std::size_t smallest = sizeof(float) * static_cast<std::size_t>(world);
  if (options.bucket_bytes < smallest) {
    throw invalid_argument(std::string(what) + ": bucket_bytes = " + std::to_string(options.bucket_bytes) +
                           " is below " + std::to_string(smallest) + " (one float per rank of " +
                           std::to_string(world) + ")");
  }
  if (options.bucket_bytes > all_reduce_largest_bucket_bytes) {
    throw invalid_argument(std::string(what) + ": bucket_bytes = " + std::to_string(options.bucket_bytes) +
                           " is above the largest, " + std::to_string(all_reduce_largest_bucket_bytes));
  }
}

// Elements per full bucket.
inline std::size_t bucket_elements(const all_reduce_options& options) noexcept {
  return options.bucket_bytes / sizeof(float);
}

// Shard r of a bucket of m elements over p ranks: [shard_begin(m, p, r), shard_begin(m, p, r + 1)).
inline std::size_t shard_begin(std::size_t m, int p, int r) noexcept {
  return m * static_cast<std::size_t>(r) / static_cast<std::size_t>(p);
}

namespace detail {

// Checks the gradient arrays (float32 only, no null pointer with elements) and returns their
// total length.
inline std::size_t all_reduce_total(const gradient_view* arrays, std::size_t count) {
  check_gradient_views("all_reduce_gradients", arrays, count);
  std::size_t total = 0;
  for (std::size_t a = 0; a < count; ++a) {
    if (arrays[a].type() != dtype::float32) {
      throw invalid_argument("all_reduce_gradients: array " + std::to_string(a) + " holds " +
                             to_string(arrays[a].type()) + " gradients; the all-reduce accumulates float32 arrays");
    }
    total += arrays[a].size();
  }
  return total;
}

// The words every rank contributes to the agreement before an exchange (MPI_MAX / ncclMax over
// them and their complements gives each word's maximum and minimum in one collective): whether
// this rank rejected its arguments, the total length, bucket_bytes, the dtype and averaging.
constexpr int all_reduce_agreed_words = 5;

inline void all_reduce_agreement_words(bool rejected, std::size_t total, const all_reduce_options& options,
                                       std::uint64_t (&words)[2 * all_reduce_agreed_words]) noexcept {
  const std::uint64_t mine[all_reduce_agreed_words] = {
      rejected ? 1u : 0u, static_cast<std::uint64_t>(total), static_cast<std::uint64_t>(options.bucket_bytes),
      static_cast<std::uint64_t>(options.communication), options.average ? 1u : 0u};
  for (int i = 0; i < all_reduce_agreed_words; ++i) {
    words[i] = mine[i];
    words[all_reduce_agreed_words + i] = ~mine[i];
  }
}

// Checks the agreed maxima (of the words and of their complements) on a rank whose own arguments
// were accepted: another rank's rejection, different totals, different options.
inline void check_all_reduce_agreement(const std::uint64_t (&global)[2 * all_reduce_agreed_words], const char* what) {
  constexpr int n = all_reduce_agreed_words;
  if (global[0] != 0) {
    throw agreement_error(std::string(what) + ": another rank rejected its arguments (its exception says why)");
  }
  const std::uint64_t most = global[1], least = ~global[n + 1];
  if (most != least) {
    throw invalid_argument(std::string(what) + ": the ranks' gradient arrays hold between " + std::to_string(least) +
                           " and " + std::to_string(most) +
                           " elements in total; every rank must pass arrays of the same lengths");
  }
  for (int i = 2; i < n; ++i) {
    if (global[i] != ~global[n + i]) {
      throw invalid_argument(std::string(what) +
                             ": the ranks passed different options (communication dtype, bucket_bytes or average); "
                             "every rank must pass the same");
    }
  }
}

// Walks the concatenation of the arrays: each call of for_each visits the pieces of elements
// [begin, begin + n), in order, as f(float* data, std::size_t offset_in_range, std::size_t size).
// Ranges must be visited in increasing order (the cursor only moves forward).
class array_cursor {
 public:
  array_cursor(const gradient_view* arrays, std::size_t count) noexcept : arrays_(arrays), count_(count) {}

  template <class F>
  void for_each(std::size_t begin, std::size_t n, F&& f) {
    while (index_ < count_ && start_ + arrays_[index_].size() <= begin) start_ += arrays_[index_++].size();
    std::size_t a = index_, a_start = start_, done = 0;
    while (done < n && a < count_) {
      const std::size_t size = arrays_[a].size();
      const std::size_t from = begin + done - a_start;
      if (from < size) {
        const std::size_t piece = std::min(size - from, n - done);
        f(static_cast<float*>(arrays_[a].data()) + from, done, piece);
        done += piece;
      }
      a_start += size;
      ++a;
    }
  }

 private:
  const gradient_view* arrays_;
  std::size_t count_;
  std::size_t index_ = 0, start_ = 0;
};

// Encodes n floats into the communication dtype (x · scale, nearest-even; bfloat16 and float16
// overflow to inf, fp8 saturates); returns max |x| as float (NaN if any x is NaN).
inline float all_reduce_encode(dtype d, const float* in, std::size_t n, void* out, float scale) {
  float amax = 0.0f;
  with_all_reduce_type(d, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same<T, float>::value) {
      if (n > 0) std::memcpy(out, in, n * sizeof(float));
    } else if constexpr (std::is_same<T, bfloat16>::value || std::is_same<T, float16>::value) {
      amax = quantize_n(in, n, static_cast<T*>(out), 1.0f, rounding::nearest_even, overflow::non_finite);
    } else {
      amax = quantize_n(in, n, static_cast<T*>(out), scale, rounding::nearest_even, overflow::saturate);
    }
  });
  return amax;
}

// The owner's final rounding: encodes the reduced shard and returns whether it holds a value
// that is not finite after encoding (inf or NaN in the sum, or a bfloat16/float16 overflow).
inline bool all_reduce_encode_checked(dtype d, const float* in, std::size_t n, void* out, float scale) {
  const float amax = d == dtype::float32 ? amax_n(in, n) : all_reduce_encode(d, in, n, out, scale);
  if (d == dtype::float32 && n > 0) std::memcpy(out, in, n * sizeof(float));
  // The smallest magnitude that rounds to inf (nearest-even): max + half an ulp.
  float limit = std::numeric_limits<float>::infinity();
  if (d == dtype::bfloat16) limit = 0x1.ffp127f;
  if (d == dtype::float16) limit = 65520.0f;
  return !(amax < limit);
}

// Decodes n values of the communication dtype into floats (q · scale_inv, exact).
inline void all_reduce_decode(dtype d, const void* in, std::size_t n, float* out, float scale_inv) {
  with_all_reduce_type(d, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same<T, float>::value) {
      if (n > 0) std::memcpy(out, in, n * sizeof(float));
    } else if constexpr (std::is_same<T, bfloat16>::value || std::is_same<T, float16>::value) {
      convert_n(static_cast<const T*>(in), n, out);
    } else {
      dequantize_n(static_cast<const T*>(in), n, out, scale_inv);
    }
  });
}

// The owner's reduction: `pieces` holds p encoded pieces of n elements each, rank 0's first;
// sum[i] = ((g_0[i] + g_1[i]) + ...) + g_{p-1}[i] in float, then / p when averaging (a
// multiplication by 1/p when p is a power of two: exact, so the same bits).  Blocks of
// all_reduce_sum_block elements are decoded and added while they are in cache.
constexpr std::size_t all_reduce_sum_block = 8192;

inline void all_reduce_sum(dtype d, const unsigned char* pieces, int p, std::size_t n, float scale_inv, bool average,
                           float* sum) {
  const std::size_t width = all_reduce_element_bytes(d);
  const std::size_t piece_bytes = n * width;
  const bool divide = average && p > 1;
  const auto divisor = static_cast<float>(p);
  const bool power_of_two = (p & (p - 1)) == 0;
  const float reciprocal = 1.0f / divisor;
  std::vector<float> scratch(std::min(n, all_reduce_sum_block));
  for (std::size_t begin = 0; begin < n; begin += all_reduce_sum_block) {
    const std::size_t size = std::min(all_reduce_sum_block, n - begin);
    float* out = sum + begin;
    all_reduce_decode(d, pieces + begin * width, size, out, scale_inv);
    for (int r = 1; r < p; ++r) {
      all_reduce_decode(d, pieces + static_cast<std::size_t>(r) * piece_bytes + begin * width, size, scratch.data(),
                        scale_inv);
      const float* add = scratch.data();
      for (std::size_t i = 0; i < size; ++i) out[i] += add[i];
    }
    if (divide && power_of_two) {
      for (std::size_t i = 0; i < size; ++i) out[i] *= reciprocal;
    } else if (divide) {
      for (std::size_t i = 0; i < size; ++i) out[i] /= divisor;
    }
  }
}

}  // namespace detail

// The error bound of one element (docs/distributed.md, "Error bound"): with g_r rank r's float
// gradient, S = Σ g_r (exact), A = Σ |g_r|, d = p when averaging and 1 when summing, the result y
// of a bfloat16, float16 or fp8 all-reduce satisfies
//
//   |y − S/d| ≤ u_c·|S|/d + η_out + (1 + u_c)·[(1 + u_f)/d·(u_c·A + p·η_in + γ_{p−1}·((1 + u_c)·A
//               + p·η_in)) + u_f·|S|/d]
//
// where u_c is the unit roundoff of the communication dtype (2^-8 bfloat16, 2^-11 float16,
// 2^-4 e4m3, 2^-3 e5m2), u_f = 2^-24, γ_k = k·u_f / (1 − k·u_f), and η = half the smallest
// subnormal of the dtype divided by the bucket's input (η_in) or output (η_out) scale: the
// absolute error of rounding near zero.  It holds for finite results that do not overflow the
// dtype and away from float's own subnormal range.  float32 communication has no error beyond the
// documented summation order: it returns the rank-ordered float sum exactly.
struct all_reduce_bound_terms {
  double u_c = 0, eta_in = 0, eta_out = 0;
};

inline all_reduce_bound_terms all_reduce_terms(dtype d, float input_scale, float output_scale) {
  all_reduce_bound_terms t;
  double smallest_subnormal = 0;
  switch (d) {
    case dtype::float32:
      return t;
    case dtype::bfloat16:
      t.u_c = std::ldexp(1.0, -8), smallest_subnormal = std::ldexp(1.0, -133);
      break;
    case dtype::float16:
      t.u_c = std::ldexp(1.0, -11), smallest_subnormal = std::ldexp(1.0, -24);
      break;
    case dtype::float8_e4m3fn:
      t.u_c = std::ldexp(1.0, -4), smallest_subnormal = std::ldexp(1.0, -9);
      break;
    case dtype::float8_e5m2:
      t.u_c = std::ldexp(1.0, -3), smallest_subnormal = std::ldexp(1.0, -16);
      break;
    default:
      detail::with_all_reduce_type(d, [](auto) {});  // throws: not a communication dtype
  }
  t.eta_in = smallest_subnormal / 2 / input_scale;
  t.eta_out = smallest_subnormal / 2 / output_scale;
  return t;
}

inline double all_reduce_error_bound(const all_reduce_bound_terms& t, int p, bool average, double exact_sum,
                                     double magnitude_sum) {
  const double u_f = std::ldexp(1.0, -24);
  const double gamma = (p - 1) * u_f / (1 - (p - 1) * u_f);
  const double d = average ? p : 1;
  const double s = std::fabs(exact_sum) / d;
  const double inner = t.u_c * magnitude_sum + p * t.eta_in + gamma * ((1 + t.u_c) * magnitude_sum + p * t.eta_in);
  return t.u_c * s + t.eta_out + (1 + t.u_c) * ((1 + u_f) / d * inner + u_f * s);
}

// The scales of one bucket from its amax over every rank: {input scale, output scale}.
struct bucket_scales {
  float input = 1.0f, output = 1.0f;
};

inline bucket_scales scales_of_bucket(dtype d, float amax, int world, bool average) noexcept {
  return {detail::all_reduce_scale(d, amax), detail::all_reduce_output_scale(d, amax, world, average)};
}

// What all_reduce_gradients gives every rank, computed in one process: ranks[r] points to rank
// r's n gradients (the concatenation of its arrays), out receives n floats.  The same buckets,
// scales, encoding, rank-ordered sum and decoding; returns found_inf.  When it is true, every
// element of out is a quiet NaN.
inline bool emulate_all_reduce(const float* const* ranks, int p, std::size_t n, const all_reduce_options& options,
                               float* out) {
  validate(options, p);
  if (p > 0 && ranks == nullptr)
    throw invalid_argument("emulate_all_reduce: null rank list with p = " + std::to_string(p));
  const dtype d = options.communication;
  const std::size_t width = detail::all_reduce_element_bytes(d);
  const std::size_t per_bucket = bucket_elements(options);
  const std::size_t buckets = (n + per_bucket - 1) / per_bucket;
  // The agreed amaxes (fp8 only): the largest magnitude bits over the ranks, as MPI_MAX does.
  std::vector<std::uint32_t> amax_bits(detail::is_scaled_all_reduce_dtype(d) ? buckets : 0, 0u);
  bool found_inf = false;
  for (std::size_t b = 0; b < amax_bits.size(); ++b) {
    const std::size_t begin = b * per_bucket, m = std::min(per_bucket, n - begin);
    for (int r = 0; r < p; ++r) {
      amax_bits[b] = std::max(amax_bits[b], detail::magnitude_bits(amax_n(ranks[r] + begin, m)));
    }
    found_inf = found_inf || amax_bits[b] >= detail::float_infinity_bits;
  }
  std::vector<unsigned char> pieces, encoded;
  std::vector<float> sum;
  for (std::size_t b = 0; b < buckets && !found_inf; ++b) {
    const std::size_t begin = b * per_bucket, m = std::min(per_bucket, n - begin);
    const float amax = amax_bits.empty() ? 0.0f : detail::magnitude_from_bits(amax_bits[b]);
    const bucket_scales scale = scales_of_bucket(d, amax, p, options.average);
    for (int owner = 0; owner < p; ++owner) {
      const std::size_t s0 = shard_begin(m, p, owner), size = shard_begin(m, p, owner + 1) - s0;
      pieces.resize(static_cast<std::size_t>(p) * size * width);
      for (int r = 0; r < p; ++r) {
        detail::all_reduce_encode(d, ranks[r] + begin + s0, size,
                                  pieces.data() + static_cast<std::size_t>(r) * size * width, scale.input);
      }
      sum.resize(size);
      detail::all_reduce_sum(d, pieces.data(), p, size, 1.0f / scale.input, options.average, sum.data());
      encoded.resize(size * width);
      found_inf = detail::all_reduce_encode_checked(d, sum.data(), size, encoded.data(), scale.output) || found_inf;
      detail::all_reduce_decode(d, encoded.data(), size, out + begin + s0, 1.0f / scale.output);
    }
  }
  if (found_inf) std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
  return found_inf;
}

}  // namespace mixprec
