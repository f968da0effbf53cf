#!/usr/bin/env bash
# Issue 50, two cores, at the trial level: the 2-core default (hf-process) against both steps compiled
# (hf-static-process + compile_train) in real trials of the shipped train.toml at --budget 90 (BUDGET), 2 seeds each,
# the two ways alternated round by round (trial_way.py), recorded in this checkout's ledger: run it in a
# fresh clone.
#   bash studies/fast-2026-11-29/trial-2core.sh [ROUNDS] > studies/fast-2026-11-29/trial-2core.log 2>&1
#   BUDGET=180 bash studies/fast-2026-11-29/trial-2core.sh 2 > studies/fast-2026-11-29/trial-2core-180.log 2>&1
# WAYS picks the ways (trial_way.py), "default compiled" unless set:
#   WAYS="process default" bash studies/fast-2026-11-29/trial-2core.sh 3 > studies/fast-2026-11-29/trial-2core-auto.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
for i in $(seq 1 "${1:-2}"); do
  for way in ${WAYS:-default compiled}; do
    echo "== round $i $(git rev-parse --short HEAD) way $way $(date -u +%T)"
    .venv/bin/python studies/fast-2026-11-29/trial_way.py "$way" --config train.toml --budget "${BUDGET:-90}" --seeds 2 --all-seeds --description "$way round $i"
  done
done
echo "end $(date -u +%T)"
