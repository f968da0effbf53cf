#!/usr/bin/env bash
# The replays of analyze-2.sh again once pool A passed 40 quiet seeds (collect-e.sh with ORDER="A",
# 2026-11-28 03:26-04:02 UTC, in the same clone of d873b21), and the two diagnostics of the A/A `improved`
# rate against 12 reference seeds (5.9% on 37 seeds, above the 5% goal):
#   llm-pools-3.jsonl.gz      every quiet seed (cpu_wait_share <= 0.05) of pools A-E in the collect clone
#   replay-3-rungs-1,2.*      A/A, lucky references and A against C and E, the abort judging both rungs
#   replay-3-ref12.*          the verdict alone against 12 reference seeds: A/A, lucky, E
#   replay-3-ref12-boot.*     the A/A pairs on 40 copies of pool A drawn with replacement (200 pairs each):
#                             the spread a pool of this size leaves in the rates
#   replay-3-ref12-tail.*     the same with the seeds more than 3 sds below their pool's mean left out (pool A's
#                             one bad seed, 0.514 against a mean of 0.645): what that tail does to the rates
#   analyze-3.sh POOL_CLONE    (the night's exports of analyze-2.sh are reused)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=studies/abort-2026-11-27/llm
replay=(python3 -m uv run --no-sync python scripts/abort_replay.py)
pool=${1:?the collect clone}
[ -f $out/llm-pools-3.jsonl.gz ] || "${replay[@]}" export --track llm --max-cpu-wait 0.05 \
  --out $out/llm-pools-3.jsonl.gz --root "$pool" --pool A="pool A" --pool B="pool B" --pool C="pool C" \
  --pool D="pool D" --pool E="pool E"
files=(--pool-file $out/llm-pools-3.jsonl.gz --pool-file $out/llm-night-baselines.jsonl.gz
  --pool-file $out/llm-night-e.jsonl.gz)
common=(--track llm --parallel 1 --pairs 2000 --rng 0)
ref12=("${replay[@]}" analyze "${files[@]}" "${common[@]}" --reference A --margins 3 --reference-seeds 12)
"${replay[@]}" analyze "${files[@]}" "${common[@]}" --reference A --candidates C E \
  --lucky-pairs 2000 --rungs 1,2 --json $out/replay-3-rungs-1,2.json --png $out/replay-3-rungs-1,2.png \
  > $out/replay-3-rungs-1,2.log 2>&1 &
"${ref12[@]}" --candidates E --lucky-pairs 2000 --json $out/replay-3-ref12.json > $out/replay-3-ref12.log 2>&1
wait
"${ref12[@]}" --lucky-pairs 2000 --drop-tail 3 --json $out/replay-3-ref12-tail.json \
  > $out/replay-3-ref12-tail.log 2>&1 &
"${ref12[@]}" --lucky 0 --pairs 200 --pool-boot 40 --json $out/replay-3-ref12-boot.json \
  > $out/replay-3-ref12-boot.log 2>&1
wait
