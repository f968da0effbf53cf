#!/bin/bash
# Seed-to-seed spread of a classic config that changes the named keys of the shipped classic.toml: SEEDS seeds
# at --budget 600 (training ends at 50k env steps, so the scores do not depend on the machine's speed), in a
# fresh AUTORL_ROOT under /tmp/cand/NAME; prints the summary's score lines and each seed's curve score.
# usage: studies/suite-2026-11-28/classic_candidates.sh NAME SEEDS key=value...  (classic_candidates.log)
repo=$(cd "$(dirname "$0")/../.." && pwd)
name=$1; seeds=$2; shift 2
root=/tmp/cand/$name; rm -rf $root; mkdir -p $root
python3 - "$repo/classic.toml" "$root/cfg.toml" "$@" <<'P'
import re,sys
t=open(sys.argv[1]).read()
for kv in sys.argv[3:]:
    k,v=kv.split('=')
    t,n=re.subn(rf'^{k} = \S+', f'{k} = {v}', t, flags=re.M); assert n==1, k
open(sys.argv[2],'w').write(t)
P
cd $repo && AUTORL_ROOT=$root .venv/bin/python run.py --track classic --config $root/cfg.toml --budget 600 --seeds $seeds --all-seeds > $root/out.txt 2>&1
grep -E "eval_score|eval_ci|training_seconds|total_seconds" $root/out.txt | tr '\n' ' '; echo " $name $*"
for d in $root/runs/*/seed-*; do python3 -c "import json,sys; r=json.loads(open('$d/eval.log').read().splitlines()[-1]); print(r['curve_score'], end=' ')" 2>/dev/null; done; echo
grep "child exited" $root/out.txt | head -3
