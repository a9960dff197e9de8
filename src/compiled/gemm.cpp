// The compiled mode's GEMM drivers: run_threads for every kernel family of this build
// (include/mixprec/gemm/detail/driver.hpp; users of mixprec::compiled see them as extern templates).
#include <mixprec/gemm/gemm.hpp>

namespace mixprec::detail {

MIXPREC_GEMM_FOR_EACH_FAMILY(MIXPREC_GEMM_DEFINE_INSTANTIATION_OF)

}  // namespace mixprec::detail
