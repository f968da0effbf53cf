#!/usr/bin/env bash
# The early abort replayed on the LLM pools at --budget 360 (collect.sh's trials, their seeds in
# llm-pools.jsonl.gz; with the recorded 360 s night's baseline and repeat as more seeds of pool A, the shipped
# train.toml, in llm-night-baselines.jsonl.gz): judging both rungs (25% and 50% of the budget), then the rung
# at 50% alone. The pools are small so far (see README.md): the figures are a first look.
#   analyze.sh POOL_CLONE NIGHT_CLONE   (collect.sh's clone and the night's; each export is made once)
#   CANDIDATES="B C D" by default; a pool needs 6 quiet seeds to be one ("" replays A/A only)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=studies/abort-2026-11-27/llm
replay=(python3 -m uv run --no-sync python scripts/abort_replay.py)
[ -f $out/llm-pools.jsonl.gz ] || "${replay[@]}" export --root "${1:?the collect.sh clone}" --track llm \
  --pool A="pool A" --pool B="pool B" --pool C="pool C" --pool D="pool D" --max-cpu-wait 0.05 \
  --out $out/llm-pools.jsonl.gz
[ -f $out/llm-night-baselines.jsonl.gz ] || "${replay[@]}" export --root "${2:?the night clone}" \
  --track llm --pool A="baseline" --max-cpu-wait 0.05 --out $out/llm-night-baselines.jsonl.gz
for rungs in 1,2 2; do
  "${replay[@]}" analyze --pool-file $out/llm-pools.jsonl.gz --pool-file $out/llm-night-baselines.jsonl.gz \
    --track llm --reference A --candidates ${CANDIDATES-B C D} --parallel 1 --pairs 2000 --lucky-pairs 2000 --rng 0 \
    --rungs $rungs --json $out/replay-rungs-$rungs.json --png $out/replay-rungs-$rungs.png \
    > $out/replay-rungs-$rungs.log 2>&1
done
