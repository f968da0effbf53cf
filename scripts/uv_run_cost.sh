#!/bin/bash
# What `uv run` costs on top of `uv run --no-sync` (issue 52): the median wall seconds of `uv run python -c pass`
# and of `uv run --no-sync python -c pass`, 7 interleaved pairs, with PYTHONDONTWRITEBYTECODE set and unset; then
# what importing torch and transformers costs either way (median of 3), to show the bytecode is there.
#   scripts/uv_run_cost.sh          (UV="python3 -m uv" where uv is not on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a uv <<< "${UV:-uv}"
t() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }
median() { printf "%s\n" "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
for set in yes no; do
  if [ $set = yes ]; then export PYTHONDONTWRITEBYTECODE=1; else unset PYTHONDONTWRITEBYTECODE; fi
  a=(); b=(); c=()
  for _ in 1 2 3 4 5 6 7; do
    a+=("$(t "${uv[@]}" run python -c pass)")
    b+=("$(t "${uv[@]}" run --no-sync python -c pass)")
  done
  for _ in 1 2 3; do c+=("$(t "${uv[@]}" run --no-sync python -c "import torch, transformers")"); done
  echo "PYTHONDONTWRITEBYTECODE ${set/yes/set}: uv run $(median "${a[@]}") s, --no-sync $(median "${b[@]}") s" \
    "(medians of 7 interleaved pairs); import torch, transformers $(median "${c[@]}") s (median of 3)"
done
