#!/bin/bash
# The classic fidelity study: a short classic session at commit $1 (baseline, repeat, the tuner's first trials
# as in studies/sessions/classic-2026-11-25b, seed 0), then `autorl fidelity` at 4x the score's horizon.
set -x
C=$1; TRIALS=${2:-10}
rm -rf /tmp/sess-cf && git clone -q /work/main /tmp/sess-cf && cd /tmp/sess-cf && git checkout -q $C && git log --oneline -1
uv sync -q 2>&1 | tail -1
git checkout -q -b autorl/2026-11-26-classic-fidelity
t() { date -u +%H:%M:%S; }
echo "start $(t)"
uv run --no-sync run.py --track classic --description "baseline" > baseline.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl mark keep --lesson "baseline"
uv run --no-sync run.py --track classic --all-seeds --description "baseline repeat (noise floor)" > repeat.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl mark discard --lesson "baseline repeat: noise floor"
uv run --no-sync autorl tune --track classic --config classic.toml --space docs/classic-space.toml --trials $TRIALS --seed 0 > tune.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl fidelity --track classic --factor 4 --seeds 3 --configs 8 --png fidelity.png > fidelity.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl status --track classic > status.txt 2>&1
uv run --no-sync autorl report --track classic --md report.md > report.out 2>&1
echo "done $(t)"
