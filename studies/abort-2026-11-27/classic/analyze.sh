#!/usr/bin/env bash
# The early abort replayed on the classic pools (collect.sh's five trials; their seeds in classic-pools.jsonl.gz):
# judging both rungs (25% and 50% of the horizon), then the rung at 50% alone.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=studies/abort-2026-11-27/classic
replay=(python3 -m uv run --no-sync python scripts/abort_replay.py)
# export: once, from the clone collect.sh trained in
[ -f $out/classic-pools.jsonl.gz ] || "${replay[@]}" export --root "${1:?the collect.sh clone}" --track classic \
  --pool A="pool A" --pool B="pool B" --pool C="pool C" --pool D="pool D" --pool E="pool E" \
  --out $out/classic-pools.jsonl.gz
for rungs in 1,2 2; do
  "${replay[@]}" analyze --pool-file $out/classic-pools.jsonl.gz --track classic --reference A \
    --candidates B C D E --parallel 2 --pairs 2000 --lucky-pairs 2000 --rng 0 --rungs $rungs \
    --json $out/replay-rungs-$rungs.json --png $out/replay-rungs-$rungs.png > $out/replay-rungs-$rungs.log 2>&1
done
