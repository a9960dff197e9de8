// Unscaling gradients in place with the non-finite check fused into the same pass.
//
//   inverse_scale(scale)                          float(1.0 / double(scale)), as PyTorch
//   unscale_and_check(grads, n, inv_scale)        one array of float, bfloat16 or float16
//   unscale_and_check(views, count, inv_scale)    many arrays (pointer/length pairs, element
//                                                 types mixed), as PyTorch's multi-tensor kernel
//   gradient_views_of(matrix)                     the arrays of an Eigen matrix, map or block
//
// Each returns true when every gradient was finite.  The rule is PyTorch's
// (_amp_foreach_non_finite_check_and_unscale_cpu_kernel in
// aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp; the CUDA kernels in
// aten/src/ATen/native/cuda/AmpKernels.cu do the same): each value is read as float and checked
// *before* the multiply, the product is taken in float, and a bfloat16/float16 gradient is
// rounded back (nearest-even there; here the mode in unscale_options).  When inv_scale is
// exactly 1 nothing is multiplied or written: the pass only checks (no_scaling, static scale 1).
//
// float gradients run on the bulk kernels of the active SIMD path (bulk/simd_path.hpp:
// portable, AVX2, AVX-512; bulk/kernels.inl multiply_in_place: the exponent test as a running
// maximum of |g| beside the multiply); bfloat16/float16 gradients are decoded to float blocks,
// then multiplied and re-encoded by the same kernels as quantize_n.  Large calls can be
// split over threads (unscale_options::threads; detail/parallel.hpp); results do not depend on
// the split.
//
// Functions written `template <int = 0>` are compiled only in a file that calls them
// (docs/design.md, "Compiled where called").
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../bulk/dispatch.hpp"
#include "../bulk/simd_path.hpp"
#include "../convert.hpp"
#include "../detail/bits.hpp"
#include "../detail/extent.hpp"
#include "../detail/parallel.hpp"
#include "../dtype.hpp"
#include "../errors.hpp"
#include "../types.hpp"

namespace mixprec {

// inv_scale as torch/amp/grad_scaler.py computes it (GradScaler.unscale_:
// `self._scale.double().reciprocal().float()`): the reciprocal in double, rounded once to float,
// so that unscaled values match PyTorch bit for bit.
inline float inverse_scale(float scale) noexcept { return static_cast<float>(1.0 / static_cast<double>(scale)); }

// One array of gradients: where it is, how many, and of which dtype (dtype.hpp): float32,
// bfloat16 or float16, the three types a gradient array may hold.
class gradient_view {
 public:
  gradient_view(float* data, std::size_t size) noexcept : data_(data), size_(size), type_(dtype::float32) {}
  gradient_view(bfloat16* data, std::size_t size) noexcept : data_(data), size_(size), type_(dtype::bfloat16) {}
  gradient_view(float16* data, std::size_t size) noexcept : data_(data), size_(size), type_(dtype::float16) {}

  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  dtype type() const noexcept { return type_; }

 private:
  void* data_;
  std::size_t size_;
  dtype type_;
};

struct unscale_options {
  // How a bfloat16/float16 gradient is rounded back after the float multiply (PyTorch:
  // nearest_even).  float gradients are never rounded twice: the multiply is the only rounding.
  rounding gradient_rounding = rounding::nearest_even;
  // Threads for one call (1: the caller's thread only; 0: one per hardware thread).  A call is
  // split only when every thread gets at least unscale_elements_per_thread elements.
  unsigned threads = 1;
};

constexpr std::size_t unscale_elements_per_thread = std::size_t{1} << 18;

namespace detail {

// The path for this call: active_simd_path(), or portable if MIXPREC_SIMD_PATH is invalid
// (bulk conversion reports that; unscaling must not fail for it).
template <int = 0>
simd_path unscale_simd_path() noexcept {
  try {
    return active_simd_path();
  } catch (...) {
    return simd_path::portable;
  }
}

// The bits of +infinity, which are also float's exponent field: |x| as bits is at least this
// exactly when x is inf or NaN.
constexpr std::uint32_t float_infinity_bits = 0x7F80'0000u;

// |x| as float bits: ordered as the magnitudes are, inf's bits below every NaN's.
inline std::uint32_t magnitude_bits(float x) noexcept { return bit_cast<std::uint32_t>(x) & 0x7FFF'FFFFu; }

// One element at a time; returns the largest |g| before the multiply as float bits (at least
// float_infinity_bits if an element was inf or NaN).
template <bool Multiply>
inline std::uint32_t unscale_float_one_by_one(float* g, std::size_t n, float inv_scale) noexcept {
  std::uint32_t largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    largest = std::max(largest, magnitude_bits(g[i]));
    if constexpr (Multiply) g[i] = g[i] * inv_scale;
  }
  return largest;
}

// float gradients: the bulk kernels' multiply_in_place (bulk/kernels.inl) on the active path,
// which returns the largest |g| (inf or NaN: at least the bits of infinity), as this does.
template <bool Multiply>
inline std::uint32_t unscale_float(float* g, std::size_t n, float inv_scale) noexcept {
  std::uint32_t largest = 0;
  // The elements before the first 64-byte boundary go one by one, so that no vector load or
  // store of the kernel splits a cache line (a split store costs two line writes).
  const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(g) % 64;
  if (misalignment != 0 && misalignment % sizeof(float) == 0) {
    const std::size_t head = std::min(n, (64 - misalignment) / sizeof(float));
    largest = unscale_float_one_by_one<Multiply>(g, head, inv_scale);
    g += head;
    n -= head;
  }
  const bool vectorised = with_kernels(unscale_simd_path(), [&](auto target) {
    largest = std::max(largest, decltype(target)::template multiply_in_place<Multiply>(g, n, inv_scale));
  });
  if (!vectorised) largest = std::max(largest, unscale_float_one_by_one<Multiply>(g, n, inv_scale));
  return largest;
}

// bfloat16 / float16: widen exactly, check, multiply in float, round back once.  On the bulk
// kernels (bulk/dispatch.hpp) a block is decoded into a float buffer and re-encoded by quantize's
// scaled encoder, which multiplies in float, rounds with the requested mode and returns the
// largest |x| as float bits (inf or NaN: at least float_infinity_bits); every path gives the scalar
// loop's bits (tests/scaling/unscale_paths_test.cpp).
constexpr std::size_t unscale_narrow_block = 512;

template <class T, bool Multiply>
inline std::uint32_t unscale_narrow(T* g, std::size_t n, float inv_scale, rounding r) noexcept {
  std::uint32_t largest = 0;
  const bool vectorised = with_kernels(unscale_simd_path(), [&](auto target) {
    using Target = decltype(target);
    alignas(64) float widened[unscale_narrow_block];
    for (std::size_t i = 0; i < n; i += unscale_narrow_block) {
      const std::size_t m = std::min(unscale_narrow_block, n - i);
      decode_on<Target>(g + i, m, widened, false);
      if constexpr (Multiply) {
        largest = std::max(largest, Target::template encode_from_float<T, true>(
                                        widened, m, g + i, r, overflow::non_finite, false, inv_scale));
      } else {
        largest = std::max(largest, Target::template multiply_in_place<false>(widened, m, inv_scale));
      }
    }
  });
  if (vectorised) return largest;
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<float>(g[i]);
    largest = std::max(largest, magnitude_bits(x));
    if constexpr (Multiply) g[i] = convert<T>(x * inv_scale, r);
  }
  return largest;
}

// The largest |g| of the part before the multiply, as float bits (inf or NaN: at least
// float_infinity_bits).  Not `inline`: the compiled mode (docs/design.md) declares its two
// instantiations extern below.
template <bool Multiply>
std::uint32_t unscale_part(const gradient_view& v, std::size_t begin, std::size_t end, float inv_scale,
                           rounding r) noexcept {
  switch (v.type()) {
    case dtype::float32:
      return unscale_float<Multiply>(static_cast<float*>(v.data()) + begin, end - begin, inv_scale);
    case dtype::bfloat16:
      return unscale_narrow<bfloat16, Multiply>(static_cast<bfloat16*>(v.data()) + begin, end - begin, inv_scale, r);
    case dtype::float16:
      return unscale_narrow<float16, Multiply>(static_cast<float16*>(v.data()) + begin, end - begin, inv_scale, r);
    default:  // a gradient_view holds no other dtype
      break;
  }
  return 0;
}

// The unscale kernels of every gradient type and SIMD path, which mixprec::compiled builds once
// (src/compiled/unscale.cpp); EXTERN is `extern` or nothing.
#define MIXPREC_UNSCALE_INSTANTIATIONS(EXTERN)                                                             \
  EXTERN template std::uint32_t unscale_part<false>(const gradient_view&, std::size_t, std::size_t, float, \
                                                    rounding) noexcept;                                    \
  EXTERN template std::uint32_t unscale_part<true>(const gradient_view&, std::size_t, std::size_t, float,  \
                                                   rounding) noexcept;
#if defined(MIXPREC_COMPILED)
MIXPREC_UNSCALE_INSTANTIATIONS(extern)
#endif

// Runs unscale_part over the elements [first, last) of the concatenation of the arrays; true
// when every one was finite.  With `largest`, largest[a] = max(largest[a], the part's largest
// |g| bits) for each array a the share touches.
template <int = 0>
bool unscale_share(const gradient_view* arrays, std::size_t count, std::size_t first, std::size_t last, float inv_scale,
                   rounding r, std::uint32_t* largest = nullptr) noexcept {
  bool finite = true;
  std::size_t offset = 0;
  for (std::size_t a = 0; a < count && offset < last; ++a) {
    const std::size_t size = arrays[a].size();
    const std::size_t begin = std::max(first, offset), end = std::min(last, offset + size);
    if (begin < end) {
      const std::uint32_t part = inv_scale == 1.0f
                                     ? unscale_part<false>(arrays[a], begin - offset, end - offset, inv_scale, r)
                                     : unscale_part<true>(arrays[a], begin - offset, end - offset, inv_scale, r);
      if (part >= float_infinity_bits) finite = false;
      if (largest != nullptr) largest[a] = std::max(largest[a], part);
    }
    offset += size;
  }
  return finite;
}

// An array's amax after the unscale from its largest |g| before it (as float bits): NaN for a
// NaN, inf for an inf, else float(|g|) × inv_scale in float.
template <int = 0>
float unscaled_amax(std::uint32_t largest, float inv_scale) noexcept {
  if (largest > float_infinity_bits) return std::numeric_limits<float>::quiet_NaN();
  if (largest == float_infinity_bits) return std::numeric_limits<float>::infinity();
  return bit_cast<float>(largest) * inv_scale;
}

template <int = 0>
void check_gradient_views(const char* function, const gradient_view* arrays, std::size_t count) {
  if (count > 0 && arrays == nullptr) {
    throw invalid_argument(std::string(function) + ": null array list with count = " + std::to_string(count));
  }
  // The views' sizes are checked one by one and summed without wrapping: the unscale splits the
  // concatenation of the arrays by element index.
  std::size_t total = 0;
  for (std::size_t a = 0; a < count; ++a) {
    const gradient_view& v = arrays[a];
    if (v.data() == nullptr && v.size() > 0) {
      throw invalid_argument(std::string(function) + ": array " + std::to_string(a) + " of " + std::to_string(count) +
                             " is a null pointer with size " + std::to_string(v.size()));
    }
    const std::size_t element_size = v.type() == dtype::float32 ? sizeof(float) : sizeof(std::uint16_t);
    if (!array_fits(v.data(), v.size(), element_size)) {
      check_array_extent(function, ("gradient " + std::to_string(a)).c_str(), v.data(), v.size(), element_size);
    }
    if (v.size() > std::numeric_limits<std::size_t>::max() - total) {
      throw invalid_argument(std::string(function) + ": the " + std::to_string(count) +
                             " gradient arrays hold more than " +
                             std::to_string(std::numeric_limits<std::size_t>::max()) + " elements together");
    }
    total += v.size();
  }
}

}  // namespace detail

namespace detail {

template <int = 0>
bool unscale_views(const gradient_view* arrays, std::size_t count, float inv_scale, float* amax,
                   const unscale_options& options) {
  if (count == 0) return true;
  std::size_t total = 0;
  for (std::size_t a = 0; a < count; ++a) total += arrays[a].size();
  // Shares of whole cache lines (multiples of 64 elements), one per thread, the caller's first;
  // a thread that cannot be started leaves its share to the caller (detail/parallel.hpp).
  const work_split split = split_work(total, resolve_thread_count(options.threads), unscale_elements_per_thread, 64);
  // With amax: each share's largest |g| per array (an array can span shares), merged below.
  std::vector<std::uint32_t> largest(amax != nullptr ? split.count * count : 0, 0u);
  const auto largest_of = [&](std::size_t share) { return amax != nullptr ? largest.data() + share * count : nullptr; };
  bool finite = true;
  if (split.count == 1) {
    finite = unscale_share(arrays, count, 0, total, inv_scale, options.gradient_rounding, largest_of(0));
  } else {
    std::vector<unsigned char> share_finite(split.count, 1);
    run_chunks(split, [&](std::size_t share, std::size_t first, std::size_t last) {
      share_finite[share] =
          unscale_share(arrays, count, first, last, inv_scale, options.gradient_rounding, largest_of(share));
    });
    finite = std::all_of(share_finite.begin(), share_finite.end(), [](unsigned char f) { return f != 0; });
  }
  if (amax != nullptr) {
    for (std::size_t a = 0; a < count; ++a) {
      std::uint32_t bits = 0;
      for (std::size_t share = 0; share < split.count; ++share) bits = std::max(bits, largest[share * count + a]);
      amax[a] = unscaled_amax(bits, inv_scale);
    }
  }
  return finite;
}

}  // namespace detail

// Unscales every array in place (x * inv_scale in float, rounded back for bfloat16/float16)
// and returns true when every value was finite before the multiply.
template <int = 0>
bool unscale_and_check(const gradient_view* arrays, std::size_t count, float inv_scale,
                       const unscale_options& options = {}) {
  detail::check_gradient_views("unscale_and_check", arrays, count);
  return detail::unscale_views(arrays, count, inv_scale, nullptr, options);
}

// The same pass, and each array's amax on the way (Transformer Engine's per-tensor amax of the
// gradients, without a second read): amax[a] = float(max |g|) × inv_scale in float, the largest
// unscaled magnitude of array a before any rounding back to bfloat16/float16 (rounding is
// monotonic, so under nearest_even it rounds to the largest stored magnitude); +inf when the
// array held an inf and no NaN, NaN when it held a NaN, 0 when it is empty or all zeros.
template <int = 0>
bool unscale_and_check(const gradient_view* arrays, std::size_t count, float inv_scale, float* amax,
                       const unscale_options& options = {}) {
  detail::check_gradient_views("unscale_and_check", arrays, count);
  if (count > 0 && amax == nullptr) {
    throw invalid_argument("unscale_and_check: null amax pointer for " + std::to_string(count) + " arrays");
  }
  if (count > 0) detail::check_array_extent("unscale_and_check", "amax", amax, count);
  return detail::unscale_views(arrays, count, inv_scale, amax, options);
}

template <class T, class = std::enable_if_t<std::is_constructible<gradient_view, T*, std::size_t>::value>>
bool unscale_and_check(T* grads, std::size_t n, float inv_scale, const unscale_options& options = {}) {
  const gradient_view view(grads, n);
  if (grads == nullptr && n > 0) {
    throw invalid_argument("unscale_and_check: null gradient pointer with n = " + std::to_string(n));
  }
  return unscale_and_check(&view, 1, inv_scale, options);
}

namespace detail {

template <class Dense, class = void>
struct is_dense_like : std::false_type {};
template <class Dense>
struct is_dense_like<
    Dense, std::void_t<decltype(std::declval<Dense&>().data()), decltype(std::declval<Dense&>().innerStride()),
                       decltype(std::declval<Dense&>().outerStride()), decltype(std::declval<Dense&>().innerSize()),
                       decltype(std::declval<Dense&>().outerSize())>>
    : std::is_constructible<gradient_view, decltype(std::declval<Dense&>().data()), std::size_t> {};

}  // namespace detail

// The arrays of a dense Eigen object with direct access (Matrix, Array, Map, Ref, a Block of
// them): one view when it is contiguous, else one per column (row, if row-major).  Eigen itself
// is not included: anything with data(), innerStride(), outerStride(), innerSize() and
// outerSize() fits.
template <class Dense, class = std::enable_if_t<detail::is_dense_like<Dense>::value>>
std::vector<gradient_view> gradient_views_of(Dense& m) {
  const auto inner = static_cast<std::size_t>(m.innerSize()), outer = static_cast<std::size_t>(m.outerSize());
  if (m.innerStride() != 1 && inner > 1) {
    throw invalid_argument("gradient_views_of: inner stride " + std::to_string(m.innerStride()) +
                           "; only matrices whose inner dimension is contiguous can be unscaled in place");
  }
  std::vector<gradient_view> views;
  if (outer <= 1 || static_cast<std::size_t>(m.outerStride()) == inner) {
    views.emplace_back(m.data(), inner * outer);
  } else {
    views.reserve(outer);
    for (std::size_t j = 0; j < outer; ++j)
      views.emplace_back(m.data() + j * static_cast<std::size_t>(m.outerStride()), inner);
  }
  return views;
}

}  // namespace mixprec
