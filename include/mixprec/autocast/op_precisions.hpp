// Operations pinned to a dtype: what a recipe's operation rules (session/overrides.hpp, @NAME)
// give an autocast state (scope.hpp, autocast_state::op_precisions).  Each named operation of
// mixprec::ops computes in and returns its dtype (float32, float16 or bfloat16), whether autocast
// is on or off; the first entry for a name decides.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "../dtype.hpp"

namespace mixprec {

using op_precision_list = std::vector<std::pair<std::string, dtype>>;

}  // namespace mixprec
