#!/bin/bash
# The recorded night at --budget 360 (issue 49 item 5), its setup as program.md's steps 1-5 on the LLM track:
# a fresh clone of one commit, the baseline at --budget 360, its repeat, both marked. The agent's candidate
# trials then run in the same clone (session.log says who ran what).
#   studies/sessions/llm360-2026-11-27/setup.sh COMMIT DIR
set -euo pipefail
commit=$1; dir=$2
uv=(python3 -m uv)
command -v uv >/dev/null && uv=(uv)
here=$(cd "$(dirname "$0")" && pwd)
log="$here/setup.log"
say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$log"; }
if [ ! -d "$dir/.git" ]; then
  git clone -q /work/main "$dir"
  git -C "$dir" checkout -q "$commit"
  git -C "$dir" checkout -q -b autorl/llm360-20261127
  s=$(date +%s); (cd "$dir" && "${uv[@]}" sync -q); say "uv sync -q: $(( $(date +%s) - s )) s"
fi
cd "$dir"
mkdir -p logs
(while true; do echo "$(date -u +%H:%M:%S) $(head -1 /proc/pressure/cpu)"; sleep 30; done >> "$here/pressure.log") &
trap 'kill $! 2>/dev/null' EXIT
trial() {  # trial DESCRIPTION MARK LESSON [run.py flags...]
  local desc=$1 mark=$2 lesson=$3; shift 3
  say "uptime: $(uptime)"
  local s; s=$(date +%s)
  local rc=0; "${uv[@]}" run run.py "$@" --description "$desc" > run.log 2>&1 || rc=$?
  local id; id=$(grep -m1 -oE '^run_dir: runs/\S+' run.log | sed 's#.*/##' || true)
  cp run.log "logs/${id:-unknown-$(date +%s)}.log"
  say "$desc: rc $rc, wall $(( $(date +%s) - s )) s, run_id ${id:-?}"
  grep -E "^(eval_score|eval_ci|delta|p_value|verdict|seeds_needed|stopped_early|note|status|health/.*):" run.log | tee -a "$log"
  "${uv[@]}" run autorl mark "$mark" --lesson "$lesson" | tee -a "$log"
}
say "commit $(git log --oneline -1)"
"${uv[@]}" run run.py --dry-run > logs/dry-run.log 2>&1 && say "dry-run ok"
if ! grep -q "baseline repeat" results.tsv 2>/dev/null; then
  grep -q $'\tbaseline\t' results.tsv 2>/dev/null || trial "baseline" keep "baseline" --budget 360
  trial "baseline repeat (noise floor)" discard "baseline repeat: noise floor" --all-seeds
fi
"${uv[@]}" run autorl status > status-setup.txt 2>&1
cat status-setup.txt >> "$log"
say "setup done"
