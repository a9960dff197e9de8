// Block- and axis-scaled low-precision formats (issue 16; docs/blockscale.md).  Not part of
// mixprec/mixprec.hpp (build cost): include this header, or one of those below.
//
//   fp8_block_rules.hpp   TE's (kernel and Python reference) and DeepSeek-V3's fp8 block scale rules
//   fp8_block.hpp         fp8_block_matrix<T> (1×128 or 128×128 blocks), quantise, dequantise
//   fp8_block_gemm.hpp    C = A · Bᵀ with fp32 promotion every 128 elements of K
//   rowwise.hpp           torchao's tensor-wise and axis-wise (row or column) fp8 scaling
//   torchao_recipes.hpp   torchao's tensorwise / rowwise / rowwise_with_gw_hp per-operand casts
//   hadamard.hpp          TE's 16-point random Hadamard transform (NVFP4's column-wise copies)
//   nvfp4_rules.hpp       NVFP4's scale rules (TE's, torchao's) and the e2m1 element conversion
//   nvfp4.hpp             nvfp4_matrix (1×16 or 16×16 blocks, ue4m3 scales), quantise, dequantise
//   nvfp4_gemm.hpp        C = A · B on NVFP4 operands, summed in float
//   statistics.hpp        Transformer Engine's quantisation statistics of block-fp8 and NVFP4 copies
#pragma once

#include "fp8_block.hpp"
#include "fp8_block_gemm.hpp"
#include "fp8_block_rules.hpp"
#include "hadamard.hpp"
#include "nvfp4.hpp"
#include "nvfp4_gemm.hpp"
#include "nvfp4_rules.hpp"
#include "rowwise.hpp"
#include "statistics.hpp"
#include "torchao_recipes.hpp"
