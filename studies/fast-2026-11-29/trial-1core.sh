#!/usr/bin/env bash
# Issue 50, one core, at the trial level: the one-core default (hf-static, its training step eager) against the
# training step compiled too (compile_train), in real trials of the shipped train.toml at --budget 90 (BUDGET),
# 2 seeds each, the whole trial pinned to one core (taskset -c CORE, 0 unless set: the trainer sees one core, so
# its `auto` is the one-core default), the ways alternated round by round (trial_way.py), recorded in this
# checkout's ledger: run it in a fresh clone.
#   bash studies/fast-2026-11-29/trial-1core.sh [ROUNDS] > studies/fast-2026-11-29/trial-1core.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
# the machine file a one-core user's prepare.py writes (the runner plans on its own affinity either way)
taskset -c "${CORE:-0}" .venv/bin/python prepare.py | tail -2
# a quick look compiles both steps once into this checkout's inductor cache (a fresh clone compiles cold)
taskset -c "${CORE:-0}" .venv/bin/python studies/fast-2026-11-29/trial_way.py static-compiled --quick --budget 15
for i in $(seq 1 "${1:-2}"); do
  for way in ${WAYS:-default static-compiled}; do
    echo "== round $i $(git rev-parse --short HEAD) way $way core ${CORE:-0} $(date -u +%T)"
    taskset -c "${CORE:-0}" .venv/bin/python studies/fast-2026-11-29/trial_way.py "$way" --config train.toml \
      --budget "${BUDGET:-90}" --seeds 2 --all-seeds --description "$way 1-core round $i"
  done
done
echo "end $(date -u +%T)"
