// Autocast (DESIGN.md, "Autocast"): the scope, the operation categories and the weight-cast
// cache.  The operations that respect it are in mixprec/ops/ops.hpp.
#pragma once

#include "parameter.hpp"
#include "policy.hpp"
#include "scope.hpp"
#include "weight_cache.hpp"
