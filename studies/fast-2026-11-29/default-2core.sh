#!/usr/bin/env bash
# Issue 50, two cores: the new 2-core default (`hf-static-process`, whose compile_train auto compiles the
# training step too) against the default before (`hf-process`, both steps eager), each call timing TRL's
# GRPOTrainer on 2 threads in the same call (scripts/bench_trl.py), rounds alternating the two.
#   bash studies/fast-2026-11-29/default-2core.sh [ROUNDS] > studies/fast-2026-11-29/default-2core.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
for i in $(seq 1 "${1:-3}"); do
  for sampler in hf-process hf-static-process; do
    echo "== round $i $(git rev-parse --short HEAD) threads 2 sampler $sampler $(date -u +%T)"
    .venv/bin/python scripts/bench_trl.py --steps 50 --threads 2 --sampler "$sampler" 2>&1 \
      | grep -E "^(embedded|TRL|ratio|warning)"
  done
done
echo "end $(date -u +%T)"
