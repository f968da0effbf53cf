#!/usr/bin/env bash
# Issue 50, the CPU side: this tree's defaults against TRL's GRPOTrainer, ROUNDS rounds, the order swapped
# every round: one core (`hf-static`, the one-core default) and two cores (`hf-process`, the default on 2+
# cores). Each scripts/bench_trl.py run times TRL in the same process after ours (50 measured steps each).
#   bash studies/fast-2026-11-28/defaults-rounds.sh [ROUNDS] > LOG 2>&1      (defaults-rounds.log)
set -uo pipefail
cd "$(dirname "$0")/../.."
bench() {  # THREADS SAMPLER
  echo "== round $i ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- autorl || echo +changes)) threads $1 sampler $2 $(date -u +%T)"
  .venv/bin/python scripts/bench_trl.py --steps 50 --threads "$1" --sampler "$2" 2>&1 | grep -v Loading | tail -3
}
for i in $(seq 1 "${1:-4}"); do
  if [ $((i % 2)) = 1 ]; then bench 1 hf-static; bench 2 hf-process; else bench 2 hf-process; bench 1 hf-static; fi
done
echo "end $(date -u +%T)"
