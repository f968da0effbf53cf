#!/usr/bin/env bash
# Issue 50, the CPU goals: each core count's default sampler against TRL's GRPOTrainer (scripts/bench_trl.py,
# which times both in one call), in rounds that interleave the three comparisons:
#   1 core : --threads 1 --sampler hf-static (ours and TRL on one thread)
#   2 cores: --threads 2 --sampler hf-static-process, TRL on 2 threads (as before) and on 1 thread (its faster
#            setting on the 2-core VMs: the fair "TRL at its best on this machine")
#   bash studies/fast-2026-12-01/defaults-rounds.sh [ROUNDS] > studies/fast-2026-12-01/defaults-rounds.log 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
echo "# $(git rev-parse --short HEAD), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(date -u '+%F %T') UTC"
for i in $(seq 1 "${1:-3}"); do
  for way in "--threads 1 --sampler hf-static" \
             "--threads 2 --sampler hf-static-process" \
             "--threads 2 --sampler hf-static-process --trl-threads 1"; do
    echo "== round $i: $way $(date -u +%T)"
    .venv/bin/python scripts/bench_trl.py --steps 50 $way 2>&1 | grep -E "^(embedded|TRL|ratio|warning)"
  done
done
echo "end $(date -u +%T)"
