"""Where a trial's wall time goes, cold starts against warm ones (autorl/engine/warm.py), both tracks.

    uv run python scripts/bench_warm.py                      # classic default + LLM 2 seeds x 20 s, 2 rounds
    uv run python scripts/bench_warm.py --rounds 3 --tracks classic
    uv run python scripts/bench_warm.py --llm-budget 60 --llm-seeds 2
    uv run python scripts/bench_warm.py --tracks classic --against /tmp/old   # another checkout, interleaved

Runs whole trials the way a user starts them (`python run.py ...`, in a temporary AUTORL_ROOT made as
scripts/bench_parallel.py makes it, so results.tsv here is not touched), three modes in turn in each round:
`cold` (AUTORL_WARM=0: every child a new interpreter, the old way), `new` (children forked from a starter
that the trial starts and ends, AUTORL_WARM_KEEP=0: a session's first trial, or the first after an edit of
the harness) and `kept` (the starter kept by the trial before, AUTORL_WARM_KEEP=600: an agent's next trial).
Each mode has its own temporary root (a directory keeps one idle starter per interpreter and modules: the
`new` mode's starter would end the `kept` mode's); one trial per track and mode, not counted, first fills
its base-model eval cache (and starts the kept starter), so every measured trial starts the same way.
`--all-seeds` keeps the early stop from ending a trial after its first wave. The kept starters are ended
at the end. `--against DIR` runs another checkout (a clone at another commit, with its own `.venv`: `uv
sync` there) in each round too, after this one's three modes, kept, in its own root holding this
checkout's configs: the old code against the new, interleaved.

Prints, per trial, the summary's figures: startup_seconds, training_seconds and eval_seconds are sums over
the seeds; total_seconds is the trial's wall time inside the runner; `wall` is the whole command (the
runner's own start-up included). Then the median of each mode and the ratio total/training (issue
target: at most 1 on the classic track). Needs the base model prepared (`uv run prepare.py`, or any trial).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_parallel import make_root  # scripts/ is this script's directory, first on sys.path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from autorl.commands.tune import parse_summary  # noqa: E402

FIELDS = ("startup_seconds", "training_seconds", "eval_seconds", "total_seconds")
MODES = {
    "cold": {"AUTORL_WARM": "0"},
    "new": {"AUTORL_WARM": "1", "AUTORL_WARM_KEEP": "0"},
    "kept": {"AUTORL_WARM": "1", "AUTORL_WARM_KEEP": "600"},
}


def trial(root: Path, args: list[str], mode: str, repo: Path = REPO) -> dict[str, float]:
    env = {**os.environ, "AUTORL_ROOT": str(root), **MODES[mode]}
    python = sys.executable if repo == REPO else str(repo / ".venv" / "bin" / "python")
    cmd = [python, str(repo / "run.py"), "--all-seeds", "--allow-dirty-harness", *args]
    started = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    summary = parse_summary(done.stdout)
    if summary.get("status") != "ok":
        sys.exit(f"trial failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return {**{f: float(summary[f]) for f in FIELDS}, "wall": wall}


def commit(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()


def show(track: str, mode: str, r: dict[str, float]) -> None:
    print(
        f"{track:8} {mode:12} startup {r['startup_seconds']:6.1f}  training {r['training_seconds']:6.1f}  "
        f"eval {r['eval_seconds']:6.1f}  total {r['total_seconds']:6.1f}  wall {r['wall']:6.1f}  "
        f"total/training {r['total_seconds'] / r['training_seconds']:.2f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="cold, new, kept trials per track (default 2)")
    ap.add_argument("--tracks", nargs="+", default=["classic", "llm"], choices=["classic", "llm"])
    ap.add_argument("--llm-budget", type=float, default=20.0, help="LLM training seconds per seed (20)")
    ap.add_argument("--llm-seeds", type=int, default=2, help="LLM seeds per trial (2)")
    ap.add_argument("--against", type=Path, help="another checkout to run in each round (kept starter)")
    args = ap.parse_args()
    if args.against and not (args.against / ".venv" / "bin" / "python").exists():
        sys.exit(f"error: {args.against} has no .venv: run `uv sync` there first")

    kind = "llm" if "llm" in args.tracks else "classic"
    # label -> (checkout, mode, its own root: a directory keeps one idle starter per interpreter and modules,
    # and the `new` mode's starter, another environment, would end the `kept` mode's)
    ways = {mode: (REPO, mode, make_root(kind)) for mode in MODES}
    if args.against:
        ways[f"kept@{commit(args.against)}"] = (args.against.resolve(), "kept", make_root(kind))
    root = ways["kept"][2]
    pyc = "set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "unset"
    load = os.getloadavg()[0]
    print(f"# root {root}; {os.cpu_count()} CPUs; load {load:.2f}; PYTHONDONTWRITEBYTECODE {pyc}", flush=True)
    runs = {
        "classic": ["--track", "classic", "--seeds", "5"],  # the shipped default, named (see fill below)
        "llm": ["--budget", f"{args.llm_budget:g}", "--seeds", str(args.llm_seeds), "--new-context"],
    }
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for track in args.tracks:
        fill = [*runs[track][:-1], "1"] if track == "classic" else runs[track]
        for repo, mode, way_root in ways.values():
            trial(way_root, fill, mode, repo)  # fills the base-eval cache (and starts the kept starter)
        for _ in range(args.rounds):
            for label, (repo, mode, way_root) in ways.items():
                r = trial(way_root, runs[track], mode, repo)
                results.setdefault((track, label), []).append(r)
                show(track, label, r)
    roots = {str(r.resolve()) for _, _, r in ways.values()}
    for proc in psutil.process_iter(["cmdline", "cwd"]):  # the kept starters of these roots
        if "autorl.engine.warm_starter" in (proc.info["cmdline"] or []) and proc.info["cwd"] in roots:
            proc.kill()
    print("# medians")
    for (track, mode), rs in results.items():
        show(track, mode, {k: statistics.median(r[k] for r in rs) for k in rs[0]})


if __name__ == "__main__":
    main()
