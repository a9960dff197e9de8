// The fp8 training recipes (issue 7), after Transformer Engine: delayed scaling (a history of
// amaxes per tensor), current scaling (each tensor's own amax), their scale rules as plain
// host/device functions, and the saved state of delayed scaling.  docs/fp8.md has the exact
// rules and their sources.  Agreement on amaxes across processes: distributed/mpi.hpp
// (mpi_reduce_amax) and distributed/nccl.hpp (nccl_agreement::reduce_amax).  TE's tensor and
// quantisation statistics: quantization_statistics.hpp.
#pragma once

#include "current_scaling.hpp"
#include "delayed_scaler.hpp"
#include "delayed_scaling.hpp"
#include "format.hpp"
#include "quantization_statistics.hpp"
#include "scale_rules.hpp"
#include "state.hpp"
