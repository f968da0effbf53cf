"""Where a trial's wall time goes, cold starts against warm ones (autorl/warm.py), both tracks.

    uv run python scripts/bench_warm.py                      # classic default + LLM 2 seeds x 20 s, 2 rounds
    uv run python scripts/bench_warm.py --rounds 3 --tracks classic
    uv run python scripts/bench_warm.py --llm-budget 60 --llm-seeds 2

Runs whole trials the way a user starts them (`python run.py ...` in a scratch clone of this checkout, so
results.tsv here is not touched), alternating AUTORL_WARM=0 (every child a new interpreter: the old way)
and AUTORL_WARM=1 (children forked from a starter), cold then warm in each round. One unrecorded trial per
track first fills the base-model eval cache, so every measured trial starts the same way. `--all-seeds`
keeps the early stop from ending a trial after its first wave.

Prints, per trial, the summary's figures: startup_seconds, training_seconds and eval_seconds are sums over
the seeds; total_seconds is the trial's wall time inside the runner; `wall` is the whole command (the
runner's own start-up included). Then the median of each mode and the ratio total/training (issue
target: at most 1 on the classic track). Needs the base model prepared (`uv run prepare.py`, or any trial).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIELDS = ("startup_seconds", "training_seconds", "eval_seconds", "total_seconds")


def scratch_clone() -> Path:
    """A clone of HEAD with this checkout's prepared .autorl/ (model, machine file, caches)."""
    where = Path(tempfile.mkdtemp(prefix="bench-warm-")) / "repo"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(where)], check=True)
    if (REPO / ".autorl").is_dir():
        shutil.copytree(REPO / ".autorl", where / ".autorl", symlinks=True)
    return where


def trial(clone: Path, args: list[str], warm: bool) -> dict[str, float]:
    env = {**os.environ, "AUTORL_WARM": "1" if warm else "0"}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "run.py", "--all-seeds", *args], cwd=clone, env=env, capture_output=True, text=True
    )
    wall = time.monotonic() - started
    summary = dict(
        line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line and not line.startswith("[")
    )
    if summary.get("status") != "ok":
        sys.exit(f"trial failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return {**{f: float(summary[f]) for f in FIELDS}, "wall": wall}


def show(track: str, mode: str, r: dict[str, float]) -> None:
    print(
        f"{track:8} {mode:5} startup {r['startup_seconds']:6.1f}  training {r['training_seconds']:6.1f}  "
        f"eval {r['eval_seconds']:6.1f}  total {r['total_seconds']:6.1f}  wall {r['wall']:6.1f}  "
        f"total/training {r['total_seconds'] / r['training_seconds']:.2f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="cold+warm pairs per track (default 2)")
    ap.add_argument("--tracks", nargs="+", default=["classic", "llm"], choices=["classic", "llm"])
    ap.add_argument("--llm-budget", type=float, default=20.0, help="LLM training seconds per seed (20)")
    ap.add_argument("--llm-seeds", type=int, default=2, help="LLM seeds per trial (2)")
    args = ap.parse_args()

    clone = scratch_clone()
    print(f"# {clone}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}", flush=True)
    runs = {
        "classic": ["--track", "classic", "--seeds", "5"],  # the shipped default, named (see fill below)
        "llm": ["--budget", f"{args.llm_budget:g}", "--seeds", str(args.llm_seeds), "--new-context"],
    }
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for track in args.tracks:
        fill = [*runs[track][:-1], "1"] if track == "classic" else runs[track]
        trial(clone, fill, True)  # fills the base-eval cache: every measured trial starts alike
        for _ in range(args.rounds):
            for mode, warm in (("cold", False), ("warm", True)):
                r = trial(clone, runs[track], warm)
                results.setdefault((track, mode), []).append(r)
                show(track, mode, r)
    print("# medians")
    for (track, mode), rs in results.items():
        show(track, mode, {k: statistics.median(r[k] for r in rs) for k in rs[0]})


if __name__ == "__main__":
    main()
