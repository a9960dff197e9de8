// Which gradient made a check fail: the first inf or NaN of a list of gradient arrays, by
// array and element, and its kind (issue "Diagnostics": "Gradient overflow. Skipping step" names
// no tensor in any framework).
//
//   if (!unscale_and_check(views, count, inv_scale)) {
//     const auto culprit = find_first_nonfinite(views, count);   // array 3, element 517, +inf
//   }
//
// The search runs only after a check has failed, so the check itself keeps its cost: nothing is
// recorded on a step whose gradients are finite, and the search stops at the first non-finite
// element (it reads up to it, and that only on a skipped step).  loss_scaler::unscale makes it on
// every failed check and keeps the result in its statistics (loss_scaler.hpp).
//
// After an unscale in place the arrays hold x × inv_scale: an inf or NaN stays what it was (the
// product of ±inf and a positive finite inv_scale is ±inf of the same sign, NaN stays NaN, and
// rounding back to bfloat16/float16 keeps both), and with inv_scale <= 1 (a loss scale of at
// least 1, where dynamic scalers live) a finite gradient stays finite, so the element found is
// exactly the first one that the check, made before the multiply, found non-finite.  With
// inv_scale > 1 a finite gradient that the multiply takes past the format's range is ±inf
// afterwards, and may be found first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

#include "../detail/extent.hpp"
#include "../dtype.hpp"
#include "../errors.hpp"
#include "unscale.hpp"

namespace mixprec {

enum class nonfinite_kind : unsigned char { positive_infinity, negative_infinity, nan };

constexpr const char* to_string(nonfinite_kind k) noexcept {
  switch (k) {
    case nonfinite_kind::positive_infinity:
      return "+inf";
    case nonfinite_kind::negative_infinity:
      return "-inf";
    case nonfinite_kind::nan:
      return "nan";
  }
  return "invalid nonfinite_kind";
}

// One non-finite element of a list of arrays: arrays[view] at index element.
struct nonfinite_element {
  std::size_t view = 0;
  std::size_t element = 0;
  nonfinite_kind kind = nonfinite_kind::nan;

  friend bool operator==(const nonfinite_element& a, const nonfinite_element& b) {
    return a.view == b.view && a.element == b.element && a.kind == b.kind;
  }
  friend bool operator!=(const nonfinite_element& a, const nonfinite_element& b) { return !(a == b); }
};

// A culprit agreed across processes (an Agreement's first_culprit, loss_scaler.hpp): the
// element, and the rank, in the agreement's communicator, of the process whose gradient it is.
struct ranked_nonfinite {
  nonfinite_element element;
  int rank = 0;
};

// Of the processes' first non-finite elements, the smallest (view, element, rank): the one every
// process reports.  `locals[r]` is rank r's, if it found one.
inline std::optional<ranked_nonfinite> smallest_culprit(const std::optional<nonfinite_element>* locals, int ranks) {
  std::optional<ranked_nonfinite> best;
  for (int r = 0; r < ranks; ++r) {
    const std::optional<nonfinite_element>& e = locals[r];
    if (!e) continue;
    if (!best || e->view < best->element.view ||
        (e->view == best->element.view && e->element < best->element.element)) {
      best = ranked_nonfinite{*e, r};
    }
  }
  return best;
}

// "array 3, element 517 (+inf)"
inline std::string to_string(const nonfinite_element& e) {
  return "array " + std::to_string(e.view) + ", element " + std::to_string(e.element) + " (" + to_string(e.kind) + ")";
}

namespace detail {

// The first of the `count` codes at bytes + first · sizeof(Code) whose exponent field (the bits
// of `exponent`) is all ones, which the caller knows is there: its index and kind.  The codes
// are read through memcpy (no aliasing of the caller's float or bfloat16 objects), which
// compiles to plain loads.
template <class Code>
nonfinite_element locate_nonfinite(const unsigned char* bytes, std::size_t first, std::size_t count, Code exponent,
                                   std::size_t view) noexcept {
  constexpr Code sign = static_cast<Code>(Code{1} << (8 * sizeof(Code) - 1));
  Code code = 0;
  std::size_t i = first;
  for (; i < first + count; ++i) {
    std::memcpy(&code, bytes + i * sizeof(Code), sizeof(Code));
    if ((code & exponent) == exponent) break;
  }
  const nonfinite_kind kind = static_cast<Code>(code & static_cast<Code>(~sign)) != exponent ? nonfinite_kind::nan
                              : (code & sign) != 0 ? nonfinite_kind::negative_infinity
                                                   : nonfinite_kind::positive_infinity;
  return nonfinite_element{view, i, kind};
}

// The first non-finite element of one array, if any.  Blocks of 4096 elements go through
// unscale's check pass (unscale_part without the multiply: the same SIMD kernels, which only
// read the array and return its largest magnitude), at the speed of the fused pass; only the
// block that holds an inf or NaN is searched element by element.
inline std::optional<nonfinite_element> first_nonfinite_of(const gradient_view& v, std::size_t view) noexcept {
  constexpr std::size_t block = 4096;
  const auto* bytes = static_cast<const unsigned char*>(v.data());
  for (std::size_t first = 0; first < v.size(); first += block) {
    const std::size_t count = std::min(block, v.size() - first);
    if (unscale_part<false>(v, first, first + count, 1.0f, rounding::nearest_even) < float_infinity_bits) continue;
    switch (v.type()) {  // the exponent fields: float's 8 bits, bfloat16's 8, float16's 5
      case dtype::float32:
        return locate_nonfinite<std::uint32_t>(bytes, first, count, 0x7F80'0000u, view);
      case dtype::bfloat16:
        return locate_nonfinite<std::uint16_t>(bytes, first, count, 0x7F80u, view);
      default:
        return locate_nonfinite<std::uint16_t>(bytes, first, count, 0x7C00u, view);
    }
  }
  return std::nullopt;
}

}  // namespace detail

// The first inf or NaN in arrays[0], arrays[1], ... (in that order), or nothing when every
// value is finite.  The arrays are checked as unscale_and_check checks them.
inline std::optional<nonfinite_element> find_first_nonfinite(const gradient_view* arrays, std::size_t count) {
  detail::check_gradient_views("find_first_nonfinite", arrays, count);
  for (std::size_t a = 0; a < count; ++a) {
    if (const std::optional<nonfinite_element> found = detail::first_nonfinite_of(arrays[a], a)) return found;
  }
  return std::nullopt;
}

// One array of float, bfloat16 or float16 (view 0).
template <class T, class = std::enable_if_t<std::is_constructible<gradient_view, T*, std::size_t>::value>>
std::optional<nonfinite_element> find_first_nonfinite(const T* data, std::size_t n) {
  if (data == nullptr && n > 0) {
    throw invalid_argument("find_first_nonfinite: null array pointer with n = " + std::to_string(n));
  }
  detail::check_array_extent("find_first_nonfinite", "gradient", data, n);
  // A view for the check pass, which never writes through it (unscale_part<false>).
  const gradient_view view(const_cast<T*>(data), n);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  return detail::first_nonfinite_of(view, 0);
}

}  // namespace mixprec
