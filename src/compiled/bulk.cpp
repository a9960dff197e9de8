// The compiled mode's bulk kernels: every minifloat type to and from float, on every SIMD path
// and in every rounding mode (include/mixprec/bulk/instantiations.hpp lists them; users of
// mixprec::compiled see them as extern templates and do not compile them again).
#include <mixprec/bulk/dispatch.hpp>

namespace mixprec::detail {

MIXPREC_FOR_EACH_MINIFLOAT(MIXPREC_BULK_DEFINE_INSTANTIATIONS_OF)

}  // namespace mixprec::detail
