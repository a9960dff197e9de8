// mixprec: exact low-precision floating point for mixed-precision C++.
//
// The umbrella header: the whole CPU-side library.  CUDA, MPI and Eigen parts have their own
// headers (mixprec/interop/*.hpp, mixprec/eigen/*.hpp, ...), so this one needs neither toolkit nor Eigen.
#pragma once

#include "autocast/autocast.hpp"
#include "bulk/amax.hpp"
#include "bulk/convert_n.hpp"
#include "bulk/intn_pack.hpp"
#include "bulk/quantize.hpp"
#include "cmath.hpp"
#include "convert.hpp"
#include "dtype.hpp"
#include "errors.hpp"
#include "fault_injection.hpp"
#include "format.hpp"
#include "gemm/gemm.hpp"
#include "intn.hpp"
#include "intn_convert.hpp"
#include "intn_io.hpp"
#include "intn_packing.hpp"
#include "io.hpp"
#include "limits.hpp"
#include "matrix.hpp"
#include "minifloat.hpp"
#include "mx/mx.hpp"
#include "ops/ops.hpp"
#include "optim/optim.hpp"
#include "rounding.hpp"
#include "scaling/fp8/fp8.hpp"
#include "scaling/scaling.hpp"
#include "session/session.hpp"
#include "types.hpp"
