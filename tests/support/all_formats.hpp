// Type lists shared by the tests: every named format of the library.
#pragma once

#include <mixprec/rounding.hpp>
#include <mixprec/types.hpp>

#include <tuple>

namespace mixprec_test {

using all_types =
    std::tuple<mixprec::float16, mixprec::bfloat16, mixprec::float8_e4m3fn, mixprec::float8_e5m2,
               mixprec::float8_e4m3fnuz, mixprec::float8_e5m2fnuz, mixprec::float6_e3m2fn, mixprec::float6_e2m3fn,
               mixprec::float4_e2m1fn, mixprec::float8_e8m0fnu, mixprec::float8_ue4m3, mixprec::float8_e4m3,
               mixprec::float8_e3m4, mixprec::float8_e4m3b11fnuz, mixprec::tfloat32>;

#define MIXPREC_ALL_TYPES                                                                                      \
  mixprec::float16, mixprec::bfloat16, mixprec::float8_e4m3fn, mixprec::float8_e5m2, mixprec::float8_e4m3fnuz, \
      mixprec::float8_e5m2fnuz, mixprec::float6_e3m2fn, mixprec::float6_e2m3fn, mixprec::float4_e2m1fn,        \
      mixprec::float8_e8m0fnu, mixprec::float8_ue4m3, mixprec::float8_e4m3, mixprec::float8_e3m4,              \
      mixprec::float8_e4m3b11fnuz, mixprec::tfloat32

constexpr mixprec::rounding all_roundings[] = {mixprec::rounding::nearest_even, mixprec::rounding::nearest_away,
                                               mixprec::rounding::toward_zero,  mixprec::rounding::upward,
                                               mixprec::rounding::downward,     mixprec::rounding::to_odd,
                                               mixprec::rounding::nearest_zero};
static_assert(sizeof(all_roundings) / sizeof(all_roundings[0]) == static_cast<int>(mixprec::last_rounding) + 1,
              "every rounding mode is listed");
constexpr mixprec::overflow all_overflows[] = {mixprec::overflow::non_finite, mixprec::overflow::saturate};

// Every code of a format (2^total_bits of them).
template <class T>
constexpr unsigned code_count() {
  return 1u << mixprec::format_traits<typename T::format>::total_bits;
}

}  // namespace mixprec_test
