#!/usr/bin/env bash
# Issue 50, two cores: does compiling the training step (compile_train) add samples/s where the trainer runs
# beside a sampling process? The 2-core default `hf-process`, `hf-static-process` (its sampler compiled), and
# each with --compile-train, rounds alternating the four ways, each call timing TRL's GRPOTrainer on 2 threads
# in the same call (scripts/bench_trl.py).
#   bash studies/fast-2026-11-29/compile-train-2core.sh [ROUNDS] > studies/fast-2026-11-29/compile-train-2core.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
for i in $(seq 1 "${1:-3}"); do
  for sampler in hf-process hf-static-process; do
    for flag in "" "--compile-train"; do
      echo "== round $i $(git rev-parse --short HEAD) threads 2 sampler $sampler ${flag:-eager} $(date -u +%T)"
      .venv/bin/python scripts/bench_trl.py --steps 50 --threads 2 --sampler "$sampler" $flag 2>&1 \
        | grep -E "^(embedded|TRL|ratio|warning)"
    done
  done
done
echo "end $(date -u +%T)"
