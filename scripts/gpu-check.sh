#!/usr/bin/env bash
# Builds, tests and benchmarks everything GPU-side of mixprec in one run, on a machine with an
# NVIDIA GPU and the CUDA toolkit (nvcc, cuBLAS, cuBLASLt; NCCL optional; compute-sanitizer):
#
#   scripts/gpu-check.sh [results-directory]        (default: build/gpu-check)
#
#   1. the device: nvidia-smi's name, compute capability, driver, memory
#   2. a Release build with CUDA for sm_80, sm_89, sm_90 and the device's own architecture,
#      warnings as errors
#   3. the CUDA backend's unit tests (host side) and every test labelled gpu: device conversions
#      against the host's over all 2^32 floats (bf16, fp16, e4m3fn, e5m2, nearest-even, both
#      overflow rules) and a stratified sample of every format and mode; bulk conversion,
#      quantise, dequantise and the multi-tensor unscale against the host bit for bit; the
#      GEMM (own kernel and cuBLASLt) against a float64 reference; a CUDA graph of a full scaled
#      step replayed 1000 times against the host loss_scaler; the device scaler with NCCL
#   4. compute-sanitizer memcheck and racecheck over the small "[sanitize]" cases
#   5. the benchmarks (3 repetitions, medians): bandwidth against a device-to-device copy of the
#      same bytes, GEMM 4096³ and 8192³ against cuBLAS / cuBLASLt; tables for docs/performance.md
#
# Everything goes to the results directory (logs, JSON, tables, summary.txt).  The script stops at
# the first failing step and says which.  docs/cuda.md, "Verification", describes each step.
set -euo pipefail
cd "$(dirname "$0")/.."
results=$(realpath -m "${1:-build/gpu-check}")
build=build/gpu
mkdir -p "$results"
summary="$results/summary.txt"
: >"$summary"
started=$SECONDS
step() { printf '\n==== %s (%ds elapsed)\n' "$*" $((SECONDS - started)) | tee -a "$summary"; }
fail() { echo "FAILED: $*" | tee -a "$summary"; exit 1; }

command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH
command -v nvcc >/dev/null 2>&1 || fail "nvcc not found (install the CUDA toolkit)"
command -v nvidia-smi >/dev/null 2>&1 || fail "nvidia-smi not found: no NVIDIA driver on this machine"

step "1. device"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv | tee "$results/device.csv"
nvcc --version | tail -2 | tee -a "$results/device.csv"
capability=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
architectures="80;89;90"
case ";$architectures;" in *";$capability;"*) ;; *) architectures="$architectures;$capability" ;; esac
echo "architectures: $architectures" | tee -a "$summary"

step "2. build (Release, CUDA $architectures, warnings as errors)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMIXPREC_CUDA=ON -DMIXPREC_WARNINGS_AS_ERRORS=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$architectures" -DMIXPREC_BUILD_SWEEPS=ON >"$results/configure.log" 2>&1 ||
  { cat "$results/configure.log"; fail "configure"; }
targets=(gpu_test cuda_benchmark cuda_launchers_test device_compile_test cuda_interop_device_compile_test
  instruction_fixups_test launch_geometry_test multi_tensor_test gemm_layout_test gemm_arguments_test
  device_scaler_step_test)
if grep -q nccl_scaler_test "$build/tests/cuda/gpu/CTestTestfile.cmake" 2>/dev/null; then
  targets+=(nccl_scaler_test nccl_agreement_test)
fi
cmake --build "$build" --target "${targets[@]}" -j"$(nproc)" >"$results/build.log" 2>&1 ||
  { tail -30 "$results/build.log"; fail "build (see $results/build.log)"; }

step "3a. the CUDA backend's host-side tests (unit, and the fix-ups over every float)"
ctest --test-dir "$build" -R 'instruction_fixups|launch_geometry|multi_tensor|gemm_layout|gemm_arguments|device_scaler_step|cuda_launchers|device_code_compiles|cuda_interop_compiles|nccl_agreement' \
  -E every_mode -j"$(nproc)" --output-on-failure >"$results/unit.log" 2>&1 ||
  { tail -30 "$results/unit.log"; fail "host-side tests (see $results/unit.log)"; }
tail -3 "$results/unit.log" | tee -a "$summary"

step "3b. GPU tests (label gpu: gpu_test, and nccl_scaler_test where NCCL is)"
"$build/tests/cuda/gpu/gpu_test" --durations yes >"$results/gpu_test.log" 2>&1 ||
  { tail -40 "$results/gpu_test.log"; fail "gpu_test (see $results/gpu_test.log)"; }
tail -3 "$results/gpu_test.log" | tee -a "$summary"
if [ -x "$build/tests/cuda/gpu/nccl_scaler_test" ]; then
  "$build/tests/cuda/gpu/nccl_scaler_test" 2>&1 | tee -a "$summary" || fail "nccl_scaler_test"
fi

step "4. compute-sanitizer (memcheck, racecheck) over the [sanitize] cases"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || fail "compute-sanitizer not found"
for tool in memcheck racecheck; do
  "$sanitizer" --tool "$tool" --error-exitcode 1 "$build/tests/cuda/gpu/gpu_test" "[sanitize]" \
    >"$results/sanitizer_$tool.log" 2>&1 || { tail -30 "$results/sanitizer_$tool.log"; fail "compute-sanitizer $tool"; }
  tail -3 "$results/sanitizer_$tool.log" | tee -a "$summary"
done

step "5. benchmarks (3 repetitions, medians)"
"$build/benchmarks/cuda_benchmark" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$results/cuda_benchmark.json" --benchmark_out_format=json >"$results/cuda_benchmark.log" 2>&1 ||
  { tail -20 "$results/cuda_benchmark.log"; fail "benchmarks (see $results/cuda_benchmark.log)"; }
python3 scripts/gpu_benchmark_table.py <"$results/cuda_benchmark.json" | tee "$results/tables.md"

step "all GPU checks passed; results in $results (commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
