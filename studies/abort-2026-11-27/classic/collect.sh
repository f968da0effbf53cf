#!/usr/bin/env bash
# Classic pools for the early abort's calibration: full curves of 5 configs (the shipped classic.toml, two
# configs the 2026-11-26 tuner session kept, two it discarded), every seed trained to its end (--all-seeds).
# The classic score counts env steps, so the machine's load moves wall times only, not scores.
# Ran 2026-11-27 13:03-13:13 UTC from /tmp/abort-study, holding a fresh clone of acb9099 in ./clone (the commit
# before rungs: a classic seed's rungs are its final curve cut at 25% and 50% of the horizon, which
# tests/test_classic.py checks equal to what a live rung scores) and this folder's b-e.toml beside it.
set -euo pipefail
cd "$(dirname "$0")/clone"
export PATH="$HOME/.local/bin:$PATH"
uv=(python3 -m uv)
"${uv[@]}" sync -q
run() { "${uv[@]}" run --no-sync run.py --track classic --all-seeds "$@"; }
run --seeds 48 --description "pool A: classic.toml" > ../a.log 2>&1
run --config ../b.toml --seeds 24 --description "pool B: kept 20261126-224320 (0.878)" > ../b.log 2>&1
run --config ../c.toml --seeds 24 --description "pool C: kept 20261126-224230 (0.791)" > ../c.log 2>&1
run --config ../d.toml --seeds 12 --description "pool D: worse 20261126-224117 (0.410)" > ../d.log 2>&1
run --config ../e.toml --seeds 12 --description "pool E: discarded 20261126-224216 (0.599)" > ../e.log 2>&1
echo done
