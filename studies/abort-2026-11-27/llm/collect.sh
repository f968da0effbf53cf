#!/usr/bin/env bash
# LLM pools for the early abort's calibration at --budget 360: every seed trained to its end (--all-seeds; the
# LLM track's abort is off by default anyway) with its rungs scored at 25% and 50% of the budget
# (seed-<k>/rungs.jsonl) and its final eval. Interleaved rounds, so that the machine's drift falls on every
# pool alike: A (the shipped train.toml) 2 seeds, B (batch 128 + lr 6e-5: the 2026-11-27 fidelity study's
# long winner, a slow starter) 1 seed, C (lr 3e-5: that session's first keep) 1 seed, D (lr 2e-4: a dead idea,
# 0.263 at --budget 90 against the base model's 0.4145; added from round 3, its first trial catches up) 1 seed.
# Resumable: it counts
# the seeds each pool has in the clone's ledger and runs the rounds still missing.
#   collect.sh COMMIT DIR [ROUNDS]   (a fresh clone of COMMIT in DIR/clone; 20 rounds: A 40, B 20, C 20)
set -euo pipefail
commit=$1; dir=$(realpath -m "$2"); rounds=${3:-20}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
[ -d "$dir/clone" ] || git clone -q "$here/../../.." "$dir/clone"
cd "$dir/clone"
git checkout -q "$commit"
for p in b c d; do cp "$here/$p.toml" "$dir/$p.toml"; done
uv=(python3 -m uv)
"${uv[@]}" sync -q
[ -f .autorl/machine.json ] || "${uv[@]}" run --no-sync prepare.py > "$dir/prepare.log" 2>&1
# the machine's CPU pressure every 30 s (a wall-clock budget turns load into a score)
( while true; do echo "$(date -u +%FT%TZ) $(head -1 /proc/pressure/cpu)"; sleep 30; done ) >> "$dir/pressure.log" &
pressure=$!
trap 'kill $pressure 2>/dev/null' EXIT
seeds() {  # ok seeds of the trials whose description is $1
  "${uv[@]}" run --no-sync python -c "
import sys
from autorl.record.ledger import Ledger
from autorl.record.row import row_seed_scores
rows = Ledger('results.tsv').rows() if __import__('os').path.exists('results.tsv') else []
print(sum(len(row_seed_scores(r)) for r in rows if r['status'] == 'ok' and r['description'] == sys.argv[1]))
" "$1"
}
trial() {  # description, config, seeds wanted: trains the ones missing
  local want=$3 have; have=$(seeds "$1")
  [ "$have" -ge "$want" ] && return 0
  echo "$(date -u +%FT%TZ) $1: $have/$want seeds; training $((want - have)) more" >> "$dir/collect.log"
  nice -n -10 "${uv[@]}" run --no-sync run.py --config "$2" --budget 360 --new-context --all-seeds \
    --seeds "$((want - have))" --description "$1" >> "$dir/trials.log" 2>&1 || true
}
for r in $(seq 1 "$rounds"); do
  trial "pool A" train.toml $((2 * r))
  trial "pool B" "$dir/b.toml" "$r"
  trial "pool C" "$dir/c.toml" "$r"
  [ "$r" -lt 3 ] || trial "pool D" "$dir/d.toml" "$r"
done
echo "$(date -u +%FT%TZ) done: A $(seeds 'pool A'), B $(seeds 'pool B'), C $(seeds 'pool C'), D $(seeds 'pool D')" >> "$dir/collect.log"
