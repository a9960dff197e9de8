// Loss scaling (DESIGN.md, "Loss scaling"): the policies, loss_scaler, fused unscale, clipping,
// statistics, saved state and framework state interchange.  Agreement across processes is in
// mixprec/distributed/ (opt-in: it needs MPI or NCCL).
#pragma once

#include "clipping.hpp"
#include "errors.hpp"
#include "framework_state.hpp"
#include "loss_scaler.hpp"
#include "options.hpp"
#include "policies.hpp"
#include "state.hpp"
#include "statistics.hpp"
#include "unscale.hpp"
#include "update_rule.hpp"
