#!/usr/bin/env bash
# The first winner's pool at --budget 360 (issue 49 item 4): F = the recorded 360 s night's trial 11 (batch 128
# with the reverse source at temperature 0.5, run 20261128-073947-2e49593: `improved` +0.057, p 0.0022 against
# the baseline's 6 seeds), its 6 seeds with their rung scores, replayed against pool A (the shipped config, 42
# quiet seeds), 6 candidate seeds one at a time, 1000 pairs a kind (A/A and F; no lucky references: the A/A figures are the earlier replays'), --rng 0:
#   night-f.jsonl.gz       F's quiet seeds (cpu_wait_share <= 0.05), exported from the night's clone
#   f-rungs-1,2.*          the abort judging both rungs, 6-seed references: F's false aborts by margin
#   f-ref12.*              12-seed references (the baseline and its repeat, as run.py pools them), the abort
#                          judging both rungs: F's false aborts and `improved` rate as the product compares
#   commands.sh NIGHT_CLONE   (in a clone of this commit, the project's venv, PYTHONPATH at the clone)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=studies/abort-2026-11-27/winner
ab=studies/abort-2026-11-27/llm
replay=(python3 -m uv run --no-sync python scripts/abort_replay.py)
night=${1:?the night clone}
[ -f $out/night-f.jsonl.gz ] || "${replay[@]}" export --track llm --max-cpu-wait 0.05 --out $out/night-f.jsonl.gz \
  --root "$night" --pool F="batch 128 (the one near-miss"
files=(--pool-file $ab/llm-pools-3.jsonl.gz --pool-file $ab/llm-night-baselines.jsonl.gz --pool-file $out/night-f.jsonl.gz)
common=(analyze "${files[@]}" --track llm --parallel 1 --pairs 1000 --lucky-pairs 0 --rng 0 --reference A --candidates F --rungs 1,2)
"${replay[@]}" "${common[@]}" --json $out/f-rungs-1,2.json --png $out/f-rungs-1,2.png > $out/f-rungs-1,2.log 2>&1 &
"${replay[@]}" "${common[@]}" --reference-seeds 12 --json $out/f-ref12.json > $out/f-ref12.log 2>&1
wait
