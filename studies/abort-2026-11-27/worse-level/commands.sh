#!/usr/bin/env bash
# The verdict's error rates on the committed pools of real seeds once `worse` spends stats.WORSE_ALPHA (0.01)
# over its looks instead of 0.05 (the rule before 2026-11-27 is aa_pool's `before` only for 2026-11-25's rule).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=studies/abort-2026-11-27/worse-level
pools=studies/validity-2026-11-25
uv=(python3 -m uv run --no-sync)
"${uv[@]}" scripts/aa_pool.py analyze --track classic --pairs 4000 --parallel 2 --pool-boot 50 \
  --pool-file $pools/classic-pool/classic-pool.jsonl.gz --json $out/classic-aa.json > $out/classic-aa.log 2>&1
"${uv[@]}" scripts/aa_pool.py analyze --track llm --only A/A --pairs 2000 --parallel 1 --pool-boot 20 \
  --pool-file $pools/llm-pool/llm-pool.jsonl.gz --json $out/llm-aa.json > $out/llm-aa.log 2>&1
"${uv[@]}" scripts/aa_pool.py analyze --track llm --only A/B --rng 1 --pairs 2000 --parallel 1 \
  --pool-file $pools/llm-pool/llm-pool.jsonl.gz --json $out/llm-ab.json > $out/llm-ab.log 2>&1
