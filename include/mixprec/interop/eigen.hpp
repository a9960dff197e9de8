// Eigen's half-precision scalars as mixprec values, both ways, by a bit copy:
//
//   Eigen::half      <-> mixprec::float16    (IEEE 754 binary16)
//   Eigen::bfloat16  <-> mixprec::bfloat16
//
//   Eigen::half h(0.1f);
//   mixprec::float16 x(h);                          // the same code, no rounding
//   Eigen::half back = mixprec::interop::to_eigen(x);  // the same code back
//
// Each pair shares its encoding, so a conversion copies the 16-bit code and nothing else;
// tests/interop/eigen_interop_test.cpp checks every code both ways and against Eigen's own
// float conversion.
//
// Why to_eigen and not static_cast: Eigen's scalars have a catch-all constructor
// `template <class T> explicit half(T)` that converts its argument through float, and in
// `static_cast<Eigen::half>(x)` that exact match wins over minifloat's conversion operator.
// It gives the same value (float holds every float16 and bfloat16 exactly) except for NaN
// payloads, which Eigen replaces by its canonical quiet NaN; to_eigen copies the code.
// (Using Eigen's scalar types inside mixprec's Eigen operations is the business of
// mixprec/eigen/, not of this header.)
//
// Opt-in: this header includes <Eigen/Core> itself, so only code that includes it needs Eigen.
// Usable in __host__ __device__ code under nvcc (Eigen's bit_cast is EIGEN_DEVICE_FUNC).
#pragma once

#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "../types.hpp"

namespace mixprec::interop {

template <>
struct native_format<Eigen::half> {
  using format = formats::float16;
  static_assert(sizeof(Eigen::half) == 2 && std::is_trivially_copyable<Eigen::half>::value,
                "Eigen::half is IEEE binary16");

  MIXPREC_HOST_DEVICE static std::uint16_t to_bits(const Eigen::half& native) noexcept {
    return Eigen::numext::bit_cast<std::uint16_t>(native);
  }
  MIXPREC_HOST_DEVICE static Eigen::half from_bits(std::uint16_t bits) noexcept {
    return Eigen::numext::bit_cast<Eigen::half>(bits);
  }
};

template <>
struct native_format<Eigen::bfloat16> {
  using format = formats::bfloat16;
  static_assert(sizeof(Eigen::bfloat16) == 2 && std::is_trivially_copyable<Eigen::bfloat16>::value,
                "Eigen::bfloat16 is bfloat16");

  MIXPREC_HOST_DEVICE static std::uint16_t to_bits(const Eigen::bfloat16& native) noexcept {
    return Eigen::numext::bit_cast<std::uint16_t>(native);
  }
  MIXPREC_HOST_DEVICE static Eigen::bfloat16 from_bits(std::uint16_t bits) noexcept {
    return Eigen::numext::bit_cast<Eigen::bfloat16>(bits);
  }
};

// The bit copies from mixprec to Eigen.
MIXPREC_HOST_DEVICE inline Eigen::half to_eigen(float16 x) noexcept {
  return native_format<Eigen::half>::from_bits(x.bits());
}
MIXPREC_HOST_DEVICE inline Eigen::bfloat16 to_eigen(bfloat16 x) noexcept {
  return native_format<Eigen::bfloat16>::from_bits(x.bits());
}

}  // namespace mixprec::interop
