#!/usr/bin/env bash
# Issue 50, the CPU side: the embedded trainer's samplers against TRL's GRPOTrainer on this machine, rounds
# alternating, each run timing both trainers itself (scripts/bench_trl.py: 50 measured steps after the warm-up
# steps; the compiled sampler's step is compiled before `ready`, outside the timed steps either way):
#   one core:  hf (HFSampler, the default there) and hf-static (StaticSampler, its step compiled)
#   two cores: hf-process (the default on 2+ cores: sampling in a second process) and hf-static on 2 threads
#   bash studies/fast-2026-11-28/rounds.sh [ROUNDS]  > studies/fast-2026-11-28/rounds.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
bench=(python3 -m uv run --no-sync --extra bench python scripts/bench_trl.py --steps 50)
for i in $(seq 1 "${1:-3}"); do
  for run in "1 hf" "1 hf-static" "2 hf-process" "2 hf-static"; do
    set -- $run
    echo "== round $i threads $1 sampler $2 $(date -u +%T)"
    "${bench[@]}" --threads "$1" --sampler "$2" 2>&1 | tail -4
  done
done
echo "end $(date -u +%T)"
