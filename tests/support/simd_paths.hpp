// Runs a test body on every SIMD path this CPU and build have (bulk/simd_path.hpp), with 1 and 2
// bulk threads, then restores the defaults; and a guard that forces one path for a scope.
#pragma once

#include <mixprec/bulk/dispatch.hpp>
#include <mixprec/bulk/simd_path.hpp>

#include <catch2/catch.hpp>

// Forces a SIMD path for a scope; restores the detected one even when a check throws.
struct simd_path_guard {
  explicit simd_path_guard(mixprec::simd_path p) { mixprec::force_simd_path(p); }
  ~simd_path_guard() { mixprec::reset_simd_path(); }
  simd_path_guard(const simd_path_guard&) = delete;
  simd_path_guard& operator=(const simd_path_guard&) = delete;
};

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
