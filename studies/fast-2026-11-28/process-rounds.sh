#!/usr/bin/env bash
# Issue 50, the CPU side on two cores: the hf-process sampler (HFSampler in a second process, the default on
# 2+ cores) against hf-static-process (StaticSampler in that process, its step compiled in the child before
# the trainer's `ready`), rounds alternating, each run timing TRL's GRPOTrainer on 2 threads too.
#   bash studies/fast-2026-11-28/process-rounds.sh [FIRST LAST]  > studies/fast-2026-11-28/process-rounds.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
bench=(python3 -m uv run --no-sync --extra bench python scripts/bench_trl.py --steps 50)
for i in $(seq "${1:-1}" "${2:-3}"); do
  for sampler in hf-process hf-static-process; do
    echo "== round $i threads 2 sampler $sampler $(date -u +%T)"
    "${bench[@]}" --threads 2 --sampler "$sampler" 2>&1 | grep -v "Loading\|shards\|W1128" | tail -5
  done
done
echo "end $(date -u +%T)"
