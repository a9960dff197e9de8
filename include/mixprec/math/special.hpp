// tanh and erf (the activations' functions), correctly rounded through
// math/correct_rounding.hpp, with the special values of C17 Annex F.10.2.6 and F.10.5.1:
// tanh(±0) = erf(±0) = ±0, tanh(±inf) = erf(±inf) = ±1.  Neither has a result on a rounding
// boundary for a non-zero input (both are transcendental there), so neither needs exact cases.
#pragma once

#include "../minifloat.hpp"
#include "basic.hpp"
#include "correct_rounding.hpp"
#include "nan.hpp"

namespace mixprec {
namespace detail {

struct tanh_kernel {
  double x;
  MIXPREC_HOST_DEVICE double approximate() const noexcept { return libm::tanh(x); }
  MIXPREC_HOST_DEVICE bool exact(double*) const noexcept { return false; }
  MIXPREC_HOST_DEVICE refined_value refine() const noexcept { return {dd_tanh(x), refined_relative_error}; }
};

struct erf_kernel {
  double x;
  MIXPREC_HOST_DEVICE double approximate() const noexcept { return libm::erf(x); }
  MIXPREC_HOST_DEVICE bool exact(double*) const noexcept { return false; }
  MIXPREC_HOST_DEVICE refined_value refine() const noexcept { return {dd_erf(x), refined_relative_error}; }
};

}  // namespace detail

template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> tanh(minifloat<Format> x) noexcept {
  using T = minifloat<Format>;
  if (isnan(x)) return detail::quieted(x);
  if (isinf(x)) return T(signbit(x) ? -1.0 : 1.0);
  return T(detail::evaluate<Format>(detail::tanh_kernel{static_cast<double>(x)}).representative);
}

template <class Format>
MIXPREC_HOST_DEVICE minifloat<Format> erf(minifloat<Format> x) noexcept {
  using T = minifloat<Format>;
  if (isnan(x)) return detail::quieted(x);
  if (isinf(x)) return T(signbit(x) ? -1.0 : 1.0);
  return T(detail::evaluate<Format>(detail::erf_kernel{static_cast<double>(x)}).representative);
}

}  // namespace mixprec
