// mixprec::compiled, part 2 of what the headers compile only where called (the session (session/)):
// instantiated once here; users of the library see it as extern templates
// (include/mixprec/compiled/where_called.hpp, written by scripts/where_called.py).
// The bulk, GEMM and unscale kernels it calls are in bulk.cpp, gemm.cpp and unscale.cpp.
#define MIXPREC_COMPILED 1
#define MIXPREC_WHERE_CALLED_DEFINES 2
#include <mixprec/compiled/where_called.hpp>
