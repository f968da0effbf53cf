"""What `--ray local` costs against the local pool: the same 2-seed classic trial both ways, interleaved.

    uv run python scripts/bench_ray.py                    # 2 seeds x 20 s, 2 pairs
    uv run python scripts/bench_ray.py --pairs 3 --budget 30

Each pair runs `run.py --track classic --seeds 2 --all-seeds` once on the local pool (`--parallel auto`) and
once with `--ray local`, alternating which goes first, in a temporary root (your results.tsv is untouched),
both under `uv run --no-sync` as a user starts them. Prints each trial's wall time and the median extra
seconds and ratio of the Ray trial (Ray's start, the per-node probe, task dispatch and shutdown).
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
sys.path.insert(0, str(REPO))

from autorl.commands.tune import parse_summary  # noqa: E402


def trial(root: Path, budget: float, mode: list[str]) -> float:
    uv = shutil.which("uv") or sys.exit("error: uv is not on PATH")
    cmd = [uv, "run", "--no-sync", "run.py", "--track", "classic", "--seeds", "2", "--all-seeds"]
    cmd += ["--budget", f"{budget:g}", "--allow-dirty-harness", *mode]
    started = time.monotonic()
    proc = subprocess.run(
        cmd, cwd=REPO, env={**os.environ, "AUTORL_ROOT": str(root)}, capture_output=True, text=True
    )
    wall = time.monotonic() - started
    if proc.returncode != 0 or parse_summary(proc.stdout).get("status") != "ok":
        sys.exit(
            f"error: trial failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=20.0, help="training seconds per seed")
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    for name in ("classic.toml", "eval.toml"):
        shutil.copyfile(REPO / name, root / name)
    modes = {"local pool": ["--parallel", "auto"], "ray local": ["--ray", "local"]}
    print(f"classic, 2 seeds x {args.budget:g} s, {args.pairs} pairs, {os.cpu_count()} CPUs, root {root}")
    walls: dict[str, list[float]] = {m: [] for m in modes}
    for i in range(args.pairs):
        order = list(modes) if i % 2 == 0 else list(reversed(modes))
        for m in order:
            walls[m].append(trial(root, args.budget, modes[m]))
            print(f"pair {i + 1}: {m:10s} {walls[m][-1]:6.1f} s", flush=True)
    extra = [r - p for r, p in zip(walls["ray local"], walls["local pool"], strict=True)]
    ratio = [r / p for r, p in zip(walls["ray local"], walls["local pool"], strict=True)]
    print(
        f"median wall: local pool {statistics.median(walls['local pool']):.1f} s, ray local "
        f"{statistics.median(walls['ray local']):.1f} s; ray's extra {statistics.median(extra):+.1f} s "
        f"(x{statistics.median(ratio):.2f})"
    )
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
