#!/bin/bash
# The sized confirm on a real case: the recorded classic session's keep against the shipped config.
set -x
rm -rf /tmp/demo && git clone -q /work/main /tmp/demo && cd /tmp/demo && git checkout -q 4920d17 && cd /tmp/demo && git log --oneline -1
uv sync -q 2>&1 | tail -1
git checkout -q -b autorl/demo
t() { date -u +%H:%M:%S; }
echo "start $(t)"
uv run --no-sync run.py --track classic --description "baseline" > 1-baseline.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl mark keep --lesson "baseline"
uv run --no-sync run.py --track classic --all-seeds --description "baseline repeat (noise floor)" > 2-repeat.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl mark discard --lesson "baseline repeat: noise floor"
git apply studies/sessions/classic-2026-11-25/classic.diff && git commit -qam "the classic session's keep (studies/sessions/classic-2026-11-25/classic.diff)"
uv run --no-sync run.py --track classic --description "the classic session's keep" > 3-keep.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl mark keep --lesson "the recorded classic session's keep, re-run"
uv run --no-sync autorl confirm > confirm.log 2>&1; echo "exit $? $(t)"
uv run --no-sync autorl status --track classic > status.txt 2>&1
uv run --no-sync autorl report --track classic --md report.md > /dev/null 2>&1
echo "done $(t)"
