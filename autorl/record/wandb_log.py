"""W&B, when the user asks (AUTORL_WANDB=1; the agent cannot turn it on from train.toml): after a trial, one
W&B run per seed with its metrics (against the optimizer step), its config (the trial's config file,
flattened) and its final eval score, and one run for the trial with the verdict, delta and p in its summary;
the research context is the group. Written from the run's files, like the TensorBoard events
(autorl/record/events.py): nothing in the training loop.

Without WANDB_API_KEY (or with WANDB_MODE=offline) the runs are written offline, inside the run directory
(runs/<run>/wandb/), without touching the network; `wandb sync runs/<run>/wandb/offline-run-*` uploads them
later. W&B's own config, cache and data directories are pointed into the run directory too, so nothing is
written outside it. The prime-rl backend's seeds are logged by prime-rl itself ([monitors.wandb]): only the
trial's run is written for them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from autorl.io import inputs
from autorl.io.jsonl import read_jsonl
from autorl.io.tomlcheck import flatten
from autorl.record.row import LedgerRow

ON_VAR, PROJECT_VAR, DEFAULT_PROJECT = "AUTORL_WANDB", "AUTORL_WANDB_PROJECT", "autorl"
SELF_LOGGING = ("prime-rl",)  # backends whose trainer logs its own W&B runs
INIT_TIMEOUT_S = 30.0  # online: a W&B server that does not answer must not hold the trial


def enabled() -> bool:
    """W&B stays off unless the user sets AUTORL_WANDB=1 outside train.toml."""
    return os.environ.get(ON_VAR, "") == "1"


def project() -> str:
    return os.environ.get(PROJECT_VAR, DEFAULT_PROJECT)


def offline() -> bool:
    """Offline unless a key is set and the user did not ask for offline (no network is probed to decide)."""
    return os.environ.get("WANDB_MODE", "") == "offline" or not os.environ.get("WANDB_API_KEY")


def write_quietly(run_dir: Path, row: LedgerRow, say: Callable[[str], None]) -> None:
    """`write_run` when the user asked for W&B, said in one line; a failure (W&B not installed, a bad key, a
    full disk) is one warning line, never the trial's row or its exit."""
    if not enabled():
        return
    try:
        n = write_run(run_dir, row)
    except Exception as exc:  # noqa: BLE001 (whatever W&B raises, the trial is recorded already)
        say(f"warning: W&B runs not written ({type(exc).__name__}: {exc})".splitlines()[0])
        return
    where = run_dir / "wandb"
    if offline():
        say(f"W&B: {n} run(s) written offline in {where}; upload them with: wandb sync {where}/offline-run-*")
    else:
        say(f"W&B: {n} run(s) logged to project {project()}")


def write_run(run_dir: Path, row: LedgerRow) -> int:
    """The W&B runs of the trial `row` recorded in `run_dir` (its seeds', then its own); how many."""
    import wandb

    from autorl.record.events import MAX_POINTS, final_scores, thinned

    config = {k: v for k, v in flatten(inputs.read_toml(run_dir / "config.toml")).items()}
    group = f"{row.track} {row.eval_hash[:8]} {row.harness_hash[:8]} {row.budget or 0:g}s"
    common: dict[str, Any] = {
        "project": project(),
        "group": group,
        "tags": [row.track, row.verdict or row.status],
        "config": config | {"autorl/run_id": row.run_id, "autorl/description": row.description},
        "dir": str(run_dir),
        "settings": wandb.Settings(
            mode="offline" if offline() else "online",
            console="off",
            silent=True,
            x_disable_stats=True,
            init_timeout=INIT_TIMEOUT_S,
        ),
    }
    written = 0
    with _inside(run_dir):
        seeds = [] if row.backend in SELF_LOGGING else sorted(run_dir.glob("seed-*"))
        for seed_dir in seeds:
            run = wandb.init(name=f"{row.run_id} {seed_dir.name}", job_type="seed", **common)
            for r in thinned(read_jsonl(seed_dir / "metrics.jsonl"), MAX_POINTS):
                numbers = {
                    k: v for k, v in r.items() if isinstance(v, int | float) and not isinstance(v, bool)
                }
                run.log({k: v for k, v in numbers.items() if k != "step"}, step=int(r.get("step", 0)))
            run.summary.update(final_scores(seed_dir))
            run.finish()
            written += 1
        run = wandb.init(name=row.run_id, job_type="trial", **common)
        run.summary.update(_trial_summary(row))
        run.finish()
    return written + 1


def _trial_summary(row: LedgerRow) -> dict[str, Any]:
    figures = {
        "eval_score": row.eval_score,
        "eval_ci_low": row.eval_ci_low,
        "eval_ci_high": row.eval_ci_high,
        "delta": row.delta,
        "p_value": row.p_value,
        "base_score": row.base_score,
    }
    words = {"verdict": row.verdict, "status": row.status, "reference_run": row.reference_run}
    return {k: v for k, v in figures.items() if v is not None} | words | {"seeds": len(row.seed_list)}


@contextlib.contextmanager
def _inside(run_dir: Path) -> Iterator[None]:
    """W&B's config, cache, data and artifact directories in `run_dir/wandb` while the runs are written."""
    home = run_dir / "wandb"
    names = ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR")
    before = {n: os.environ.get(n) for n in names}
    for n in names:
        os.environ[n] = str(home / n.removeprefix("WANDB_").lower())
    try:
        yield
    finally:
        for n, value in before.items():
            if value is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = value
