#!/usr/bin/env bash
# Issue 50: one way of scripts/bench_trl.py (ours and TRL in one call) in several clones, in rounds that
# rotate the clones' order (round r starts at clone r mod N), to tell which commit moved a figure:
#   bash studies/fast-2026-12-02/clones-rounds.sh "WAY" ROUNDS CLONE... > studies/fast-2026-12-02/LOG 2>&1
# e.g. WAY = "--threads 2 --sampler hf-static-process --trl-threads 1"
set -uo pipefail
way=$1 rounds=$2; shift 2
clones=("$@") n=$#
echo "# $(for c in "${clones[@]}"; do printf '%s=%s ' "$(basename "$c")" "$(git -C "$c" rev-parse --short HEAD)"; done)$(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(date -u '+%F %T') UTC"
for r in $(seq 1 "$rounds"); do
  for k in $(seq 0 $((n - 1))); do
    clone=${clones[$(((r + k) % n))]}
    echo "== round $r: $(basename "$clone") $way $(date -u +%T)"
    (cd "$clone" && .venv/bin/python scripts/bench_trl.py --steps 50 $way 2>&1 | grep -E "^(embedded|TRL|ratio|warning)")
  done
done
echo "end $(date -u +%T)"
