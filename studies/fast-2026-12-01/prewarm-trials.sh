#!/usr/bin/env bash
# Issue 50, at the trial level: the trainer's steps compiled once in the warm starter (prewarm.py, and
# compile_train on beside hf-static) against the tree before, in real trials of the shipped train.toml at
# --budget 90 (BUDGET), 2 seeds each, back to back as an agent runs them: each clone's warm starter is kept
# between its trials (AUTORL_WARM_KEEP's 600 s), the two trees alternated trial by trial.
#   bash studies/fast-2026-12-01/prewarm-trials.sh BEFORE_CLONE AFTER_CLONE [ROUNDS] > LOG 2>&1
# CORES (taskset's list, default 0): the cores every trial is pinned to (0: the one-core user; 0,1: two).
# Each clone: a fresh clone of the commit named, `uv sync`, `prepare.py` (run from here: its machine file
# is then the cores'), then one quick look that leaves its starter waiting (the after tree's compiles there).
set -uo pipefail
before=$1 after=$2 rounds=${3:-3} cores=${CORES:-0}
for clone in "$before" "$after"; do
  (cd "$clone" && taskset -c "$cores" .venv/bin/python prepare.py | tail -1)
  echo "== warm-up $clone $(git -C "$clone" rev-parse --short HEAD) cores $cores $(date -u +%T)"
  (cd "$clone" && taskset -c "$cores" .venv/bin/python studies/fast-2026-11-29/trial_way.py default \
    --quick --budget 15 --description "warm-up")
done
for i in $(seq 1 "$rounds"); do
  for clone in "$before" "$after"; do
    echo "== round $i $(git -C "$clone" rev-parse --short HEAD) cores $cores $(date -u +%T)"
    (cd "$clone" && taskset -c "$cores" .venv/bin/python studies/fast-2026-11-29/trial_way.py default \
      --config train.toml --budget "${BUDGET:-90}" --seeds 2 --all-seeds --description "round $i")
  done
done
echo "end $(date -u +%T)"
