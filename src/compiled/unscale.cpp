// The compiled mode's unscale kernels: unscale_part for float, bfloat16 and float16 gradients on
// every SIMD path (include/mixprec/scaling/unscale.hpp; users of mixprec::compiled see these as
// extern templates).
#include <mixprec/scaling/unscale.hpp>

namespace mixprec::detail {

MIXPREC_UNSCALE_INSTANTIATIONS()

}  // namespace mixprec::detail
