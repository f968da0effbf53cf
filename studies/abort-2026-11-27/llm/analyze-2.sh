#!/usr/bin/env bash
# The early abort and the verdict replayed on the LLM pools at --budget 360 once pool A has grown toward 40
# seeds (collect.sh's rounds 1-6, then collect-e.sh's A and E seeds, in one clone of d873b21), with the
# recorded 360 s night's baseline and repeat (llm-night-baselines.jsonl.gz, 10 quiet seeds of A) and its
# near-miss (batch 128 at lr 1e-4, 6 seeds: pool E's first). Exports, each made once:
#   llm-pools-2.jsonl.gz     every quiet seed (cpu_wait_share <= 0.05) of pools A-E in the collect clone
#   llm-night-e.jsonl.gz     the night's batch-128 trial, as more seeds of E
#   llm-a-sessions.jsonl.gz, llm-a-sessions-night.jsonl.gz, llm-a-tonight.jsonl.gz: pool A split by
#                            session: A0, the seeds trained before 2026-11-28 (collect.sh's rounds; the
#                            night's baseline and repeat), A1 those of 2026-11-28 (collect-e.sh)
# Replays, 2000 pairs a kind, 6 candidate seeds one at a time (the track's setup on 2 cores):
#   replay-2-rungs-1,2.*  A/A, lucky references and A against C and E, the abort judging both rungs
#   replay-2-ref12.*      the verdict alone (the abort off: margin 3 aborts nothing here) against 12 reference
#                         seeds, as the pooled reference gives after the baseline's repeat: A/A, lucky, E
#   replay-2-sessions.*   the same against a reference of A0 and candidates of A1: the shipped config against
#                         itself across sessions, the machine's drift between them included
#   analyze-2.sh POOL_CLONE NIGHT_CLONE    (CANDIDATES="C E" by default: the pools of 6+ quiet seeds)
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=studies/abort-2026-11-27/llm
replay=(python3 -m uv run --no-sync python scripts/abort_replay.py)
pool=${1:?the collect clone}; night=${2:?the night clone}
export_once() {  # FILE ARGS...: an export unless the file is there
  local file=$out/$1; shift
  [ -f "$file" ] || "${replay[@]}" export --track llm --max-cpu-wait 0.05 --out "$file" "$@"
}
export_once llm-pools-2.jsonl.gz --root "$pool" --pool A="pool A" --pool B="pool B" --pool C="pool C" \
  --pool D="pool D" --pool E="pool E"
export_once llm-night-e.jsonl.gz --root "$night" --pool E="batch_size 64 -> 128 at group 8"
export_once llm-a-sessions.jsonl.gz --root "$pool" --pool A0="pool A" --runs-before 20261128
export_once llm-a-sessions-night.jsonl.gz --root "$night" --pool A0="baseline"
export_once llm-a-tonight.jsonl.gz --root "$pool" --pool A1="pool A" --runs-from 20261128
files=(--pool-file $out/llm-pools-2.jsonl.gz --pool-file $out/llm-night-baselines.jsonl.gz
  --pool-file $out/llm-night-e.jsonl.gz)
common=(--track llm --parallel 1 --pairs 2000 --rng 0)
"${replay[@]}" analyze "${files[@]}" "${common[@]}" --reference A --candidates ${CANDIDATES-C E} \
  --lucky-pairs 2000 --rungs 1,2 --json $out/replay-2-rungs-1,2.json --png $out/replay-2-rungs-1,2.png \
  > $out/replay-2-rungs-1,2.log 2>&1 &
"${replay[@]}" analyze "${files[@]}" "${common[@]}" --reference A --candidates E --lucky-pairs 2000 \
  --margins 3 --reference-seeds 12 --json $out/replay-2-ref12.json > $out/replay-2-ref12.log 2>&1 &
wait
"${replay[@]}" analyze --pool-file $out/llm-a-sessions.jsonl.gz --pool-file $out/llm-a-sessions-night.jsonl.gz \
  --pool-file $out/llm-a-tonight.jsonl.gz "${common[@]}" --reference A0 --candidates A1 --lucky 0 \
  --margins 3 --reference-seeds 12 --json $out/replay-2-sessions.json > $out/replay-2-sessions.log 2>&1
