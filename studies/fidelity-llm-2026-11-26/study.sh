#!/bin/bash
# The LLM fidelity study: the recorded 90 s session studies/sessions/llm-2026-11-26 re-trained at 4x its budget
# (360 s per seed), 3 fresh seeds per config, 6 configs (the baseline, the keep, four discards spread over the
# short scores). A fidelity run re-trains a context's configs only under the harness they ran under, so it runs
# at the session's own commit, 4eca9bb, with the session's ledger, marks and each trial's config.toml restored.
# The fidelity run is niced to -10; nothing else CPU-heavy ran beside it: it was stopped at seed boundaries
# (SIGINT after a seed finished: the next seed, just started, is dropped and re-run) while this project's tests
# ran, and resumed with --resume (study.log has the times).
set -x
C=4eca9bb; S=/work/main/studies/sessions/llm-2026-11-26
rm -rf /tmp/fid-llm && git clone -q /work/main /tmp/fid-llm && cd /tmp/fid-llm && git checkout -q $C
git checkout -q -b autorl/2026-11-26-llm-fidelity
cp $S/results.tsv $S/results-marks.jsonl .
for f in $S/configs/*.toml; do id=$(basename $f .toml); mkdir -p runs/$id; cp $f runs/$id/config.toml; done
uv sync -q 2>&1 | tail -1
uv run --no-sync prepare.py > prepare.log 2>&1
nice -n -10 uv run --no-sync autorl fidelity --track llm --factor 4 --seeds 3 --configs 6 --png fidelity.png >> fidelity.log 2>&1
# after each pause: nice -n -10 uv run --no-sync autorl fidelity --resume <fidelity_id> --png fidelity.png >> fidelity.log 2>&1
uv run --no-sync autorl status --track llm > status.txt 2>&1
uv run --no-sync autorl report --track llm --md report.md > report.out 2>&1
