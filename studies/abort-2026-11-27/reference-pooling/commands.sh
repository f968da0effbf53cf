#!/usr/bin/env bash
# The reference side pooled over its config's trials (record.ledger.reference_evidence): the rule's error rates
# with a reference of twice the track's seeds (the baseline and its repeat: 12) against candidates of the
# track's 6, on the 2026-11-25 LLM pool of real seeds at --budget 90 (A: 60 seeds of train.toml, B: 30 of a
# config 90 s decides improved), one at a time (6 looks). The same pool with a 6-seed reference:
# ../worse-level/lucky-llm-0.01.log (A/A, lucky) and ../worse-level/llm-ab.log (power). 539 s on the 2-core VM.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=studies/abort-2026-11-27/reference-pooling
python3 -m uv run --no-sync python scripts/abort_replay.py analyze --rng 0 --pairs 2000 --lucky-pairs 2000 \
  --pool-file studies/abort-2026-11-27/worse-level/llm90-pools.jsonl.gz --track llm --reference A \
  --candidates B --parallel 1 --margins 3 --reference-seeds 12 --json $out/llm90-ref12.json \
  > $out/llm90-ref12.log 2>&1
