#!/usr/bin/env bash
# What the contended flag's CPU-wait share reads on the classic track at a short budget: quiet trials, then
# trials beside one busy core (a python loop), on a fresh clone of COMMIT; per seed: cpu_wait_share, steps,
# stop reason (outcome.json). Usage: studies/contended-2026-12-03/run.sh COMMIT OUT_DIR
set -euo pipefail
commit=$1; out=$(realpath -m "$2"); clone=/tmp/contended-clone
rm -rf "$clone" && git clone -q /work/main "$clone" && git -C "$clone" checkout -q "$commit"
mkdir -p "$out"; cd "$clone"
uv sync -q --compile-bytecode
run() {  # $1: label; the rest: run.py flags
  local label=$1; shift
  uv run --no-sync run.py --track classic --budget 20 --all-seeds --description "$label" "$@" > "$out/$label.log" 2>&1 || true
}
run quiet-1 --new-context
for k in 2 3 4; do run "quiet-$k"; done
for k in 1 2; do
  python3 -c "import time; t=time.time()
while time.time()-t<120: pass" & hog=$!
  run "busy-$k"; kill $hog 2>/dev/null || true; wait $hog 2>/dev/null || true
done
python3 - "$out" <<'PY'
import json, sys, csv, pathlib
out = pathlib.Path(sys.argv[1]); rows = []
for line in pathlib.Path("results.tsv").read_text().splitlines()[1:]:
    cells = line.split("\t")
    run_id = cells[1]; desc = cells[34]; health = cells[27]
    for seed in sorted(pathlib.Path("runs", run_id).glob("seed-*")):
        o = json.loads((seed / "outcome.json").read_text())
        rows.append([desc, run_id, seed.name, o.get("cpu_wait_share"), o.get("steps"), o.get("stop_reason"), health])
with open(out / "seeds.tsv", "w", newline="") as f:
    w = csv.writer(f, delimiter="\t"); w.writerow(["trial", "run_id", "seed", "cpu_wait_share", "steps", "stop_reason", "health"]); w.writerows(rows)
print(open(out / "seeds.tsv").read())
PY
