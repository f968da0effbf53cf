#!/bin/bash
# The recorded 360 s night's best keep (trial 11) confirmed at twice its budget on the sealed test split
# (issue 49 item 5): `autorl confirm --factor 2 --seeds N` in the night's clone, its ledger and its code.
# It meant to take the confirm's job order from 78e28df (the two sides' seeds interleaved; the night's
# commit runs all the candidate's seeds, then all the baseline's) from a copy of the clone's package with
# that change (CODE, on PYTHONPATH), and it did not: `python -m` puts the working directory (the clone)
# first on sys.path, ahead of PYTHONPATH, so the clone's own confirm.py ran, the candidate's seeds first.
# (To run a package from elsewhere, run from another directory with AUTORL_ROOT set.)
#   studies/sessions/llm360-2026-11-27/confirm.sh DIR CODE SEEDS
set -euo pipefail
dir=$1; code=$2; seeds=$3
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$here/confirm.log"; }
cd "$dir"
(while true; do echo "$(date -u +%H:%M:%S) $(head -1 /proc/pressure/cpu)"; sleep 30; done >> "$here/confirm-pressure.log") &
trap 'kill $! 2>/dev/null' EXIT
say "clone $(git log --oneline -1 | cut -c1-60); code: $code (confirm.py, fidelity.py as 78e28df)"
say "uptime: $(uptime)"
rc=0
AUTORL_ROOT="$dir" PYTHONPATH="$code" .venv/bin/python -m autorl.commands.cli confirm --factor 2 --seeds "$seeds" \
  > "$here/confirm-run.log" 2>&1 || rc=$?
say "rc $rc"
grep -vE "^\s*$" "$here/confirm-run.log" | sed -n '/^---$/,$p' | tee -a "$here/confirm.log"
cp confirmed.tsv "$here/confirmed.tsv"
