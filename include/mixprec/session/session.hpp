// The training-session layer (docs/session.md): recipes a user switches at run time, parsed
// from names, key=value text, flags or JSON; fp32 master weights; the one-call training step of
// precision_session; and what this machine accelerates.
#pragma once

#include "capabilities.hpp"
#include "errors.hpp"
#include "master_weights.hpp"
#include "parse_recipe.hpp"
#include "precision_session.hpp"
#include "recipe.hpp"
#include "recipe_fields.hpp"
#include "statistics.hpp"
