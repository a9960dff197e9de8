// What a <cmath> function returns when its result is NaN, and the code-level view of a finite
// value that the exact functions (ldexp, frexp, nextafter) work on.
//
// NaN results (IEEE 754-2019 §6.2.3):
//   - an input NaN propagates quieted: for IEEE-style formats its payload and sign are kept and
//     the quiet bit set; the "fn" formats give their NaN with the input's sign, fnuz its one
//     NaN, e8m0 0xFF (the same codes a conversion of that NaN gives);
//   - an invalid operation (sqrt(-1), log(-1), inf - inf in fma, pow(-2, 0.5)) gives the
//     positive canonical quiet NaN, which for fp6/fp4 (no NaN) is +max, as a conversion of NaN.
#pragma once

#include <cstdint>

#include "../detail/convert_bits.hpp"
#include "../detail/finite_parts.hpp"
#include "../minifloat.hpp"

namespace mixprec::detail {

template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> quieted(minifloat<Format> x) noexcept {
  using traits = format_traits<Format>;
  return code_access::make<minifloat<Format>>(
      special_codes<Format>::template nan<Format>(traits::is_negative(x.bits()), x.bits()));
}

template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> invalid_operation() noexcept {
  constexpr std::uint64_t double_quiet_nan = 0x7FF8000000000000;
  return code_access::make<minifloat<Format>>(
      special_codes<Format>::template nan<ieee_binary64>(false, double_quiet_nan));
}

// The first NaN among the operands, quieted (callers know one of them is NaN).
template <class Format>
MIXPREC_HOST_DEVICE constexpr minifloat<Format> first_nan(minifloat<Format> a, minifloat<Format> b) noexcept {
  return quieted(format_traits<Format>::is_nan(a.bits()) ? a : b);
}

}  // namespace mixprec::detail
