// dtype: the element type of data whose type is chosen at run time (a recipe read from a config
// file, an autocast scope, a mixprec::matrix), and the bridge back to the static types.
//
//   dtype_of<bfloat16>            dtype::bfloat16
//   visit_dtype(d, f)             f(dtype_tag<T>{}) with the static type T of d
//   promote_types(a, b)           whichever of a and b holds every value of the other, else float32
//   parse_dtype("bf16")           dtype::bfloat16 (names and the usual aliases; clear error else)
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "errors.hpp"
#include "format.hpp"
#include "limits.hpp"
#include "types.hpp"

namespace mixprec {

// The enumerators are spelled like the types (and torch.float16 ...); GCC's -Wshadow reports
// every enumerator that shares a name with a type of the enclosing namespace, which is the
// point here, so it is silenced for this declaration only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
enum class dtype : std::uint8_t {
  float32,
  float16,
  bfloat16,
  float8_e4m3fn,
  float8_e5m2,
  float8_e4m3fnuz,
  float8_e5m2fnuz,
  float6_e3m2fn,
  float6_e2m3fn,
  float4_e2m1fn,
  float8_e8m0fnu,
};
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

inline constexpr dtype all_dtypes[] = {
    dtype::float32,       dtype::float16,         dtype::bfloat16,        dtype::float8_e4m3fn,
    dtype::float8_e5m2,   dtype::float8_e4m3fnuz, dtype::float8_e5m2fnuz, dtype::float6_e3m2fn,
    dtype::float6_e2m3fn, dtype::float4_e2m1fn,   dtype::float8_e8m0fnu,
};

// The static type of each dtype, as an empty tag passed to visitors.
template <class T>
struct dtype_tag {
  using type = T;
};

namespace detail {
template <dtype D>
struct type_of_dtype;
#define MIXPREC_DTYPE_TYPE(name, T)   \
  template <>                         \
  struct type_of_dtype<dtype::name> { \
    using type = T;                   \
  };
MIXPREC_DTYPE_TYPE(float32, float)
MIXPREC_DTYPE_TYPE(float16, float16)
MIXPREC_DTYPE_TYPE(bfloat16, bfloat16)
MIXPREC_DTYPE_TYPE(float8_e4m3fn, float8_e4m3fn)
MIXPREC_DTYPE_TYPE(float8_e5m2, float8_e5m2)
MIXPREC_DTYPE_TYPE(float8_e4m3fnuz, float8_e4m3fnuz)
MIXPREC_DTYPE_TYPE(float8_e5m2fnuz, float8_e5m2fnuz)
MIXPREC_DTYPE_TYPE(float6_e3m2fn, float6_e3m2fn)
MIXPREC_DTYPE_TYPE(float6_e2m3fn, float6_e2m3fn)
MIXPREC_DTYPE_TYPE(float4_e2m1fn, float4_e2m1fn)
MIXPREC_DTYPE_TYPE(float8_e8m0fnu, float8_e8m0fnu)
#undef MIXPREC_DTYPE_TYPE

template <class T, std::size_t... I>
constexpr dtype find_dtype(std::index_sequence<I...>) noexcept {
  // The index of the one dtype whose type is T (0, float32, if none): a sum with one nonzero term,
  // which every front end accepts without an "expression has no effect" warning (nvcc's 174-D).
  constexpr std::size_t match =
      ((std::is_same<T, typename type_of_dtype<all_dtypes[I]>::type>::value ? I : std::size_t{0}) + ... + 0);
  return all_dtypes[match];
}
template <class T, std::size_t... I>
constexpr bool has_dtype(std::index_sequence<I...>) noexcept {
  return (std::is_same<T, typename type_of_dtype<all_dtypes[I]>::type>::value || ...);
}
constexpr std::size_t dtype_count = sizeof(all_dtypes) / sizeof(all_dtypes[0]);
}  // namespace detail

template <dtype D>
using dtype_type_t = typename detail::type_of_dtype<D>::type;

// Whether T is one of the element types a dtype names (float and the ten formats).
template <class T>
constexpr bool is_dtype_type = detail::has_dtype<T>(std::make_index_sequence<detail::dtype_count>{});

template <class T>
constexpr dtype dtype_of = [] {
  static_assert(is_dtype_type<T>, "dtype_of<T>: T must be float or one of mixprec's named formats");
  return detail::find_dtype<T>(std::make_index_sequence<detail::dtype_count>{});
}();

// Calls f(dtype_tag<T>{}) for the static type T of d and returns what it returns.
template <class F>
decltype(auto) visit_dtype(dtype d, F&& f) {
  switch (d) {
    case dtype::float32:
      return std::forward<F>(f)(dtype_tag<float>{});
    case dtype::float16:
      return std::forward<F>(f)(dtype_tag<float16>{});
    case dtype::bfloat16:
      return std::forward<F>(f)(dtype_tag<bfloat16>{});
    case dtype::float8_e4m3fn:
      return std::forward<F>(f)(dtype_tag<float8_e4m3fn>{});
    case dtype::float8_e5m2:
      return std::forward<F>(f)(dtype_tag<float8_e5m2>{});
    case dtype::float8_e4m3fnuz:
      return std::forward<F>(f)(dtype_tag<float8_e4m3fnuz>{});
    case dtype::float8_e5m2fnuz:
      return std::forward<F>(f)(dtype_tag<float8_e5m2fnuz>{});
    case dtype::float6_e3m2fn:
      return std::forward<F>(f)(dtype_tag<float6_e3m2fn>{});
    case dtype::float6_e2m3fn:
      return std::forward<F>(f)(dtype_tag<float6_e2m3fn>{});
    case dtype::float4_e2m1fn:
      return std::forward<F>(f)(dtype_tag<float4_e2m1fn>{});
    case dtype::float8_e8m0fnu:
      return std::forward<F>(f)(dtype_tag<float8_e8m0fnu>{});
  }
  throw invalid_argument("visit_dtype: invalid dtype value " + std::to_string(static_cast<int>(d)));
}

constexpr const char* to_string(dtype d) noexcept {
  switch (d) {
    case dtype::float32:
      return "float32";
    case dtype::float16:
      return "float16";
    case dtype::bfloat16:
      return "bfloat16";
    case dtype::float8_e4m3fn:
      return "float8_e4m3fn";
    case dtype::float8_e5m2:
      return "float8_e5m2";
    case dtype::float8_e4m3fnuz:
      return "float8_e4m3fnuz";
    case dtype::float8_e5m2fnuz:
      return "float8_e5m2fnuz";
    case dtype::float6_e3m2fn:
      return "float6_e3m2fn";
    case dtype::float6_e2m3fn:
      return "float6_e2m3fn";
    case dtype::float4_e2m1fn:
      return "float4_e2m1fn";
    case dtype::float8_e8m0fnu:
      return "float8_e8m0fnu";
  }
  return "invalid dtype";
}

// Bytes per element (fp6 and fp4 are stored one per byte, as the value types are).
inline std::size_t size_of(dtype d) {
  return visit_dtype(d, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

// The format descriptor facts of a dtype that decide whether one holds the other.
struct dtype_range {
  int precision;             // significand bits, the hidden bit included
  int min_quantum_exponent;  // exponent of the smallest positive value's last place
  double max_finite;         // the largest finite value
  bool is_signed, has_zero, has_negative_zero, has_infinity, has_nan;
};

inline dtype_range range_of(dtype d) {
  return visit_dtype(d, [](auto tag) {
    using T = typename decltype(tag)::type;
    using traits = format_traits<detail::format_of_t<T>>;
    return dtype_range{traits::precision,
                       traits::min_quantum_exponent,
                       static_cast<double>(std::numeric_limits<T>::max()),
                       traits::is_signed,
                       traits::has_zero,
                       traits::has_negative_zero,
                       traits::has_infinity,
                       traits::has_nan};
  });
}

// Whether every value of `narrow` (signed zeros, NaN and infinities included) is a value of `wide`.
// A finite value of `narrow` is m × 2^q with at most n.precision significant bits, its last
// place q >= n.min_quantum_exponent and its magnitude <= n.max_finite.  `wide` holds every
// such number when it keeps at least as many bits, reaches as low in its last place and as
// high in magnitude (binary formats: no other condition), and has the special values `narrow`
// has.
inline bool holds_all_values_of(dtype wide, dtype narrow) {
  if (wide == narrow) return true;
  const dtype_range w = range_of(wide), n = range_of(narrow);
  const bool finite_values_fit =
      w.precision >= n.precision && w.min_quantum_exponent <= n.min_quantum_exponent && w.max_finite >= n.max_finite;
  return finite_values_fit && (w.is_signed || !n.is_signed) && (w.has_zero || !n.has_zero) &&
         (w.has_negative_zero || !n.has_negative_zero) && (w.has_infinity || !n.has_infinity) &&
         (w.has_nan || !n.has_nan);
}

// The result type of combining a and b (PyTorch's "widest input type wins", made exact): the
// one that holds every value of the other, else float32, which holds every value of all of them
// (float16 with bfloat16 gives float32, as torch.promote_types does).
inline dtype promote_types(dtype a, dtype b) {
  if (holds_all_values_of(a, b)) return a;
  if (holds_all_values_of(b, a)) return b;
  return dtype::float32;
}

// Reads a dtype name: the names above, plus "float"/"fp32", "half"/"fp16", "bf16",
// "fp8_e4m3"/"e4m3", "fp8_e5m2"/"e5m2".  Anything else: invalid_argument listing what is allowed.
inline dtype parse_dtype(const std::string& name) {
  for (dtype d : all_dtypes) {
    if (name == to_string(d)) return d;
  }
  const std::pair<const char*, dtype> aliases[] = {
      {"float", dtype::float32},      {"fp32", dtype::float32},         {"half", dtype::float16},
      {"fp16", dtype::float16},       {"bf16", dtype::bfloat16},        {"fp8_e4m3", dtype::float8_e4m3fn},
      {"e4m3", dtype::float8_e4m3fn}, {"fp8_e5m2", dtype::float8_e5m2}, {"e5m2", dtype::float8_e5m2},
  };
  for (const auto& alias : aliases) {
    if (name == alias.first) return alias.second;
  }
  std::string allowed;
  for (dtype d : all_dtypes) allowed.append(allowed.empty() ? "" : ", ").append(to_string(d));
  for (const auto& alias : aliases) allowed.append(", ").append(alias.first);
  throw invalid_argument("unknown dtype '" + name + "' (allowed: " + allowed + ")");
}

}  // namespace mixprec
