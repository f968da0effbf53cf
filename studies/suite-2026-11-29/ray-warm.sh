#!/usr/bin/env bash
# A Ray seed task's children: cold (AUTORL_WARM=0: the training child and the eval child each import torch)
# against forked from one warm starter per task (the default since this change), the same code, alternated.
# Each trial: the shipped classic.toml, 2 seeds, `--ray local`, in a fresh root (a baseline).
#   bash studies/suite-2026-11-29/ray-warm.sh [ROUNDS] > studies/suite-2026-11-29/ray-warm.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
for i in $(seq 1 "${1:-2}"); do
  for warm in 0 1; do
    root=$(mktemp -d)
    cp classic.toml "$root/"
    echo "== round $i $(git rev-parse --short HEAD) AUTORL_WARM=$warm $(date -u +%T)"
    start=$(date +%s.%N)
    AUTORL_ROOT=$root AUTORL_WARM=$warm .venv/bin/python run.py --track classic --ray local --seeds 2 \
      --all-seeds 2>&1 | grep -E "^(status|startup_seconds|training_seconds|eval_seconds|total_seconds):"
    echo "command wall: $(echo "$(date +%s.%N) - $start" | bc) s"
    rm -rf "$root"
  done
done
echo "end $(date -u +%T)"
