#!/usr/bin/env bash
# A second winner's pool at --budget 360 (issue 49 item 4): G = g.toml (batch 128, the reverse source at
# temperature 0.4: a neighbour of F, the night's confirmed keep), interleaved one seed at a time with more of
# pool A (the shipped train.toml), in the clone of d873b21 that trained pool A (../llm/collect.sh set it up),
# until a deadline. The same mechanics as ../llm/collect-e.sh: no trial starts that could not end by the
# deadline, trials at nice -10, the machine's CPU pressure logged every 30 s.
#   collect-g.sh DIR DEADLINE   (DIR as collect.sh's, e.g. /tmp/llm-pool2; DEADLINE e.g. 2026-11-28T13:30Z)
set -euo pipefail
dir=$(realpath "$1"); deadline=$(date -u -d "$2" +%s)
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/g.toml" "$dir/g.toml"
cd "$dir/clone"
uv=(python3 -m uv)
( while true; do echo "$(date -u +%FT%TZ) $(head -1 /proc/pressure/cpu)"; sleep 30; done ) >> "$dir/pressure.log" &
pressure=$!
trap 'kill $pressure 2>/dev/null' EXIT
while true; do
  for pool in G A; do
    if [ $(($(date -u +%s) + 420)) -gt "$deadline" ]; then
      echo "$(date -u +%FT%TZ) deadline: no trial started" >> "$dir/collect.log"; exit 0
    fi
    config=train.toml; [ "$pool" = A ] || config="$dir/g.toml"
    echo "$(date -u +%FT%TZ) pool $pool: training 1 more" >> "$dir/collect.log"
    nice -n -10 "${uv[@]}" run --no-sync run.py --config "$config" --budget 360 --new-context --all-seeds \
      --seeds 1 --description "pool $pool" >> "$dir/trials.log" 2>&1 || true
  done
done
