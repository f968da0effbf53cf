#!/usr/bin/env bash
# How close `autorl fidelity`'s "expected:" line comes to its wall time, on both tracks: a small context
# (the shipped config and two learning rates, 2 seeds each) at a short budget, then its fidelity run at 2x,
# timed, on a fresh clone of COMMIT. Usage: studies/fidelity-estimate-2026-12-04/run.sh COMMIT OUT_DIR
set -euo pipefail
commit=$1; out=$(realpath -m "$2"); clone=/tmp/fidelity-estimate
pkill -f autorl.engine.warm_starter || true
rm -rf "$clone" && git clone -q /work/main "$clone" && git -C "$clone" checkout -q "$commit"
mkdir -p "$out"; cd "$clone"
uv sync -q --compile-bytecode && uv run --no-sync prepare.py > "$out/prepare.log" 2>&1
context() {  # $1: track, $2: config file, $3: its lr line, $4 $5: two other values, $6: budget
  local track=$1 config=$2 line=$3 budget=$6
  cp "$config" "/tmp/fe-base-$track"
  for value in base "$4" "$5"; do
    if [ "$value" != base ]; then sed "s|^$line .*|$line = $value|" "/tmp/fe-base-$track" > "$config"; fi
    uv run --no-sync run.py --track "$track" --budget "$budget" --seeds 2 --all-seeds --description "$track $value" \
      > "$out/$track-$value.log" 2>&1 || true
    if [ "$value" = base ]; then mark=keep; else mark=discard; fi
    uv run --no-sync autorl mark "$mark" --lesson "study" > /dev/null 2>&1 || true
  done
  cp "/tmp/fe-base-$track" "$config"
  local t0; t0=$(date +%s.%N)
  uv run --no-sync autorl fidelity --track "$track" --factor 2 --seeds 2 --configs 3 > "$out/$track-fidelity.log" 2>&1 || true
  echo "$track fidelity wall_seconds $(echo "$(date +%s.%N) - $t0" | bc)" | tee -a "$out/walls.txt"
  grep "expected:" "$out/$track-fidelity.log" | tee -a "$out/walls.txt"
}
context classic classic.toml learning_rate 1e-3 2.5e-4 20
context llm train.toml lr 2e-4 5e-5 30
