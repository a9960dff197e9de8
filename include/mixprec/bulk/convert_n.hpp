// Bulk conversion (DESIGN.md, "Conversion"): convert_n over arrays of any pair of
// {float, double, every minifloat}, and convert_stochastic_n from float.
//
// float -> minifloat and minifloat -> float (and minifloat -> minifloat, staged through float,
// which holds every value of the library's formats exactly) run on the SIMD path that
// simd_path.hpp selects; everything else, and the portable path, is a loop over the scalar
// conversion.  Every path gives the scalar function's bits.  Element i of
// convert_stochastic_n draws its random bits from Philox-4x32-10 keyed by the seed, at
// counter i, so the result depends only on (seed, i, in[i]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include "../convert.hpp"
#include "../detail/constexpr_math.hpp"
#include "../detail/philox.hpp"
#include "../errors.hpp"
#include "../types.hpp"
#include "simd_path.hpp"
#include "x86/avx2.hpp"
#include "x86/avx512.hpp"

namespace mixprec {
namespace detail {

template <class From, class To>
void check_bulk_arguments(const char* function, const From* in, std::size_t n, const To* out) {
  if (n == 0) return;
  if (in == nullptr || out == nullptr) {
    throw invalid_argument(std::string(function) + ": null " + (in == nullptr ? "input" : "output") +
                           " pointer with n = " + std::to_string(n));
  }
  const auto in_begin = reinterpret_cast<std::uintptr_t>(in);
  const auto out_begin = reinterpret_cast<std::uintptr_t>(out);
  if (in_begin < out_begin + n * sizeof(To) && out_begin < in_begin + n * sizeof(From)) {
    throw invalid_argument(std::string(function) + ": the output array overlaps the input array (n = " +
                           std::to_string(n) + "); convert into a separate buffer");
  }
}

// The portable loop, instantiated per rounding mode so that each loop body is the scalar fast
// path with the mode folded in.
template <round_mode Mode, class From, class To>
void convert_n_portable(const From* in, std::size_t n, To* out, overflow o) {
  for (std::size_t i = 0; i < n; ++i) out[i] = convert_value<To>(in[i], Mode, o, 0);
}

template <class From, class To>
void convert_n_portable(const From* in, std::size_t n, To* out, rounding r, overflow o) {
  switch (r) {
    case rounding::nearest_even:
      return convert_n_portable<round_mode::nearest_even>(in, n, out, o);
    case rounding::nearest_away:
      return convert_n_portable<round_mode::nearest_away>(in, n, out, o);
    case rounding::toward_zero:
      return convert_n_portable<round_mode::toward_zero>(in, n, out, o);
    case rounding::upward:
      return convert_n_portable<round_mode::upward>(in, n, out, o);
    case rounding::downward:
      return convert_n_portable<round_mode::downward>(in, n, out, o);
    case rounding::to_odd:
      return convert_n_portable<round_mode::to_odd>(in, n, out, o);
  }
}

template <class T>
struct is_minifloat : std::false_type {};
template <class Format>
struct is_minifloat<minifloat<Format>> : std::true_type {};

// Formats the vector kernels take: codes of at most 16 bits whose every value float holds.
template <class T>
constexpr bool has_float_kernels() {
  if constexpr (is_minifloat<T>::value) {
    using traits = format_traits<typename T::format>;
    return traits::storage_bits <= 16 && traits::mantissa_bits <= 23 && traits::max_exponent <= 127 &&
           traits::min_quantum_exponent >= -149;
  } else {
    return false;
  }
}

// The conversion instructions (F16C, AVX-512 BF16) may flush subnormals when MXCSR asks for
// it (FTZ, bit 15; DAZ, bit 6): they are used only while both are clear.
inline bool conversion_instructions_exact() noexcept {
#if MIXPREC_X86_SIMD
  return (__builtin_ia32_stmxcsr() & 0x8040u) == 0;
#else
  return false;
#endif
}

#if MIXPREC_X86_SIMD
// float -> T on one vector target: the instruction where one is exact for this type and mode,
// else the generic kernel.
template <class Target, class To>
void encode_on(const float* in, std::size_t n, To* out, rounding r, overflow o, bool bf16_instruction) {
  if constexpr (std::is_same<typename To::format, formats::float16>::value) {
    if (o == overflow::non_finite && conversion_instructions_exact()) {
      switch (r) {
        case rounding::nearest_even:
          return Target::template encode_half_instruction<round_mode::nearest_even>(in, n, out);
        case rounding::toward_zero:
          return Target::template encode_half_instruction<round_mode::toward_zero>(in, n, out);
        case rounding::upward:
          return Target::template encode_half_instruction<round_mode::upward>(in, n, out);
        case rounding::downward:
          return Target::template encode_half_instruction<round_mode::downward>(in, n, out);
        default:
          break;
      }
    }
  }
  if constexpr (std::is_same<typename To::format, formats::bfloat16>::value) {
    if (bf16_instruction && r == rounding::nearest_even && o == overflow::non_finite &&
        conversion_instructions_exact()) {
      return simd_avx512_bf16::encode_bfloat16_instruction(in, n, out);
    }
  }
  (void)bf16_instruction;
  Target::encode_from_float(in, n, out, r, o);
}

template <class Target, class From>
void decode_on(const From* in, std::size_t n, float* out) {
  if constexpr (std::is_same<typename From::format, formats::float16>::value) {
    if (conversion_instructions_exact()) return Target::decode_half_instruction(in, n, out);
  }
  Target::decode_to_float(in, n, out);
}
#endif

// Runs float -> T or T -> float on a SIMD path; false if the portable loop should.
template <class From, class To>
bool convert_n_vectorised(simd_path path, const From* in, std::size_t n, To* out, rounding r, overflow o) {
#if MIXPREC_X86_SIMD
  constexpr bool encode = std::is_same<From, float>::value && has_float_kernels<To>();
  constexpr bool decode = std::is_same<To, float>::value && has_float_kernels<From>();
  if constexpr (encode || decode) {
    switch (active_simd_path()) {
      case simd_path::portable:
        return false;
      case simd_path::avx2:
        if constexpr (encode) {
          encode_on<simd_avx2::kernels>(in, n, out, r, o, false);
        } else {
          decode_on<simd_avx2::kernels>(in, n, out);
        }
        return true;
      case simd_path::avx512:
      case simd_path::avx512_bf16:
        if constexpr (encode) {
          encode_on<simd_avx512::kernels>(in, n, out, r, o, path == simd_path::avx512_bf16);
        } else {
          decode_on<simd_avx512::kernels>(in, n, out);
        }
        return true;
    }
  }
#else
  (void)path, (void)in, (void)n, (void)out, (void)r, (void)o;
#endif
  return false;
}

// convert_n on a given path (which the caller has checked this CPU supports).
template <class From, class To>
void convert_n_on(simd_path path, const From* in, std::size_t n, To* out, rounding r, overflow o) {
  if (convert_n_vectorised(path, in, n, out, r, o)) return;
  if constexpr (has_float_kernels<From>() && has_float_kernels<To>()) {
    // Between two minifloats: through a float block (exact), then one rounding.
    if (path != simd_path::portable) {
      constexpr std::size_t block = 512;
      float staged[block];
      for (std::size_t i = 0; i < n; i += block) {
        const std::size_t m = n - i < block ? n - i : block;
        convert_n_vectorised(path, in + i, m, staged, rounding::nearest_even, overflow::non_finite);
        convert_n_vectorised(path, staged, m, out + i, r, o);
      }
      return;
    }
  }
  convert_n_portable(in, n, out, r, o);
}

}  // namespace detail

template <class From, class To>
void convert_n(const From* in, std::size_t n, To* out, rounding r = rounding::nearest_even,
               overflow o = overflow::non_finite) {
  detail::check_bulk_arguments("convert_n", in, n, out);
  detail::convert_n_on(active_simd_path(), in, n, out, r, o);
}

template <class To>
void convert_stochastic_n(const float* in, std::size_t n, To* out, std::uint64_t seed,
                          overflow o = overflow::non_finite) {
  detail::check_bulk_arguments("convert_stochastic_n", in, n, out);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = detail::convert_value<To>(in[i], detail::round_mode::stochastic, o, detail::philox_bits(seed, i));
  }
}

}  // namespace mixprec
