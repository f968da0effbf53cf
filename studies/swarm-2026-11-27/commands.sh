#!/usr/bin/env bash
# The swarm study of docs/swarm.md, on the classic track with the stand-in agent and A/A changes only
# (clip_obs / clip_reward while norm_obs and norm_reward are off: no effect on the run, so every
# `improved` is a false keep). Usage: commands.sh COMMIT DIR SEGMENTS MINUTES
#   COMMIT: the autorl commit to clone; DIR: a fresh directory; SEGMENTS: e.g. "1 2 1 2" (agents per
#   segment, run one after another on one ledger, interleaved against the machine's drift); MINUTES: each.
set -euo pipefail
commit=$1; dir=$2; segments=$3; minutes=$4
git clone -q /work/main "$dir" && cd "$dir" && git checkout -q "$commit"
git checkout -q -b autorl/swarm-aa
uv sync -q
# program.md's setup on the classic track: the baseline, kept; its repeat, discarded
uv run run.py --track classic --description "baseline" > setup-baseline.log 2>&1
uv run autorl mark keep --lesson "baseline"
uv run run.py --track classic --all-seeds --description "baseline repeat (noise floor)" > setup-repeat.log 2>&1
uv run autorl mark discard --lesson "baseline repeat: noise floor"
# 240 A/A changes, each a distinct config with no effect on training
python3 - > .autorl/changes.toml <<'PY'
for key in ("clip_obs", "clip_reward"):
    for k in range(1, 121):
        print(f'[[change]]\nkey = "{key}"\nvalue = {10.0 + k * 0.25}\n')
PY
agent="uv run python -m autorl.commands.standin --changes $dir/.autorl/changes.toml --track classic --prompt {prompt} --"
hours=$(python3 -c "print($minutes / 60)")
i=0
for n in $segments; do
  i=$((i + 1))
  echo "=== segment $i: $n agent(s), $minutes min, $(date -u +%FT%TZ)"
  uv run autorl swarm --agents "$n" --agent "$agent" --hours "$hours" > "swarm-$i-$n.log" 2>&1 || true
  sed -n '/^---$/,$p' "swarm-$i-$n.log"
done
uv run autorl status --track classic > status.txt
