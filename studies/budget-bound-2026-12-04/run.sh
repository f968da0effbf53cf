#!/usr/bin/env bash
# What the contended flag's CPU-wait share reads for a budget-bound classic config (the shipped classic.toml
# with num_envs = 2: its seeds are cut by --budget 20 before the 50k env-step horizon, so `contended` applies
# to them): alone, then right after a trial in a second clone whose warm starters stay idle beside it (a
# classic one, then an LLM one, whose starter prewarmed the embedded trainer).
# Usage: studies/budget-bound-2026-12-04/run.sh COMMIT OUT_DIR
set -euo pipefail
commit=$1; out=$(realpath -m "$2"); a=/tmp/budget-bound-a; b=/tmp/budget-bound-b
pkill -f autorl.engine.warm_starter || true
for c in "$a" "$b"; do rm -rf "$c" && git clone -q /work/main "$c" && git -C "$c" checkout -q "$commit"; done
mkdir -p "$out"
(cd "$a" && uv sync -q --compile-bytecode && sed 's/^num_envs = 16 /num_envs = 2  /' classic.toml > bound.toml)
(cd "$b" && uv sync -q --compile-bytecode && uv run --no-sync prepare.py > "$out/prepare-b.log" 2>&1)
run() {  # $1: label; the rest: run.py flags (clone a, the budget-bound config)
  local label=$1; shift
  (cd "$a" && uv run --no-sync run.py --track classic --config bound.toml --budget 20 --seeds 4 --all-seeds \
     --description "$label" "$@" > "$out/$label.log" 2>&1) || true
}
other() {  # a trial in clone b, ended before the next run in a: its starters stay, idle
  (cd "$b" && uv run --no-sync run.py --track "$1" --budget 10 --seeds 2 --all-seeds --description "b $1" \
     > "$out/b-$1-$2.log" 2>&1) || true
}
run quiet-1 --new-context
for k in 2 3; do run "quiet-$k"; done
for k in 1 2; do other classic "$k"; run "idle-classic-$k"; done
for k in 1 2; do other llm "$k"; run "idle-llm-$k"; done
pkill -f autorl.engine.warm_starter || true
cd "$a" && python3 - "$out" <<'PY'
import json, sys, csv, pathlib
out = pathlib.Path(sys.argv[1]); rows = []
header = pathlib.Path("results.tsv").read_text().splitlines()[0].split("\t")
col = {name: i for i, name in enumerate(header)}
for line in pathlib.Path("results.tsv").read_text().splitlines()[1:]:
    cells = line.split("\t")
    run_id = cells[col["run_id"]]
    for seed in sorted(pathlib.Path("runs", run_id).glob("seed-*")):
        o = json.loads((seed / "outcome.json").read_text())
        state = json.loads((seed / "train_state.json").read_text())
        rows.append([cells[col["description"]], run_id, seed.name, o.get("cpu_wait_share"), o.get("steps"),
                     state.get("env_steps"), o.get("stop_reason"), cells[col["health"]]])
with open(out / "seeds.tsv", "w", newline="") as f:
    w = csv.writer(f, delimiter="\t")
    w.writerow(["trial", "run_id", "seed", "cpu_wait_share", "steps", "env_steps", "stop_reason", "health"])
    w.writerows(rows)
print(open(out / "seeds.tsv").read())
PY
