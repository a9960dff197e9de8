// The CUDA backend, all of it but the cuBLASLt GEMM (cuda/gemm_cublaslt.cuh, which needs the
// cuBLASLt library).  Include only from CUDA translation units; link mixprec::cuda.
// docs/cuda.md describes every part.
#pragma once

#include "convert.cuh"
#include "convert_n.cuh"
#include "gemm.cuh"
#include "loss_scaler.cuh"
#include "quantize.cuh"
#include "unscale.cuh"
