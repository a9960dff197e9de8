// <cmath> for every minifloat: each value-producing function returns the exact mathematical
// result rounded once to nearest, ties to even, into the format (then the conversion rules of
// DESIGN.md for what the format cannot hold), with the special values of IEEE 754-2019 and
// C17 Annex F.  They are templates on minifloat<Format> in namespace mixprec, so argument-
// dependent lookup finds them beside the std:: overloads (`using std::exp; exp(x)`), and
// __host__ __device__ under nvcc.  docs/math.md lists the guarantees and how they are tested.
//
//   math/basic.hpp        isnan isinf isfinite isnormal signbit abs fabs copysign fmin fmax
//                         nextafter ldexp scalbn frexp floor ceil trunc round   (exact)
//   math/arithmetic.hpp   sqrt fma                                            (exact rounding)
//   math/exponential.hpp  exp exp2 expm1 log log2 log10 log1p
//   math/power.hpp        pow
//   math/special.hpp      tanh erf
//
// The approximated functions go through math/correct_rounding.hpp (the C library's double
// value where it decides the rounding, exact cases and a double-double evaluation where not).
#pragma once

#include "math/arithmetic.hpp"
#include "math/basic.hpp"
#include "math/exponential.hpp"
#include "math/power.hpp"
#include "math/special.hpp"
