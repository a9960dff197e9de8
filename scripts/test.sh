#!/usr/bin/env bash
# Sets up, builds and tests mixprec exactly as CI does (.ci/run calls this script):
#   1. formatting (clang-format) of every tracked source; clang-tidy (.clang-tidy) after the build
#   2. Release, C++17, warnings as errors, CUDA on if nvcc is installed:
#      every label CI runs: unit, exhaustive (the CI subset), reference, install
#   3. AddressSanitizer + UndefinedBehaviorSanitizer in C++20 (so that one build checks both the
#      sanitizers and the newer standard), warnings as errors: unit (the library and its tests;
#      the examples and the one-header-per-file checks are compiled in stage 2 only).  Stages 3
#      and 4 link the tests against mixprec::compiled, stage 2 builds them header-only.
#   4. ThreadSanitizer, C++17: the tests that run threads (label `threads`)
# Any warning, failing test or sanitizer report fails the run.  Build trees go to build/ci-*.
# The full exhaustive matrix is not run here: `ctest --test-dir build/ci-release17 -L exhaustive_full`.
#
#   scripts/test.sh --quick   Release C++17 unit tests only, in the compiled mode (no CUDA,
#                             sanitizers, sweeps, examples or benchmarks): does the library work
#                             on this machine?
#
# Compiles go through ccache when it is installed (setup-debian.sh installs it): a second run of
# an unchanged tree, in this clone or another, recompiles nothing.  Results never depend on it.
# Each stage's time is printed at the end, also when a stage fails.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=false
for argument in "$@"; do
  case "$argument" in
    --quick) quick=true ;;
    *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
  esac
done
"$(pwd)/scripts/setup-debian.sh"

jobs=$(nproc)
started=$SECONDS
stage_names=()
stage_starts=()
stage() {
  stage_names+=("$*")
  stage_starts+=($SECONDS)
  printf '\n==== %s (%ds elapsed)\n' "$*" $((SECONDS - started))
}
stage_times() {
  local status=$? i end
  printf '\n==== stage times (%s)\n' "$([ $status -eq 0 ] && echo passed || echo "FAILED, exit $status")"
  for i in "${!stage_names[@]}"; do
    end=$SECONDS
    [ $((i + 1)) -lt ${#stage_starts[@]} ] && end=${stage_starts[$((i + 1))]}
    printf '%6ds  %s\n' $((end - stage_starts[i])) "${stage_names[$i]}"
  done
  printf '%6ds  total\n' $((SECONDS - started))
}
trap stage_times EXIT

launcher=()
if command -v ccache >/dev/null 2>&1; then
  # Paths under the clone are hashed relative to it, so another clone of the same commit hits.
  export CCACHE_BASEDIR="$(pwd)" CCACHE_NOHASHDIR=true
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  ccache --zero-stats >/dev/null
fi

cuda=OFF
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda=ON
  command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH
else
  echo "NOTE: nvcc not found: the CUDA compile checks are SKIPPED in this run."
fi

# Defined before --quick uses them.
configure() {  # configure <dir> <extra cmake args...>
  local dir=$1
  shift
  mkdir -p build
  cmake -S . -B "$dir" -DMIXPREC_WARNINGS_AS_ERRORS=ON "${launcher[@]}" "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
}
build() { cmake --build "$1" -j"$jobs"; }

if $quick; then
  stage "quick: Release, C++17, no CUDA: build the unit tests"
  # In the compiled mode (the kernels built once, not in each test file): the same bits as
  # header-only, which the full run checks, in about half the compile time.
  configure build/quick -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DMIXPREC_CUDA=OFF \
    -DMIXPREC_BUILD_BENCHMARKS=OFF -DMIXPREC_BUILD_EXAMPLES=OFF -DMIXPREC_BUILD_SWEEPS=OFF \
    -DMIXPREC_BUILD_HEADER_CHECKS=OFF -DMIXPREC_TESTS_USE_COMPILED=ON
  build build/quick
  stage "quick: unit tests"
  ctest --test-dir build/quick -L unit -j"$jobs" --output-on-failure
  stage "quick: all unit tests passed"
  exit 0
fi

stage "clang-format"
mapfile -t sources < <(git ls-files '*.hpp' '*.cpp' '*.cu' '*.cuh' '*.inl')
clang-format --dry-run --Werror "${sources[@]}"

mkdir -p build
# Sanitizer builds: -g1 (line tables for the reports; full debug information costs about 15% more
# compile time); stage 2's -O3 build already holds the optimiser's warnings to -Werror.
# ThreadSanitizer: -O1, what its manual recommends.
# ASan + UBSan: -Og, with ASan's checks as calls into its run time rather than inline code
# (--param asan-instrumentation-with-call-threshold=0).  The same checks, in half the compile
# time: the build's 109 objects took 2623 CPU s at -O1 and 1327 s so (the largest,
# math/elementary_test.cpp, 152 s against 62 s: at -O1, 85% of it went to optimising and
# generating the inline checks), while the unit tests run 204 s instead of 106 s (2 cores, AMD
# EPYC, g++ 12).  -O0 would compile no faster, and GCC's intrinsics are macros there, which
# -Wsign-conversion rejects.
tsan_flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
asan_flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG --param=asan-instrumentation-with-call-threshold=0")
stage "Release, C++17 (CUDA $cuda): build"
# CUDA: machine code for sm_90 (the GPU scripts/gpu-check.sh runs on), PTX for sm_80 and sm_89.
# The PTX still takes every file through nvcc's front end and code generator for those
# architectures (their template errors and warnings fail the build); it skips ptxas, which cost
# 17 of the 37 s that each further architecture adds to a file like kernel_runs.cu.
configure build/ci-release17 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DMIXPREC_CUDA=$cuda \
  "-DCMAKE_CUDA_ARCHITECTURES=80-virtual;89-virtual;90-real" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
build build/ci-release17
stage "clang-tidy (.clang-tidy) over the examples, which include every host header, and mixprec::compiled"
# One clang-tidy per file, as many at once as there are cores (xargs fails if any of them does).
# src/compiled/where_called_N.cpp instantiate every body the headers compile only where called
# (docs/design.md), which no example may call.
printf '%s\n' examples/readme_tour/readme_tour.cpp examples/loss_scaler_tour/loss_scaler_tour.cpp \
  examples/format_comparison/format_comparison.cpp src/compiled/where_called_1.cpp src/compiled/where_called_2.cpp \
  src/compiled/where_called_3.cpp |
  xargs -P "$jobs" -n 1 clang-tidy -p build/ci-release17 --quiet --extra-arg=-std=c++17
stage "Release, C++17: unit, install and MPI tests"
ctest --test-dir build/ci-release17 -L 'unit|install|mpi' -j"$jobs" --output-on-failure
stage "Release, C++17: exhaustive (CI subset) and reference tests"
# Two at a time: most of these run on one thread, and no result depends on what else runs.
ctest --test-dir build/ci-release17 -L '^(exhaustive|reference)$' -j"$jobs" --output-on-failure

stage "AddressSanitizer + UndefinedBehaviorSanitizer, C++20: build"
# The sanitizer builds link the tests against mixprec::compiled (the bulk kernels built once, as
# a user of the compiled mode gets them); stage 2 runs them header-only: every unit test passes in
# both modes.
configure build/ci-sanitize20 -DCMAKE_BUILD_TYPE=RelWithDebInfo "${asan_flags[@]}" -DCMAKE_CXX_STANDARD=20 -DMIXPREC_CUDA=OFF \
  -DMIXPREC_TESTS_USE_COMPILED=ON \
  -DMIXPREC_SANITIZE=address,undefined -DMIXPREC_BUILD_BENCHMARKS=OFF -DMIXPREC_BUILD_SWEEPS=OFF \
  -DMIXPREC_BUILD_EXAMPLES=OFF -DMIXPREC_BUILD_HEADER_CHECKS=OFF
build build/ci-sanitize20
stage "Sanitizers, C++20: unit tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/ci-sanitize20 -L unit -j"$jobs" --output-on-failure

stage "ThreadSanitizer, C++17: build the tests labelled threads"
configure build/ci-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo "${tsan_flags[@]}" -DCMAKE_CXX_STANDARD=17 -DMIXPREC_CUDA=OFF \
  -DMIXPREC_TESTS_USE_COMPILED=ON \
  -DMIXPREC_SANITIZE=thread -DMIXPREC_BUILD_BENCHMARKS=OFF -DMIXPREC_BUILD_EXAMPLES=OFF -DMIXPREC_BUILD_SWEEPS=OFF
cmake --build build/ci-tsan -j"$jobs" --target thread_tests
stage "ThreadSanitizer: the tests labelled threads"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --test-dir build/ci-tsan -L threads --output-on-failure

stage "all checks passed"
command -v ccache >/dev/null 2>&1 && ccache --show-stats | grep -Ei 'hits|misses' || true
