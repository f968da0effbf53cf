#!/bin/bash
# What `uv run` costs on top of `uv run --no-sync` (issue 52): the median wall seconds of `uv run python -c pass`
# and of `uv run --no-sync python -c pass`, 7 interleaved pairs, with PYTHONDONTWRITEBYTECODE set and unset,
# then `uv run --no-compile-bytecode` (the project's `compile-bytecode = true` off for the call) the same way.
#   scripts/uv_run_cost.sh          (UV="python3 -m uv" where uv is not on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a uv <<< "${UV:-uv}"
t() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }
median() { printf "%s\n" "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
for flag in "" "--no-compile-bytecode"; do
  for set in yes no; do
    a=(); b=()
    for _ in 1 2 3 4 5 6 7; do
      if [ $set = yes ]; then export PYTHONDONTWRITEBYTECODE=1; else unset PYTHONDONTWRITEBYTECODE; fi
      a+=("$(t "${uv[@]}" run $flag python -c pass)")
      b+=("$(t "${uv[@]}" run --no-sync python -c pass)")
    done
    echo "uv run ${flag:-(project settings)}, PYTHONDONTWRITEBYTECODE ${set/yes/set}: $(median "${a[@]}") s;" \
      "--no-sync: $(median "${b[@]}") s (medians of 7 interleaved pairs)"
  done
done
