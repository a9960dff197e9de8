#!/usr/bin/env bash
# CPU seconds (user + system) that g++ spends on the compile-time probes, header-only, in the
# compiled mode (-DMIXPREC_COMPILED=1, what linking mixprec::compiled adds), and in the compiled
# mode with the umbrella precompiled (CMake: target_precompile_headers(app PRIVATE
# <mixprec/mixprec.hpp>); Eigen's probe then with <Eigen/Dense> precompiled), one compile at a
# time; building the precompiled headers is not counted, as building the library is not.
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
measure() {  # measure <file> <extra flags...>: the least CPU seconds over the repeats (the extra flags
  # come first, so that an -I of precompiled headers is searched before include/)
  local best="" t
  for _ in $(seq "$repeats"); do
    /usr/bin/time -o "$timing" -f '%U %S' "$cxx" "${@:2}" "${flags[@]}" -c "$1" -o /dev/null ||
      { echo "compile failed: $1 ${*:2}" >&2; exit 1; }
    t=$(awk '{printf "%.2f", $1 + $2}' "$timing")
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$t; fi
  done
  echo "$best"
}
# Precompiled headers, found before the headers themselves (GCC looks for NAME.gch in each
# include directory first); -Werror=invalid-pch: a stale or mismatched one fails, never falls
# back to parsing unnoticed.
pch=$(mktemp -d)
trap 'rm -f "$timing"; rm -rf "$pch"' EXIT
mkdir -p "$pch/mixprec" "$pch/Eigen"
# (g++ warns of the umbrella's #pragma once when the header is the main file: not shown.)
"$cxx" "${flags[@]}" -DMIXPREC_COMPILED=1 -x c++-header include/mixprec/mixprec.hpp -o "$pch/mixprec/mixprec.hpp.gch" \
  2>"$pch/warnings" || { cat "$pch/warnings" >&2; exit 1; }
"$cxx" "${flags[@]}" -x c++-header /usr/include/eigen3/Eigen/Dense -o "$pch/Eigen/Dense.gch"
# The headers' directories beside them, as links: a file that includes a precompiled header again
# finds it there (#pragma once or its guard then skips it, or, without one, its relative
# includes resolve).
ln -s "$(pwd)"/include/mixprec/* "$pch/mixprec/"
ln -s /usr/include/eigen3/Eigen/* "$pch/Eigen/"
printf '%-48s %12s %12s %14s\n' "probe ($("$cxx" -dumpfullversion), -O2)" "header-only" "compiled" "compiled+PCH"
for probe in "${probes[@]}"; do  # (assignments, so that a failed compile stops the script)
  if [[ $probe == *eigen* ]]; then
    plain=$(measure "$probe")
    compiled=-
    # (-I, so that it is searched before Eigen's own directory; Eigen's warnings, which its
    # usual -isystem hides, are not ours to show.)
    precompiled=$(measure "$probe" -I"$pch" -Werror=invalid-pch -Wno-ignored-attributes -include Eigen/Dense)
  else
    plain=$(measure "$probe")
    compiled=$(measure "$probe" -DMIXPREC_COMPILED=1)
    precompiled=$(measure "$probe" -DMIXPREC_COMPILED=1 -I"$pch" -Werror=invalid-pch -include mixprec/mixprec.hpp)
  fi
  printf '%-48s %12s %12s %14s\n' "$probe" "$plain" "$compiled" "$precompiled"
done
