// OCP Microscaling (MX) v1.0 formats (issue 7): MXFP8 (e4m3, e5m2), MXFP6 (e3m2, e2m3), MXFP4
// (e2m1) and MXINT8 blocks of 32 elements with e8m0 scales (four scale rules), in a packed matrix
// container, quantised row- or column-wise and dequantised on the bulk kernels, and their matrix
// product through a float GEMM.  docs/fp8.md has the rules and the layout.
#pragma once

#include "element.hpp"
#include "gemm.hpp"
#include "int8_element.hpp"
#include "matrix.hpp"
#include "packing.hpp"
#include "quantize.hpp"
#include "statistics.hpp"
