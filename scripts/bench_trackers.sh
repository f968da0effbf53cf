#!/bin/bash
# Do the trackers slow the training loop? (issue 52) Steps per 90 s seed of one-seed quick trials of train.toml,
# trackers on (the TensorBoard events, always written, and W&B offline: AUTORL_WANDB=1 WANDB_MODE=offline)
# against W&B off, PAIRS interleaved pairs, the order alternating (on-off, off-on, ...); prints each pair and
# the median steps and ratio. Run it in a scratch clone on an otherwise quiet machine (it trains for real).
#   scripts/bench_trackers.sh [PAIRS]      (UV="python3 -m uv" where uv is not on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a uv <<< "${UV:-uv}"
pairs=${1:-5}
median() { printf "%s\n" "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
one() {  # one on|off -> the seed's steps
  local log; log=$(mktemp)
  if [ "$1" = on ]; then
    AUTORL_WANDB=1 WANDB_MODE=offline "${uv[@]}" run run.py --quick --budget 90 --description "trackers on" >"$log" 2>&1
  else
    env -u AUTORL_WANDB "${uv[@]}" run run.py --quick --budget 90 --description "trackers off" >"$log" 2>&1
  fi
  grep -m1 -E '^steps: ' "$log" | cut -d' ' -f2
  rm -f "$log"
}
on=(); off=()
for i in $(seq 1 "$pairs"); do
  if (( i % 2 )); then a=$(one on); b=$(one off); else b=$(one off); a=$(one on); fi
  on+=("$a"); off+=("$b")
  echo "pair $i: on $a steps, off $b steps ($(date -u +%H:%M) UTC, load $(cut -d' ' -f1 /proc/loadavg))"
done
m_on=$(median "${on[@]}"); m_off=$(median "${off[@]}")
echo "median steps per 90 s seed: trackers on $m_on, off $m_off; ratio $(echo "scale=3; $m_on / $m_off" | bc)"
