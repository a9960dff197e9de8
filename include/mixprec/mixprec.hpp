// mixprec: exact low-precision floating point for mixed-precision C++.
//
// The umbrella header: the whole CPU-side library.  CUDA, MPI and Eigen parts have their own
// headers (mixprec/interop/*.hpp, ...), so this one needs neither toolkit.
#pragma once

#include "bulk/convert_n.hpp"
#include "bulk/quantize.hpp"
#include "cmath.hpp"
#include "convert.hpp"
#include "errors.hpp"
#include "format.hpp"
#include "io.hpp"
#include "limits.hpp"
#include "minifloat.hpp"
#include "rounding.hpp"
#include "scaling/scaling.hpp"
#include "types.hpp"
