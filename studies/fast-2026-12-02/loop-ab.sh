#!/usr/bin/env bash
# Issue 50, the CPU side of the 2026-12-02 sampling loop (every step's uniforms drawn at a call's start, one
# host look a step, generation.pick): the CPU defaults before it (BEFORE, a commit) and with it (AFTER), each
# in its own clone, against TRL in the same call (scripts/bench_trl.py), in rounds that alternate the two:
#   1 core : --threads 1 --sampler hf-static
#   2 cores: --threads 2 --sampler hf-static-process --trl-threads 1
#   bash studies/fast-2026-12-02/loop-ab.sh BEFORE_CLONE AFTER_CLONE [ROUNDS] > studies/fast-2026-12-02/loop-ab.log 2>&1
set -uo pipefail
before=$1 after=$2
echo "# before $(git -C "$before" rev-parse --short HEAD), after $(git -C "$after" rev-parse --short HEAD), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(date -u '+%F %T') UTC"
for i in $(seq 1 "${3:-3}"); do
  for way in "--threads 1 --sampler hf-static" "--threads 2 --sampler hf-static-process --trl-threads 1"; do
    if [ $((i % 2)) -eq 1 ]; then order="$before $after"; else order="$after $before"; fi
    for clone in $order; do
      name=$([ "$clone" = "$before" ] && echo before || echo after)
      echo "== round $i: $name $way $(date -u +%T)"
      (cd "$clone" && .venv/bin/python scripts/bench_trl.py --steps 50 $way 2>&1 | grep -E "^(embedded|TRL|ratio|warning)")
    done
  done
done
echo "end $(date -u +%T)"
