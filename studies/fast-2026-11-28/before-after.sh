#!/usr/bin/env bash
# Issue 50, the CPU side: the embedded trainer of two trees (BEFORE, e.g. a worktree of the commit before a
# change, and this one) in interleaved rounds on this machine, the order swapped every round (ABBA), each run
# timing TRL's GRPOTrainer itself too (scripts/bench_trl.py: 50 measured steps after the warm-up steps):
#   one core:  hf-static (the one-core default)     two cores: hf-process (the default on 2+ cores)
# Both trees run on this tree's venv (bench_trl.py puts its own tree first on sys.path; the header line
# prints which autorl it imported).
#   bash studies/fast-2026-11-28/before-after.sh BEFORE_TREE [ROUNDS]  > LOG 2>&1
# ONE_CORE=1 runs the one-core runs alone.
set -uo pipefail
cd "$(dirname "$0")/../.."
after=$PWD
before=$(realpath "${1:?the tree before the change}")
py=$after/.venv/bin/python
for i in $(seq 1 "${2:-3}"); do
  order="before after"; [ $((i % 2)) = 0 ] && order="after before"
  for tree in $order; do
    dir=$before; [ "$tree" = after ] && dir=$after
    runs=("1 hf-static" "2 hf-process"); [ -n "${ONE_CORE:-}" ] && runs=("1 hf-static")
    for run in "${runs[@]}"; do
      read -r threads sampler <<< "$run"
      echo "== round $i $tree ($(git -C "$dir" rev-parse --short HEAD)$(git -C "$dir" diff --quiet HEAD -- autorl || echo +changes)) threads $threads sampler $sampler $(date -u +%T)"
      (cd "$dir" && "$py" -c "import sys; sys.path.insert(0, '.'); import autorl; print('autorl from', autorl.__file__)" \
        && "$py" scripts/bench_trl.py --steps 50 --threads "$threads" --sampler "$sampler" 2>&1 | grep -v Loading | tail -3)
    done
  done
done
echo "end $(date -u +%T)"
