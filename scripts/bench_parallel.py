"""Seeds side by side vs one after another: the same K-seed trial at --parallel 1 and --parallel auto.

    uv run python scripts/bench_parallel.py                          # classic track, 2 seeds, 3 rounds
    uv run python scripts/bench_parallel.py --seeds 2 --budget 20 --pairs 3
    uv run python scripts/bench_parallel.py --track llm --seeds 6 --budget 120   # needs the prepared model

Each round runs `run.py --parallel 1`, `run.py --parallel auto` (or `--parallel N`) and a 1-seed trial back
to back, in alternating order, in a temporary root so your results.tsv is untouched. Prints each trial's wall
time, the ratios parallel/sequential and parallel/one seed per round and their medians, and the per-seed
steps (what a budget buys when seeds share the machine: give a --budget that ends training before the
config's own step cap to measure it). Targets (issue: parallel seeds): when the K seeds fit in the slots, a
trial's wall time at most 1.3x one seed's and <= 0.75x the sequential trial's (2 seeds); per-seed steps
within 15%.
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


def make_root(track: str) -> Path:
    """A temporary AUTORL_ROOT with the configs (and, for the LLM track, the prepared machine and model)."""
    root = Path(tempfile.mkdtemp(prefix="bench-parallel-"))
    for name in ("train.toml", "classic.toml", "eval.toml"):
        shutil.copyfile(REPO / name, root / name)
    if track == "llm":
        prepared = REPO / ".autorl"
        if not (prepared / "machine.json").exists():
            sys.exit("error: the LLM track needs the prepared base model: run `uv run prepare.py` first")
        (root / ".autorl").mkdir()
        shutil.copyfile(prepared / "machine.json", root / ".autorl" / "machine.json")
        os.symlink(prepared / "models", root / ".autorl" / "models")
    return root


def trial(root: Path, args: argparse.Namespace, parallel: str, seeds: int) -> dict[str, float]:
    cmd = [sys.executable, str(REPO / "run.py"), "--track", args.track, "--seeds", str(seeds)]
    cmd += ["--budget", f"{args.budget:g}", "--parallel", parallel, "--all-seeds", "--allow-dirty-harness"]
    started = time.monotonic()
    proc = subprocess.run(cmd, env={**os.environ, "AUTORL_ROOT": str(root)}, capture_output=True, text=True)
    wall = time.monotonic() - started
    s = parse_summary(proc.stdout)
    if proc.returncode != 0 or s.get("status") != "ok":
        sys.exit(
            f"error: trial failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    seeds = len(s["seeds"].split(","))
    return {"wall": wall, "steps_per_seed": int(s["steps"]) / seeds, "parallel": int(s["parallel"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--track", choices=["classic", "llm"], default="classic")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--budget", type=float, default=20.0, help="training seconds per seed")
    ap.add_argument("--pairs", type=int, default=3, help="rounds of the three trials, interleaved")
    ap.add_argument("--parallel", default="auto", help="the side-by-side setting (default auto)")
    args = ap.parse_args()
    root = make_root(args.track)
    print(
        f"{args.track} track, {args.seeds} seeds x {args.budget:g} s, {args.pairs} pairs, "
        f"{os.cpu_count()} CPUs, root {root}",
        flush=True,
    )
    ratios, steps_ratios, single_ratios = [], [], []
    runs = {"sequential": ("1", args.seeds), "parallel": (args.parallel, args.seeds), "single": ("1", 1)}
    for i in range(args.pairs):
        order = list(runs) if i % 2 == 0 else list(reversed(runs))  # interleaved: the drift hits all three
        got = {name: trial(root, args, *runs[name]) for name in order}
        seq, par, one = got["sequential"], got["parallel"], got["single"]
        ratios.append(par["wall"] / seq["wall"])
        steps_ratios.append(par["steps_per_seed"] / seq["steps_per_seed"])
        single_ratios.append(par["wall"] / one["wall"])
        print(
            f"round {i + 1}: sequential {seq['wall']:.1f} s ({seq['steps_per_seed']:.0f} steps/seed), "
            f"parallel x{par['parallel']} {par['wall']:.1f} s ({par['steps_per_seed']:.0f} steps/seed), "
            f"one seed {one['wall']:.1f} s: parallel/sequential {ratios[-1]:.2f}, parallel/one seed "
            f"{single_ratios[-1]:.2f}, steps ratio {steps_ratios[-1]:.2f}",
            flush=True,
        )
    print("---")
    print(f"wall_ratio_median: {statistics.median(ratios):.3f} (parallel / sequential trial, per round)")
    print(f"wall_vs_one_seed_median: {statistics.median(single_ratios):.3f} (parallel trial / 1-seed trial)")
    print(f"steps_per_seed_ratio_median: {statistics.median(steps_ratios):.3f} (parallel / sequential)")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
