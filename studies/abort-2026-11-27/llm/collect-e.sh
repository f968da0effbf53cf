#!/usr/bin/env bash
# More of pool A (the shipped train.toml) and a pool E (batch 128 at the shipped lr 1e-4: the recorded 360 s
# night's near-miss, +0.021 p 0.064 against its 6-seed baseline, e.toml) at --budget 360, in the same clone of
# d873b21 as collect.sh, until a deadline: one-seed trials in the repeating order A, E, A, A (three of A to one
# of E: A is the pool the A/A and lucky-reference replays draw from and needs 40 seeds; the night's own 6
# seeds of E add to E's). No trial starts that could not end by the deadline (a seed takes ~6 minutes), so a
# stop at the deadline loses nothing. The machine's CPU pressure is logged every 30 s as collect.sh does.
#   collect-e.sh DIR DEADLINE   (DIR as collect.sh's, already set up; DEADLINE e.g. 2026-11-28T02:25Z)
#   ORDER="A" collect-e.sh DIR DEADLINE   (another repeating order: pool A only, 2026-11-28 03:28Z)
set -euo pipefail
dir=$(realpath "$1"); deadline=$(date -u -d "$2" +%s)
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/e.toml" "$dir/e.toml"
cd "$dir/clone"
uv=(python3 -m uv)
( while true; do echo "$(date -u +%FT%TZ) $(head -1 /proc/pressure/cpu)"; sleep 30; done ) >> "$dir/pressure.log" &
pressure=$!
trap 'kill $pressure 2>/dev/null' EXIT
while true; do
  for pool in ${ORDER:-A E A A}; do
    if [ $(($(date -u +%s) + 420)) -gt "$deadline" ]; then
      echo "$(date -u +%FT%TZ) deadline: no trial started" >> "$dir/collect.log"; exit 0
    fi
    config=train.toml; [ "$pool" = A ] || config="$dir/e.toml"
    echo "$(date -u +%FT%TZ) pool $pool: training 1 more" >> "$dir/collect.log"
    nice -n -10 "${uv[@]}" run --no-sync run.py --config "$config" --budget 360 --new-context --all-seeds \
      --seeds 1 --description "pool $pool" >> "$dir/trials.log" 2>&1 || true
  done
done
