#!/usr/bin/env bash
# The second winner's pool at --budget 360 (issue 49 item 4), replayed offline after collect-g.sh:
#   pools-g.jsonl.gz     the quiet seeds (cpu_wait_share <= 0.05) of collect-g.sh's trials: G and the pool A
#                        seeds trained between them (one-seed trials from G's first run on)
#   seeds.log            every pool's mean at its rungs and end, today's A beside G (interleaved)
#   g-rungs-1,2.*        F and G against pool A (every quiet A seed: the earlier exports and today's), 6 seeds a
#                        side, the abort judging both rungs: each winner's `improved` rate and false aborts
#   g-ref12.*            the same with 12-seed references (the baseline and its repeat, as run.py pools them)
#   commands.sh POOL_CLONE FIRST_G_RUN   (in a clone of this commit, the project's venv)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=studies/abort-2026-11-27/winner2
ab=studies/abort-2026-11-27/llm
replay=(python3 -m uv run --no-sync python scripts/abort_replay.py)
pool=${1:?the collect clone}
first=${2:?the run id of G\'s first trial}
[ -f $out/pools-g.jsonl.gz ] || "${replay[@]}" export --track llm --max-cpu-wait 0.05 --out $out/pools-g.jsonl.gz \
  --root "$pool/clone" --runs-from "$first" --pool A="pool A" --pool G="pool G"
files=(--pool-file $ab/llm-pools-3.jsonl.gz --pool-file $ab/llm-night-baselines.jsonl.gz
  --pool-file studies/abort-2026-11-27/winner/night-f.jsonl.gz --pool-file $out/pools-g.jsonl.gz)
common=(analyze "${files[@]}" --track llm --parallel 1 --pairs 1000 --lucky-pairs 0 --rng 0 --reference A
  --candidates F G --rungs 1,2)
"${replay[@]}" "${common[@]}" --json $out/g-rungs-1,2.json --png $out/g-rungs-1,2.png > $out/g-rungs-1,2.log 2>&1 &
"${replay[@]}" "${common[@]}" --reference-seeds 12 --json $out/g-ref12.json > $out/g-ref12.log 2>&1
wait
