#!/usr/bin/env bash
# Everything GPU-side of mixprec, split so that the build runs where nvcc is and only the run needs
# the GPU (a lent GPU is short: about 15 minutes a session, start-up included):
#
#   scripts/gpu-check.sh build [bundle]            on any machine with nvcc, cuBLAS(Lt), CMake
#   scripts/gpu-check.sh run <bundle> <results>    on the GPU machine: no compiler needed
#   scripts/gpu-check.sh all [results]             both, on one machine with a GPU and nvcc
#
# build: a Release build with CUDA for one architecture (MIXPREC_GPU_ARCH, default 90: H100,
#   H200), warnings as errors, in build/gpu-sm<arch>; then a bundle (default build/gpu-bundle,
#   about 10 MB) holding the test and benchmark binaries, the runtime libraries they need that a
#   CUDA machine may lack (libcudart, Google Benchmark), and this script.  cuBLAS, cuBLASLt and
#   NCCL are taken from the GPU machine's CUDA installation.
# run: each step has its own time limit, and a failing step does not stop the next; the whole run
#   is sized to finish in under 8 minutes on an H100 (docs/cuda.md, "Verification"):
#     1. the device (nvidia-smi), the libraries the binaries resolve to
#     2. gpu_test: conversions on a stratified sample of every format and mode, every code decoded,
#        bulk convert / quantise / dequantise and the multi-tensor unscale against the host bit for
#        bit, the GEMMs (own kernel, cuBLASLt) against a float64 reference, a CUDA graph of a
#        scaled step replayed 1000 times against the host loss_scaler
#     3. side by side: the exhaustive conversions (every float, bf16 fp16 e4m3fn e5m2, both
#        overflow rules) and compute-sanitizer memcheck and racecheck over the "[sanitize]" cases
#     4. nccl_scaler_test (one rank) where NCCL is
#     5. cuda_benchmark (3 repetitions): bandwidth against a device-to-device copy of the same
#        bytes, GEMMs at 4096^3 and 8192^3 against cuBLAS and cuBLASLt
#   Every log, the benchmark JSON and summary.txt go to the results directory; the exit status is
#   the number of failed steps.  scripts/gpu_benchmark_table.py turns the JSON into the tables of
#   docs/performance.md (on any machine).
set -uo pipefail

usage() {
  sed -n '2,8p' "$0" >&2
  exit 2
}

# ---------------------------------------------------------------------------------------------
build_bundle() {
  set -e
  cd "$(dirname "$0")/.."
  local bundle arch build
  bundle=$(realpath -m "${1:-build/gpu-bundle}")
  arch=${MIXPREC_GPU_ARCH:-90}
  build=build/gpu-sm$arch
  command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH
  command -v nvcc >/dev/null 2>&1 || { echo "gpu-check build: nvcc not found" >&2; exit 1; }
  local launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  local generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  cmake "${generator[@]}" -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMIXPREC_CUDA=ON \
    -DMIXPREC_WARNINGS_AS_ERRORS=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" "${launcher[@]}" >/dev/null
  local targets=(gpu_test cuda_benchmark)
  grep -q 'nccl_scaler_test' "$build/tests/cuda/gpu/CTestTestfile.cmake" 2>/dev/null && targets+=(nccl_scaler_test)
  cmake --build "$build" --target "${targets[@]}" -j"$(nproc)"
  rm -rf "$bundle"
  mkdir -p "$bundle/bin" "$bundle/lib"
  cp "$build/tests/cuda/gpu/gpu_test" "$build/benchmarks/cuda_benchmark" "$bundle/bin/"
  [ -x "$build/tests/cuda/gpu/nccl_scaler_test" ] && cp "$build/tests/cuda/gpu/nccl_scaler_test" "$bundle/bin/"
  # Libraries a CUDA machine may not have: the CUDA runtime (small) and Google Benchmark.  cuBLAS,
  # cuBLASLt and NCCL (hundreds of MB) must be there.
  local binary library
  for binary in "$bundle"/bin/*; do
    ldd "$binary" | awk '/=> \// {print $1, $3}' | while read -r name library; do
      case "$name" in libcudart.so* | libbenchmark.so*) cp -L "$library" "$bundle/lib/$name" ;; esac
    done
  done
  cp "$0" "$bundle/gpu-check.sh"
  git rev-parse --short HEAD >"$bundle/commit" 2>/dev/null || echo unknown >"$bundle/commit"
  git diff --quiet HEAD 2>/dev/null || echo "(with uncommitted changes)" >>"$bundle/commit"
  echo "sm_$arch" >"$bundle/architecture"
  du -sh "$bundle"
  echo "bundle ready: $bundle (commit $(head -1 "$bundle/commit"), sm_$arch)"
}

# ---------------------------------------------------------------------------------------------
run_bundle() {
  [ $# -eq 2 ] || usage
  local bundle results
  bundle=$(realpath "$1")
  results=$(realpath -m "$2")
  mkdir -p "$results"
  local summary="$results/summary.txt" started=$SECONDS
  : >"$summary"
  note() { printf '%s\n' "$*" | tee -a "$summary"; }
  step() { note "" "==== $* ($((SECONDS - started)) s elapsed)"; }
  # run_step NAME SECONDS COMMAND...: the command's output to NAME.log; its status and time noted.
  run_step() {
    local name=$1 limit=$2 begun=$SECONDS status
    shift 2
    timeout --kill-after=10 "$limit" "$@" >"$results/$name.log" 2>&1
    status=$?
    if [ $status -eq 0 ]; then
      note "  $name: passed ($((SECONDS - begun)) s)"
    else
      [ $status -eq 124 ] && note "  $name: TIMED OUT after $limit s" || note "  $name: FAILED, status $status ($((SECONDS - begun)) s)"
      tail -25 "$results/$name.log" | sed 's/^/    | /' | tee -a "$summary"
    fi
    return 0
  }

  # The CUDA libraries: the toolkit's, then any a Python environment brought (PyTorch's wheels).
  local libraries="$bundle/lib" directory
  for directory in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$directory" ] && libraries="$libraries:$directory"
  done
  for directory in $(find /usr/local /usr/lib /opt -maxdepth 9 \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) -printf '%h\n' 2>/dev/null | sort -u); do
    libraries="$libraries:$directory"
  done
  export LD_LIBRARY_PATH="$libraries${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="/usr/local/cuda/bin:$PATH"
  local bin="$bundle/bin"

  step "1. device (bundle: commit $(head -1 "$bundle/commit"), $(cat "$bundle/architecture"))"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee -a "$summary"
  date -u '+%Y-%m-%d %H:%M UTC' | tee -a "$summary"
  for b in "$bin"/*; do
    echo "== $b"
    ldd "$b"
  done >"$results/ldd.log" 2>&1
  # Registers, stack frames (spills) and shared memory of every kernel, where cuobjdump is.
  if command -v cuobjdump >/dev/null 2>&1; then
    for b in "$bin"/gpu_test "$bin"/cuda_benchmark; do
      echo "== $b"
      cuobjdump -res-usage "$b"
    done >"$results/resources.log" 2>&1
  fi
  grep -q 'not found' "$results/ldd.log" && { note "  missing libraries:"; grep 'not found' "$results/ldd.log" | tee -a "$summary"; }

  step "2. gpu_test (everything but the exhaustive sweep)"
  run_step gpu_test 150 "$bin/gpu_test" "~[exhaustive]" --durations yes

  step "3. exhaustive conversions, memcheck and racecheck, side by side"
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  run_step gpu_test_exhaustive 150 "$bin/gpu_test" "[exhaustive]" --durations yes &
  local exhaustive=$!
  if [ -x "$sanitizer" ]; then
    run_step memcheck 150 "$sanitizer" --tool memcheck --leak-check full --error-exitcode 1 "$bin/gpu_test" "[sanitize]" &
    local memcheck=$!
    run_step racecheck 150 "$sanitizer" --tool racecheck --error-exitcode 1 "$bin/gpu_test" "[sanitize]"
    wait $memcheck || true
  else
    note "  compute-sanitizer: FAILED (not found)"
  fi
  wait $exhaustive || true

  if [ -x "$bin/nccl_scaler_test" ]; then
    step "4. the device scaler through NCCL (one rank)"
    run_step nccl_scaler_test 40 "$bin/nccl_scaler_test"
  fi

  step "5. benchmarks (3 repetitions, medians)"
  run_step cuda_benchmark 150 "$bin/cuda_benchmark" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_min_time=0.2 --benchmark_out="$results/cuda_benchmark.json" --benchmark_out_format=json

  # Counted from the summary: the background steps run in subshells, whose variables stay there.
  local failed
  failed=$(grep -c -E ': (FAILED|TIMED OUT)' "$summary")
  step "done: $failed step(s) failed; results in $results"
  return "$failed"
}

case "${1:-}" in
  build)
    shift
    build_bundle "$@"
    ;;
  run)
    shift
    run_bundle "$@"
    ;;
  all)
    shift
    cd "$(dirname "$0")/.." || exit 1
    results=$(realpath -m "${1:-build/gpu-check}")
    build_bundle build/gpu-bundle && run_bundle build/gpu-bundle "$results"
    ;;
  *) usage ;;
esac
