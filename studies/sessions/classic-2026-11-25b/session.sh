#!/bin/bash
# Re-record the classic session: program.md's baseline and repeat, the tuner, the (sized) confirm, report.
set -x
C=$1
rm -rf /tmp/sess-classic && git clone -q /work/main /tmp/sess-classic && cd /tmp/sess-classic && git checkout -q $C && git log --oneline -1
uv sync -q 2>&1 | tail -1
git checkout -q -b autorl/2026-11-25-classic
t() { date -u +%H:%M:%S; }
echo "start $(t)"
uv run --no-sync run.py --track classic --description "baseline" > baseline.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl mark keep --lesson "baseline"
uv run --no-sync run.py --track classic --all-seeds --description "baseline repeat (noise floor)" > repeat.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl mark discard --lesson "baseline repeat: noise floor"
uv run --no-sync autorl tune --track classic --config classic.toml --space docs/classic-space.toml --trials 30 --seed 0 > tune.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl confirm > confirm.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl report --track classic --md report.md > report.out 2>&1
uv run --no-sync autorl status --track classic > status.txt 2>&1
git diff autorl/2026-11-25-classic~0 $C -- classic.toml > /dev/null
echo "done $(t)"
