// The exceptions of loss scaling, one per failure family, all derived from mixprec::error.
// Each message names the value at fault and the limit it broke.
#pragma once

#include "../errors.hpp"

namespace mixprec {

// Base of every loss-scaling failure.
class scaling_error : public error {
 public:
  using error::error;
};

// A call out of order within one iteration (unscale twice, unscale after step, step twice,
// step or update with no inf check recorded), or a save/load in the middle of an iteration.
class scaler_usage_error : public scaling_error {
 public:
  using scaling_error::scaling_error;
};

// An overflow at the floor: the scale is already at its minimum and the policy asks for less,
// and the scaler was told to throw (scaler_options::at_floor, or DeepSpeed's
// raise_error_at_min_scale in hysteresis_scaling).
class scale_floor_error : public scaling_error {
 public:
  using scaling_error::scaling_error;
};

// More consecutive skipped steps than scaler_options::max_consecutive_skips allows.
class skip_limit_error : public scaling_error {
 public:
  using scaling_error::scaling_error;
};

// Saved scaler state that cannot be loaded: truncated, corrupt (checksum), another version,
// another policy, values out of range; also framework state (PyTorch, DeepSpeed, Megatron-LM)
// that mixprec cannot reproduce exactly.  The scaler is left unchanged.
class scaler_state_error : public scaling_error {
 public:
  using scaling_error::scaling_error;
};

// A failed agreement on found_inf across processes (an MPI or NCCL error).
class agreement_error : public scaling_error {
 public:
  using scaling_error::scaling_error;
};

}  // namespace mixprec
