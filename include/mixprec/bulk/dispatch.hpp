// How a bulk conversion runs: on which SIMD path (simd_path.hpp), with non-temporal stores for
// large outputs, and on how many threads.  Every choice gives the same bits; they differ only in
// speed.
//
//   set_bulk_threads(n)   threads for one large conversion (default 1; 0 = one per hardware
//                         thread); a conversion is split only when every thread gets at least
//                         bulk_elements_per_thread elements, at boundaries of 64 elements
//                         (the rule and the failure handling: detail/parallel.hpp).
//   Outputs of at least bulk_streaming_bytes bytes are written with non-temporal stores, which
//   skip the cache: the output is not read back soon, and writing it cold avoids loading each
//   line before overwriting it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../convert.hpp"
#include "../detail/constexpr_math.hpp"
#include "../detail/parallel.hpp"
#include "../detail/philox.hpp"
#include "../types.hpp"
#include "instantiations.hpp"
#include "simd_path.hpp"
#include "portable.hpp"
#include "truncated_float.hpp"
#include "x86/avx2.hpp"
#include "x86/avx512.hpp"

namespace mixprec {

constexpr std::size_t bulk_elements_per_thread = std::size_t{1} << 20;
constexpr std::size_t bulk_streaming_bytes = std::size_t{16} << 20;

namespace detail {
inline std::atomic<unsigned>& bulk_thread_setting() noexcept {
  static std::atomic<unsigned> threads{1};
  return threads;
}
}  // namespace detail

// Threads for one large bulk conversion: 1 (the default) keeps every call on the caller's
// thread; 0 means one per hardware thread.
inline void set_bulk_threads(unsigned threads) noexcept {
  detail::bulk_thread_setting().store(threads, std::memory_order_relaxed);
}
inline unsigned bulk_threads() noexcept {
  return detail::resolve_thread_count(detail::bulk_thread_setting().load(std::memory_order_relaxed));
}

namespace detail {

// The portable loop, instantiated per rounding mode so that each loop body is the scalar fast
// path with the mode folded in.
template <round_mode Mode, class From, class To>
void convert_n_portable(const From* in, std::size_t n, To* out, overflow o) {
  for (std::size_t i = 0; i < n; ++i) out[i] = convert_value<To>(in[i], Mode, o, 0);
}

template <class From, class To, class Rounding>
void convert_n_portable(const From* in, std::size_t n, To* out, Rounding r, overflow o) {
  if constexpr (!is_run_time_rounding<Rounding>) {
    (void)r;
    convert_n_portable<round_mode::nearest_even>(in, n, out, o);
  } else {
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
      case rounding::nearest_zero:
        return convert_n_portable<round_mode::nearest_zero>(in, n, out, o);
    }
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

// float -> T on one kernel target: the instruction where one is exact for this type and mode,
// else the generic kernel.
template <class Target, class To, class Rounding>
void encode_on(const float* in, std::size_t n, To* out, Rounding r, overflow o, bool bf16_instruction, bool stream) {
  if constexpr (Target::operations::has_half_instructions &&
                std::is_same<typename To::format, formats::float16>::value) {
    if (o == overflow::non_finite && conversion_instructions_exact()) {
      if constexpr (!is_run_time_rounding<Rounding>) {
        return Target::template encode_half_instruction<round_mode::nearest_even>(in, n, out, stream);
      } else {
        switch (r) {
          case rounding::nearest_even:
            return Target::template encode_half_instruction<round_mode::nearest_even>(in, n, out, stream);
          case rounding::toward_zero:
            return Target::template encode_half_instruction<round_mode::toward_zero>(in, n, out, stream);
          case rounding::upward:
            return Target::template encode_half_instruction<round_mode::upward>(in, n, out, stream);
          case rounding::downward:
            return Target::template encode_half_instruction<round_mode::downward>(in, n, out, stream);
          default:
            break;
        }
      }
    }
  }
#if MIXPREC_X86_SIMD
  if constexpr (std::is_same<typename To::format, formats::bfloat16>::value) {
    if (bf16_instruction && r == rounding::nearest_even && o == overflow::non_finite &&
        conversion_instructions_exact()) {
      return simd_avx512_bf16::encode_bfloat16_instruction(in, n, out, stream);
    }
  }
#endif
  (void)bf16_instruction;
  Target::encode_from_float(in, n, out, r, o, stream);
}

template <class Target, class From>
void decode_on(const From* in, std::size_t n, float* out, bool stream) {
  if constexpr (Target::operations::has_half_instructions &&
                std::is_same<typename From::format, formats::float16>::value) {
    if (conversion_instructions_exact()) return Target::decode_half_instruction(in, n, out, stream);
  }
  Target::decode_to_float(in, n, out, stream);
}

// Calls f(kernels) with the kernel set of `path` (an empty type's value); false, without calling
// it, when the build has no kernels for the path (the portable path where
// MIXPREC_PORTABLE_KERNELS is 0), and the caller runs the scalar loop.
template <class F>
bool with_kernels(simd_path path, F f) {
#if MIXPREC_X86_SIMD
  if (path == simd_path::avx2) return f(simd_avx2::half_kernels{}), true;
  if (path == simd_path::avx512 || path == simd_path::avx512_bf16) return f(simd_avx512::half_kernels{}), true;
#endif
#if MIXPREC_PORTABLE_KERNELS
  return f(simd_portable::kernels{}), true;
#else
  (void)path, (void)f;
  return false;
#endif
}

// Bytes of a path's vector register: the unit (and alignment) of its non-temporal stores (none
// on the portable path).
inline std::size_t path_register_bytes(simd_path path) noexcept {
  return path == simd_path::avx2 ? 32 : (path == simd_path::portable ? 1 : 64);
}

// Runs float -> T or T -> float on the kernels of `path`; false if the scalar loop should (other
// pairs of types).  With `stream`, out + 0 must be aligned to path_register_bytes(path).
template <class From, class To, class Rounding>
bool convert_n_vectorised(simd_path path, const From* in, std::size_t n, To* out, Rounding r, overflow o, bool stream) {
  constexpr bool encode = std::is_same<From, float>::value && has_float_kernels<To>();
  constexpr bool decode = std::is_same<To, float>::value && has_float_kernels<From>();
  if constexpr (encode || decode) {
    return with_kernels(path, [&](auto target) {
      using Target = decltype(target);
      if constexpr (encode) {
        encode_on<Target>(in, n, out, r, o, path == simd_path::avx512_bf16, stream);
      } else {
        decode_on<Target>(in, n, out, stream);
      }
    });
  }
  (void)path, (void)in, (void)n, (void)out, (void)r, (void)o, (void)stream;
  return false;
}

// Runs run(begin, end, stream) over [0, n): when the output is large and the path vectorised,
// the head up to the first store-aligned element without streaming, the rest with
// non-temporal stores and a fence after them; otherwise everything without streaming.
template <class To, class Run>
void with_streaming(simd_path path, std::size_t n, const To* out, bool large_output, Run run) {
  if (large_output && path != simd_path::portable) {
    const std::size_t store_bytes = path_register_bytes(path);
    const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(out) % store_bytes;
    if (misalignment % sizeof(To) == 0) {
      const std::size_t head = misalignment == 0 ? 0 : (store_bytes - misalignment) / sizeof(To);
      if (head < n) {
        run(std::size_t{0}, head, false);
        run(head, n, true);
#if MIXPREC_X86_SIMD
        _mm_sfence();  // non-temporal stores are weakly ordered: publish them before returning
#endif
        return;
      }
    }
  }
  run(std::size_t{0}, n, false);
}

// max |x[i]| as float bits (NaN bits if there is a NaN) of one thread's share: one read on the
// path's kernels (multiply_in_place without the multiply only reads: the fused unscale's check).
inline std::uint32_t largest_magnitude_bits(simd_path path, const float* in, std::size_t n) {
  std::uint32_t largest = 0;
  const bool vectorised = with_kernels(path, [&](auto target) {
    largest = decltype(target)::template multiply_in_place<false>(const_cast<float*>(in), n, 1.0f);
  });
  if (!vectorised) {
    for (std::size_t i = 0; i < n; ++i) largest = std::max(largest, bit_cast<std::uint32_t>(in[i]) & 0x7FFFFFFFu);
  }
  return largest;
}

// float -> float: every float is exact in float whatever the mode, so the result is the input
// itself, but for what the scalar conversion does at the edges: a signaling NaN is quieted (its
// quiet bit set, the payload kept) and, under saturate, ±inf becomes ±max.  So: a copy, one
// vectorised read for the largest magnitude, and the fix-up only when that finds an inf or NaN.
// (The ops layer converts float matrices to float on every call: this was a scalar round_pack
// per element.)
inline void copy_floats(simd_path path, const float* in, std::size_t n, float* out, overflow o) {
  constexpr std::uint32_t magnitude = 0x7FFF'FFFFu, infinity = 0x7F80'0000u, quiet = 0x0040'0000u;
  if (n == 0) return;
  std::memcpy(out, in, n * sizeof(float));
  if (largest_magnitude_bits(path, in, n) < infinity) return;
  const bool saturate = o == overflow::saturate;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u = bit_cast<std::uint32_t>(in[i]);
    const std::uint32_t m = u & magnitude;
    if (m > infinity) u |= quiet;
    if (saturate && m == infinity) u = (u & ~magnitude) | 0x7F7F'FFFFu;
    out[i] = bit_cast<float>(u);
  }
}

// One thread's share of convert_n (r: a rounding, or nearest_even_only, special_codes.hpp).
template <class From, class To, class Rounding>
void convert_n_serial(simd_path path, const From* in, std::size_t n, To* out, Rounding r, overflow o,
                      bool large_output) {
  if constexpr (std::is_same<From, float>::value && std::is_same<To, float>::value) {
    (void)r, (void)large_output;
    return copy_floats(path, in, n, out, o);
  }
  // tfloat32 and other float-exponent formats in 32-bit codes: an integer loop (truncated_float.hpp).
  if constexpr (std::is_same<From, float>::value && is_wide_truncated_float<To>()) {
    (void)path, (void)large_output;
    if (encode_truncated_float(in, n, out, static_cast<rounding>(r), o)) return;
  } else if constexpr (std::is_same<To, float>::value && is_wide_truncated_float<From>()) {
    (void)path, (void)large_output, (void)r, (void)o;
    return decode_truncated_float(in, n, out);
  }
  constexpr bool vectorised = (std::is_same<From, float>::value && has_float_kernels<To>()) ||
                              (std::is_same<To, float>::value && has_float_kernels<From>());
  const bool has_kernels = with_kernels(path, [](auto) {});
  if constexpr (vectorised) {
    if (has_kernels) {
      return with_streaming(path, n, out, large_output, [&](std::size_t begin, std::size_t end, bool stream) {
        convert_n_vectorised(path, in + begin, end - begin, out + begin, r, o, stream);
      });
    }
  } else if constexpr (has_float_kernels<From>() && has_float_kernels<To>()) {
    if (has_kernels) {  // between two minifloats: through a float block (exact), then one rounding
      constexpr std::size_t block = 512;
      float staged[block];
      const round_mode mode = to_round_mode(r);
      for (std::size_t i = 0; i < n; i += block) {
        const std::size_t m = n - i < block ? n - i : block;
        convert_n_vectorised(path, in + i, m, staged, rounding::nearest_even, overflow::non_finite, false);
        convert_n_vectorised(path, staged, m, out + i, r, o, false);
        // A NaN's payload does not survive the float stage (float -> To gives To's canonical NaN),
        // while the direct conversion keeps what the target can hold (docs/decisions.md, "NaN"):
        // redo those elements with the scalar conversion.
        for (std::size_t k = 0; k < m; ++k) {
          if (staged[k] != staged[k]) out[i + k] = convert_value<To>(in[i + k], mode, o, 0);
        }
      }
      return;
    }
  }
  convert_n_portable(in, n, out, r, o);  // double, integers, float <-> float, or no kernels
}

// One thread's share of convert_stochastic_n: elements first ... first + n - 1 of the whole array.
template <class To>
void stochastic_serial(simd_path path, const float* in, std::size_t n, To* out, overflow o, std::uint64_t seed,
                       std::uint64_t first, stochastic_rule rule) {
  if constexpr (has_float_kernels<To>()) {
    if (with_kernels(path,
                     [&](auto target) { decltype(target)::encode_stochastic(in, n, out, o, seed, first, rule); })) {
      return;
    }
  }
  const round_mode mode = stochastic_mode(rule);
  philox_sequence random(seed, first);
  for (std::size_t i = 0; i < n; ++i) out[i] = convert_value<To>(in[i], mode, o, random.next());
}

// Calls run(chunk, begin, end) over consecutive chunks of [0, n), on the caller's thread and
// up to bulk_threads() - 1 others (detail/parallel.hpp: chunks start at multiples of 64, every
// thread gets at least bulk_elements_per_thread elements, a thread that cannot start leaves its
// chunk to the caller); returns the number of chunks.
template <class Run>
std::size_t for_each_chunk(std::size_t n, Run run) {
  const work_split split = split_work(n, bulk_threads(), bulk_elements_per_thread, 64);
  run_chunks(split, run);
  return split.count;
}

// convert_n on a given path (which the caller has checked this CPU supports).
template <class From, class To, class Rounding>
void convert_n_on(simd_path path, const From* in, std::size_t n, To* out, Rounding r, overflow o) {
  const bool large_output = n * sizeof(To) >= bulk_streaming_bytes;
  for_each_chunk(n, [&](std::size_t, std::size_t begin, std::size_t end) {
    convert_n_serial(path, in + begin, end - begin, out + begin, r, o, large_output);
  });
}

// One thread's share of quantize_n: out = convert(in × scale); returns max |in| as float bits
// (NaN bits if there is a NaN).
template <class To>
std::uint32_t quantize_serial(simd_path path, const float* in, std::size_t n, To* out, float scale, rounding r,
                              overflow o, bool large_output) {
  std::uint32_t largest = 0;
  if constexpr (has_float_kernels<To>()) {
    if (with_kernels(path, [](auto) {})) {
      with_streaming(path, n, out, large_output, [&](std::size_t begin, std::size_t end, bool stream) {
        with_kernels(path, [&](auto target) {
          const std::uint32_t part = decltype(target)::template encode_from_float<To, true>(
              in + begin, end - begin, out + begin, r, o, stream, scale);
          largest = std::max(largest, part);
        });
      });
      return largest;
    }
  }
  // A user-defined format wider than the kernels take, or no kernels in this build.
  const round_mode mode = to_round_mode(r);
  for (std::size_t i = 0; i < n; ++i) {
    largest = std::max(largest, bit_cast<std::uint32_t>(in[i]) & 0x7FFFFFFFu);
    out[i] = convert_value<To>(in[i] * scale, mode, o, 0);
  }
  return largest;
}

// One thread's share of dequantize_n: out = float(in) × scale.
template <class From>
void dequantize_serial(simd_path path, const From* in, std::size_t n, float* out, float scale, bool large_output) {
  if constexpr (has_float_kernels<From>()) {
    if (with_kernels(path, [](auto) {})) {
      return with_streaming(path, n, out, large_output, [&](std::size_t begin, std::size_t end, bool stream) {
        with_kernels(path, [&](auto target) {
          decltype(target)::template decode_to_float<From, true>(in + begin, end - begin, out + begin, stream, scale);
        });
      });
    }
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]) * scale;
}

#if defined(MIXPREC_COMPILED)
// The compiled mode: these are built once, in mixprec::compiled (instantiations.hpp).
MIXPREC_FOR_EACH_MINIFLOAT(MIXPREC_BULK_EXTERN_INSTANTIATIONS_OF)
#endif

}  // namespace detail
}  // namespace mixprec
