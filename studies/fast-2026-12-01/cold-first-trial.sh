#!/usr/bin/env bash
# Issue 50: a fresh clone's first trial on two cores (inductor's cache is keyed by the environment's path, so
# every compile is cold), before (every seed compiles its two steps, at once on the two cores) and after
# (the warm starter compiles them once, one after the other, before its first launch: the base eval's).
# The shipped train.toml at --budget 90 (BUDGET), 2 seeds, --all-seeds; no warm starter of the clone alive.
#   bash studies/fast-2026-12-01/cold-first-trial.sh BEFORE_CLONE AFTER_CLONE > LOG 2>&1
# Each clone: a fresh clone of the commit named and `uv sync`, nothing run in it yet.
set -uo pipefail
for clone in "$1" "$2"; do
  echo "== $clone $(git -C "$clone" rev-parse --short HEAD) $(date -u +%T)"
  (cd "$clone" && .venv/bin/python prepare.py | tail -1 \
    && .venv/bin/python studies/fast-2026-11-29/trial_way.py default --config train.toml \
      --budget "${BUDGET:-90}" --seeds 2 --all-seeds --description "a fresh clone's first trial")
  pkill -f "$clone/.venv/bin/python -m autorl.engine.warm_starter"
done
echo "end $(date -u +%T)"
