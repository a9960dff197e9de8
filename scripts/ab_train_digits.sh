#!/usr/bin/env bash
# Same-run A/B of two train_digits builds on the development VM, whose neighbours move a single
# timing by 20-40 %: the two binaries run in alternation, R rounds, and each side reports the
# smallest of its medians (docs/performance.md's before/after tables came from this).
#
#   scripts/ab_train_digits.sh OLD_BINARY NEW_BINARY "bf16 2048 1 512" "fp32 512 2 256" ...
#   R=5 STEPS=50 scripts/ab_train_digits.sh ...      # rounds (default 3) and steps (default 30)
#
# Each configuration is "precision hidden layers batch".
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
old=$1
new=$2
shift 2
rounds=${R:-3}
steps=${STEPS:-30}
median() {
  "$1" --benchmark --precision "$2" --hidden "$3" --layers "$4" --batch "$5" --steps "$steps" 2>&1 |
    tail -1 | grep -o 'median [0-9.e+-]*' | cut -d' ' -f2
}
for config in "$@"; do
  read -r precision hidden layers batch <<<"$config"
  best_old="" best_new=""
  for _ in $(seq "$rounds"); do
    for side in old new; do
      binary=$old
      [ "$side" = new ] && binary=$new
      m=$(median "$binary" "$precision" "$hidden" "$layers" "$batch")
      if [ "$side" = old ]; then
        best_old=$(python3 -c "print(min(float('$m'), float('${best_old:-inf}')))")
      else
        best_new=$(python3 -c "print(min(float('$m'), float('${best_new:-inf}')))")
      fi
    done
  done
  ratio=$(python3 -c "print(f'{$best_new / $best_old:.2f}')")
  echo "$precision $hidden $layers $batch: old $best_old ms, new $best_new ms, new / old $ratio"
done
