// The training-session layer (docs/session.md): recipes a user switches at run time, parsed
// from names, key=value text, flags or JSON; fp32 master weights; the model's parameters and
// optimizer held by a precision_session and its one-call training step; recipe schedules;
// per-layer precision overrides; and what this machine accelerates.
#pragma once

#include "capabilities.hpp"
#include "errors.hpp"
#include "master_weights.hpp"
#include "model_parameters.hpp"
#include "overrides.hpp"
#include "parse_recipe.hpp"
#include "precision_mode.hpp"
#include "precision_session.hpp"
#include "recipe.hpp"
#include "recipe_fields.hpp"
#include "schedule.hpp"
#include "statistics.hpp"

// The compiled mode (linking mixprec::compiled defines MIXPREC_COMPILED): what the library holds
// of the ops, session and dispatch code, declared extern so that this file does not compile it.
#if defined(MIXPREC_COMPILED)
#include "../compiled/where_called.hpp"
#endif
