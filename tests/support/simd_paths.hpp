// Runs a test body on every SIMD path this CPU and build have (bulk/simd_path.hpp), with 1 and 2
// bulk threads, then restores the defaults.
#pragma once

#include <mixprec/bulk/dispatch.hpp>
#include <mixprec/bulk/simd_path.hpp>

#include <catch2/catch.hpp>

template <class Body>
void on_every_path_and_thread_count(Body body) {
  using namespace mixprec;
  for (unsigned threads : {1u, 2u}) {
    set_bulk_threads(threads);
    for (simd_path p : {simd_path::portable, simd_path::avx2, simd_path::avx512, simd_path::avx512_bf16}) {
      if (!simd_path_supported(p)) continue;
      force_simd_path(p);
      INFO("path " << to_string(p) << ", " << threads << " threads");
      body();
    }
  }
  reset_simd_path();
  set_bulk_threads(1);
}
