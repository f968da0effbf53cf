#!/usr/bin/env bash
# `worse` needs 2 candidate seeds (stats.MIN_SEEDS_WORSE, 173857e): the verdict's error rates again on the
# committed pools of real seeds, no abort (margin 3 never aborts), 2000 pairs a kind, --rng 0:
#   llm360-ref12 / llm360-ref6   --budget 360 (pool A: 42 seeds of train.toml; C: a worse config, E: the
#                                batch-128 config), 6 candidate seeds one at a time, 12 / 6 reference seeds
#   llm90-ref12 / llm90-ref6     --budget 90 (2026-11-25: A 60 seeds of train.toml, B 30 of lr 3e-5)
#   classic                      the classic pools, 2 seeds a wave (the first look has 2 seeds: unchanged)
# Run in a clone of 173857e: bash studies/abort-2026-11-27/worse-seeds/commands.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=studies/abort-2026-11-27/worse-seeds
ab=studies/abort-2026-11-27
replay=(python3 -m uv run --no-sync python scripts/abort_replay.py analyze --rng 0 --pairs 2000 --lucky-pairs 2000
  --margins 3 --reference A)
llm360=(--pool-file $ab/llm/llm-pools-3.jsonl.gz --pool-file $ab/llm/llm-night-baselines.jsonl.gz
  --pool-file $ab/llm/llm-night-e.jsonl.gz --track llm --parallel 1 --candidates C E)
llm90=(--pool-file $ab/worse-level/llm90-pools.jsonl.gz --track llm --parallel 1 --candidates B)
"${replay[@]}" "${llm360[@]}" --reference-seeds 12 --json $out/llm360-ref12.json > $out/llm360-ref12.log 2>&1 &
"${replay[@]}" "${llm360[@]}" --json $out/llm360-ref6.json > $out/llm360-ref6.log 2>&1
wait
"${replay[@]}" "${llm90[@]}" --reference-seeds 12 --json $out/llm90-ref12.json > $out/llm90-ref12.log 2>&1 &
"${replay[@]}" "${llm90[@]}" --json $out/llm90-ref6.json > $out/llm90-ref6.log 2>&1
wait
"${replay[@]}" --pool-file $ab/classic/classic-pools.jsonl.gz --track classic --parallel 2 \
  --json $out/classic.json > $out/classic.log 2>&1
