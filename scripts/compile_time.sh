#!/usr/bin/env bash
# CPU seconds (user + system) that g++ spends on the compile-time probes, header-only and in the
# compiled mode (-DMIXPREC_COMPILED=1, what linking mixprec::compiled adds), one compile at a time.
# The table in docs/performance.md ("Compile time") comes from this script.
#
#   scripts/compile_time.sh [repeats]     (default 1; prints the minimum over the repeats)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-1}
cxx=${CXX:-g++}
flags=(-std=c++17 -O2 -Iinclude -Iexamples -I/usr/include/eigen3)
probes=(benchmarks/compile_time/eigen_product.cpp benchmarks/compile_time/umbrella.cpp
        benchmarks/compile_time/umbrella_convert_n.cpp benchmarks/compile_time/training_step.cpp
        examples/train_digits/train_digits.cpp)
timing=$(mktemp)
trap 'rm -f "$timing"' EXIT
measure() {  # measure <file> <extra flags...>: the least CPU seconds over the repeats
  local best="" t
  for _ in $(seq "$repeats"); do
    /usr/bin/time -o "$timing" -f '%U %S' "$cxx" "${flags[@]}" "${@:2}" -c "$1" -o /dev/null ||
      { echo "compile failed: $1 ${*:2}" >&2; exit 1; }
    t=$(awk '{printf "%.2f", $1 + $2}' "$timing")
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$t; fi
  done
  echo "$best"
}
printf '%-48s %12s %12s\n' "probe ($("$cxx" -dumpfullversion), -O2)" "header-only" "compiled"
for probe in "${probes[@]}"; do
  if [[ $probe == *eigen* ]]; then
    printf '%-48s %12s %12s\n' "$probe" "$(measure "$probe")" "-"
  else
    printf '%-48s %12s %12s\n' "$probe" "$(measure "$probe")" "$(measure "$probe" -DMIXPREC_COMPILED=1)"
  fi
done
