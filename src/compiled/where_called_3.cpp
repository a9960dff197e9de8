// mixprec::compiled, part 3 of what the headers compile only where called (the matrix conversions, unscale, clipping,
// gemm_on_sources and autocast helpers): instantiated once here; users of the library see it as extern templates
// (include/mixprec/compiled/where_called.hpp, written by scripts/where_called.py).
// The bulk, GEMM and unscale kernels it calls are in bulk.cpp, gemm.cpp and unscale.cpp.
#define MIXPREC_COMPILED 1
#define MIXPREC_WHERE_CALLED_DEFINES 3
#include <mixprec/compiled/where_called.hpp>
