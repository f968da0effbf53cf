#!/usr/bin/env bash
# Issue 50: the embedded trainer with and without its training step compiled (compile_train), one core,
# hf-static (the one-core default), each call beside TRL's GRPOTrainer in the same call (scripts/bench_trl.py),
# the two ways alternated in each round.
#   bash studies/fast-2026-11-29/compile-train-rounds.sh [ROUNDS] > studies/fast-2026-11-29/compile-train-rounds.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
for i in $(seq 1 "${1:-3}"); do
  for flag in "" "--compile-train"; do
    echo "== round $i $(git rev-parse --short HEAD) threads 1 sampler hf-static ${flag:-eager} $(date -u +%T)"
    .venv/bin/python scripts/bench_trl.py --steps 30 --threads 1 --sampler hf-static $flag 2>&1 \
      | grep -E "^(embedded|TRL|ratio|warning)"
  done
done
echo "end $(date -u +%T)"
