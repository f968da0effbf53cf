#!/usr/bin/env bash
# Issue 50, the CPU side: one core, hf-static of the tree before a change (BEFORE, e.g. a worktree of the
# commit before it) against this tree, the order swapped every round (ABBA); then on two cores this tree's
# hf-process (HFSampler in a second process, the default on 2+ cores) against hf-static-process (the compiled
# StaticSampler in that process). Each run times TRL's GRPOTrainer too (scripts/bench_trl.py: 50 measured
# steps after the warm-up steps). Both trees run on this tree's venv. First run for the step that draws
# (b13c3a2, reverted since) against 2f6d140: fused-rounds.log; then for the final code against 77a38e6:
# final-rounds.log.
#   bash studies/fast-2026-11-28/fused-rounds.sh BEFORE_TREE [ROUNDS]  > LOG 2>&1
set -uo pipefail
cd "$(dirname "$0")/../.."
after=$PWD
before=$(realpath "${1:?the tree before the change}")
py=$after/.venv/bin/python
bench() {  # TREE LABEL THREADS SAMPLER
  echo "== round $i $2 ($(git -C "$1" rev-parse --short HEAD)$(git -C "$1" diff --quiet HEAD -- autorl || echo +changes)) threads $3 sampler $4 $(date -u +%T)"
  (cd "$1" && "$py" -c "import sys; sys.path.insert(0, '.'); import autorl; print('autorl from', autorl.__file__)" \
    && "$py" scripts/bench_trl.py --steps 50 --threads "$3" --sampler "$4" 2>&1 | grep -v Loading | tail -3)
}
for i in $(seq 1 "${2:-3}"); do
  if [ $((i % 2)) = 1 ]; then
    bench "$before" before 1 hf-static; bench "$after" after 1 hf-static
    bench "$after" after 2 hf-process; bench "$after" after 2 hf-static-process
  else
    bench "$after" after 1 hf-static; bench "$before" before 1 hf-static
    bench "$after" after 2 hf-static-process; bench "$after" after 2 hf-process
  fi
done
echo "end $(date -u +%T)"
