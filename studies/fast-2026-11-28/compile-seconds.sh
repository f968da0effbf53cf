#!/usr/bin/env bash
# Issue 50: what the compiled samplers cost at start-up (the trainer's header: "its step compiled in X s"),
# printed by scripts/bench_trl.py beside its samples/s: hf-static on one core, hf-static-process on two.
#   bash studies/fast-2026-11-28/compile-seconds.sh [ROUNDS] > studies/fast-2026-11-28/compile-seconds.log 2>&1
# compile-seconds.log ran at 4d36771, whose compiled step also drew (reverted in 3213dd1); the final code's
# compile seconds are in final-rounds.log (13.0-14.3 s).
set -uo pipefail
cd "$(dirname "$0")/../.."
for i in $(seq 1 "${1:-2}"); do
  for run in "1 hf-static" "2 hf-static-process"; do
    read -r threads sampler <<< "$run"
    echo "== round $i $(git rev-parse --short HEAD) threads $threads sampler $sampler $(date -u +%T)"
    .venv/bin/python scripts/bench_trl.py --steps 20 --threads "$threads" --sampler "$sampler" 2>&1 | grep -v Loading | tail -3
  done
done
echo "end $(date -u +%T)"
