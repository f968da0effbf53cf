"""Does the default config learn? Base vs trained eval_score over several seeds, embedded backend.

    uv run python scripts/bench_learning.py                    # train.toml, 600 s per seed, seeds 0 1 2
    uv run python scripts/bench_learning.py --budget 300 --seeds 0 1
    uv run python scripts/bench_learning.py --jobs 2                # two seeds at a time

Runs each seed exactly as ``run.py`` does (``autorl.engine.seed.run_seed``: budgeted child -> saved weights ->
the fixed eval of eval.toml), without touching results.tsv: for each seed it trains for ``--budget`` seconds
of training (model loading excluded, as in a trial), stops the child with SIGTERM, evaluates the saved
weights, and finally prints base_score, each seed's eval_score, their mean and spread, and the gain over
the base, with each seed's training reward (start -> peak@step -> end; COLLAPSED as the health flag says).
Needs the base model (``uv run prepare.py``). Prints the machine load next to the figures: other work on the
CPU slows training down and so lowers what a fixed budget reaches. On a CPU with 2+ cores each trainer
already uses two (it samples in a second process, the ``hf-process`` sampler), so ``--jobs 2`` on a 2-core
machine halves the speed of both: use it only with 4+ cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autorl.engine import warm  # noqa: E402
from autorl.engine.process import BudgetSpec  # noqa: E402
from autorl.engine.seed import run_eval, run_seed  # noqa: E402
from autorl.io.jsonl import read_jsonl  # noqa: E402
from autorl.llm.config import load_train_config  # noqa: E402
from autorl.llm.embedded.backend import EmbeddedBackend, build_spec  # noqa: E402
from autorl.llm.prepare import require_model  # noqa: E402
from autorl.record import stats  # noqa: E402
from autorl.record.runview import Curve  # noqa: E402


def reward_curve(seed_dir: Path) -> str:
    """The seed's training reward, smoothed: start -> peak@step -> end, and whether it collapsed (the
    health flag's rule, autorl/record/runview.py)."""
    rows = read_jsonl(seed_dir / "metrics.jsonl")
    rows = [r for r in rows if isinstance(r.get("reward_mean"), int | float)]
    curve = Curve.of("reward", [int(r["step"]) for r in rows], [r["reward_mean"] for r in rows])
    if curve is None:
        return "reward: no steps"
    return f"reward {curve.text()}" + (" COLLAPSED" if curve.collapsed else "")


def eval_score(backend: EmbeddedBackend, cfg, weights: Path | None, out: Path) -> float:
    rows, _, error = run_eval(backend.eval_command(cfg, weights, out), out, out.with_suffix(".log"))
    if error:
        raise RuntimeError(error)
    return stats.eval_score(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=REPO / "train.toml")
    ap.add_argument("--budget", type=float, default=600.0, help="training seconds per seed (default 600)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--jobs", type=int, default=1, help="seeds trained at the same time (default 1)")
    ap.add_argument("--out", type=Path, default=None, help="keep run directories here (default: a temp dir)")
    args = ap.parse_args()

    cfg = load_train_config(args.config, backend="embedded")
    require_model(build_spec(cfg.model).model_path)
    backend = EmbeddedBackend()
    backend.check(cfg)
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-learning-"))
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"config {args.config}, budget {args.budget:g} s, seeds {args.seeds} ({args.jobs} at a time), "
        f"{os.cpu_count()} CPUs, runs in {out}",
        flush=True,
    )

    def one_seed(seed: int) -> float:
        load_before = os.getloadavg()[0]
        start = time.monotonic()
        result = run_seed(backend, cfg, seed, seed, out / f"seed-{seed}", BudgetSpec(budget_s=args.budget))
        if not result.evaluated:
            raise RuntimeError(f"seed {seed}: {result.status}: {result.error}")
        score = stats.eval_score(result.eval_rows)
        assert result.child is not None
        print(
            f"seed {seed}: eval_score {score:.4f} (gain {score - base:+.4f}), {result.steps} steps in "
            f"{result.child.training_seconds:.0f} s of training ({time.monotonic() - start:.0f} s wall), "
            f"load {load_before:.1f} -> {os.getloadavg()[0]:.1f}; {reward_curve(out / f'seed-{seed}')}",
            flush=True,
        )
        return score

    # The base eval and every seed's children fork from one warm starter (autorl/engine/warm.py), as in a
    # trial. --jobs > 1 trains several seeds at once, each child in its own processes (on a CPU with 2+ cores
    # a trainer and its sampling process: N cores fit N/2 seeds at about the speed of one alone).
    with warm.starters():
        base = eval_score(backend, cfg, None, out / "base_eval.jsonl")
        print(f"base_score {base:.4f}", flush=True)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            scores = list(pool.map(one_seed, args.seeds))
    mean = statistics.fmean(scores)
    spread = statistics.stdev(scores) if len(scores) > 1 else 0.0
    print("---")
    print(f"base_score: {base:.4f}")
    print(
        f"eval_score: {mean:.4f} +- {spread:.4f} (mean +- sd over {len(scores)} seeds: "
        f"{', '.join(f'{s:.4f}' for s in scores)})"
    )
    print(f"gain: {mean - base:+.4f} (min {min(scores) - base:+.4f})")


if __name__ == "__main__":
    main()
