// gemm/options.hpp: path names, forcing and detection; the global thread setting.
#include <mixprec/gemm/gemm.hpp>
#include <mixprec/gemm/options.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

using namespace mixprec;

TEST_CASE("every gemm path's name parses back to it; unknown names are errors", "[gemm]") {
  for (gemm_path p : {gemm_path::automatic, gemm_path::portable, gemm_path::avx2, gemm_path::avx512,
                      gemm_path::avx512_bf16, gemm_path::amx_bf16, gemm_path::amx_bf16_emulated}) {
    CHECK(parse_gemm_path(to_string(p)) == p);
  }
  CHECK_THROWS_WITH(parse_gemm_path("amx"),
                    Catch::Matchers::Contains("'amx'") && Catch::Matchers::Contains("amx_bf16"));
}

TEST_CASE("the best path is supported and never the emulation", "[gemm]") {
  const gemm_path best = best_gemm_path();
  CHECK(gemm_path_supported(best));
  CHECK(best != gemm_path::amx_bf16_emulated);
  CHECK(gemm_path_supported(gemm_path::portable));
  CHECK(gemm_path_supported(gemm_path::amx_bf16_emulated));
  // The AMX path needs the AVX512-BF16 path (every AMX CPU has it; the fallback kernels use it).
  if (gemm_path_supported(gemm_path::amx_bf16)) CHECK(gemm_path_supported(gemm_path::avx512_bf16));
  if (gemm_path_supported(gemm_path::avx512_bf16)) CHECK(gemm_path_supported(gemm_path::avx512));
}

TEST_CASE("force_gemm_path applies to automatic calls until reset; options override it", "[gemm]") {
  force_gemm_path(gemm_path::portable);
  CHECK(resolve_gemm_path() == gemm_path::portable);
  gemm_options options;
  options.path = gemm_path::amx_bf16_emulated;
  CHECK(resolve_gemm_path(options) == gemm_path::amx_bf16_emulated);
  reset_gemm_path();
  CHECK(resolve_gemm_path() != gemm_path::automatic);
  force_gemm_path(gemm_path::automatic);  // the same as reset
  CHECK(resolve_gemm_path() == resolve_gemm_path(gemm_options{}));
  if (!gemm_path_supported(gemm_path::amx_bf16)) {
    CHECK_THROWS_AS(force_gemm_path(gemm_path::amx_bf16), invalid_argument);
  }
}

TEST_CASE("set_gemm_threads: 1 by default, 0 for every hardware thread", "[gemm]") {
  CHECK(gemm_threads() == 1);
  set_gemm_threads(0);
  CHECK(gemm_threads() == std::max(1u, std::thread::hardware_concurrency()));
  set_gemm_threads(3);
  CHECK(gemm_threads() == 3);
  // The global setting splits only products with enough work per thread; the result is the same.
  const std::size_t n = 300;  // 2.7e7 multiply-adds: three shares of 2^23
  std::vector<float> A(n * n, 0.5f), B(n * n, 2.f), C(n * n);
  gemm(n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, C.data(), n);
  CHECK(C[n * n - 1] == 300.f);
  set_gemm_threads(1);
}
