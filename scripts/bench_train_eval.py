"""The classic training child's in-training evaluations: run together (as shipped) against one at a time.

    uv run python scripts/bench_train_eval.py              # 3 rounds, seed 7, the shipped classic.toml
    uv run python scripts/bench_train_eval.py --rounds 5 --seed 11

Trains one seed of the shipped classic.toml in this process, the way the training child does
(autorl.classic.train.ClassicRun, one torch thread), twice per round in turn: `together` (the evaluations
of a save period run together before each save: the shipped way) and `alone` (a save after every update, so
each evaluation runs by itself, as every evaluation did before 2026-11-25; the extra saves cost about a
millisecond each, on the training clock). Prints the training clock, the seconds paused for the
evaluations and the wall time of each run, then the medians and the ratio of the paused seconds. Both ways
must write the same curve: the script stops if they do not.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from autorl.classic import train  # noqa: E402
from autorl.classic.config import load_classic_config  # noqa: E402
from autorl.engine import progress  # noqa: E402

SAVE_EVERY = {"together": train.SAVE_EVERY_S, "alone": 0.0}


def one_run(cfg, seed: int, way: str) -> tuple[dict[str, float], list]:
    train.SAVE_EVERY_S = SAVE_EVERY[way]
    with tempfile.TemporaryDirectory() as tmp:
        run = train.ClassicRun(cfg, seed, Path(tmp), threading.Event())
        started = time.monotonic()
        run.run()
        wall = time.monotonic() - started
        evals = json.loads((Path(tmp) / "train_state.json").read_text())["evals"]
    figures = {"training": run.clock.seconds(), "paused": run.clock.paused_total, "wall": wall}
    return figures, [e[1:] for e in evals]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="runs of each way, in turn (default 3)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(1)
    progress.emit = lambda *a, **k: None  # the protocol's events would flood the output
    cfg = load_classic_config(REPO / "classic.toml").model
    results: dict[str, list[dict[str, float]]] = {way: [] for way in SAVE_EVERY}
    curves = set()
    for _ in range(args.rounds):
        for way in SAVE_EVERY:
            figures, curve = one_run(cfg, args.seed, way)
            curves.add(json.dumps(curve))
            results[way].append(figures)
            print(f"{way:8} " + "  ".join(f"{k} {v:6.2f}" for k, v in figures.items()), flush=True)
    if len(curves) != 1:
        sys.exit("error: the two ways wrote different curves")
    print(f"# medians ({len(json.loads(curves.pop()))} evaluations a run, the same curve every run)")
    medians = {way: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for way, rs in results.items()}
    for way, m in medians.items():
        print(f"{way:8} " + "  ".join(f"{k} {v:6.2f}" for k, v in m.items()))
    print(f"paused alone / together: {medians['alone']['paused'] / medians['together']['paused']:.2f}")


if __name__ == "__main__":
    main()
