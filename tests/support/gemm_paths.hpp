// The gemm paths this machine can run (gemm/options.hpp; automatic left out), for tests that
// compare each path with a reference in that path's summation order.
#pragma once

#include <mixprec/gemm/options.hpp>

#include <vector>

inline std::vector<mixprec::gemm_path> supported_gemm_paths() {
  std::vector<mixprec::gemm_path> paths;
  for (mixprec::gemm_path p :
       {mixprec::gemm_path::portable, mixprec::gemm_path::avx2, mixprec::gemm_path::avx512,
        mixprec::gemm_path::avx512_bf16, mixprec::gemm_path::amx_bf16, mixprec::gemm_path::amx_bf16_emulated}) {
    if (mixprec::gemm_path_supported(p)) paths.push_back(p);
  }
  return paths;
}
