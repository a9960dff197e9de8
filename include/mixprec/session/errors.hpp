// The exception of the training-session layer.
#pragma once

#include "../errors.hpp"

namespace mixprec {

// A training recipe that cannot be used: text that does not parse (JSON syntax, an unknown key,
// a value of the wrong type or out of range) or options that contradict each other (fp16 without
// loss scaling while safe=true, a static scale <= 0, ...).  The message names the problem and
// lists what is allowed.  It derives from mixprec::error directly: it covers both malformed text
// (not only a bad number, as parse_error) and bad values given through code (recipe structs).
class recipe_error : public error {
 public:
  using error::error;
};

// The replicas of a data-parallel model hold different parameters (precision_session::
// check_replicas): the ranks started from different values, loaded different checkpoints, ran
// different recipes, or a rank changed its parameters outside the session.  The message names
// the first parameter that differs and the step.
class replica_mismatch_error : public error {
 public:
  using error::error;
};

}  // namespace mixprec
