"""Re-training recorded configs: `autorl confirm` (on the sealed test split) and `autorl fidelity` (at a
longer budget) train trials' runs/<id>/config.toml again, on fresh seeds.

`recorded_config` loads a trial's config as it ran (refusing one whose file is gone, that no longer loads,
or whose eval set changed); `run_jobs` runs the seeds of several configs in one pool on the machine's
slots, as a trial's seeds run, with a trial's signal handling and warm starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from autorl.engine import warm
from autorl.engine.seed import SeedResult
from autorl.io import paths


class RetrainError(Exception):
    """A recorded config cannot be re-trained (or the command cannot start): exit 2, nothing run."""


def recorded_config(row: dict[str, str], track: Any, role: str) -> Any:
    """The validated config of the trial `row` (its runs/<id>/config.toml), for the backend it ran on."""
    from autorl.io.machine import load_machine
    from autorl.io.tomlcheck import ConfigError

    path = paths.runs_dir() / row["run_id"] / "config.toml"
    if not path.exists():
        raise RetrainError(f"{path} is missing: the {role}'s config cannot be re-trained")
    machine = load_machine()
    try:
        cfg = track.load_config(path, row["backend"], machine.model_name if machine else None)
    except ConfigError as exc:
        raise RetrainError(f"the {role}'s config no longer loads: {exc}") from None
    if track.eval_hash(cfg) != row["eval_hash"]:
        raise RetrainError(
            f"the eval set changed since {row['run_id']} ran: it cannot be re-trained under it"
        )
    return cfg


def same_harness(row: dict[str, str], what: str) -> None:
    """Refuse a trial recorded under another harness: its config is re-trained only under its own."""
    from autorl.io.harness import harness_hash

    if harness_hash(paths.repo_root()) != row["harness_hash"]:
        raise RetrainError(
            f"the harness changed since {row['run_id']} ran: its config cannot be {what} under it"
        )


def run_jobs(
    backend: Any, jobs: Sequence[Any], budget: float, the_plan: Any, report: Callable[[SeedResult], None]
) -> list[SeedResult] | None:
    """The jobs (autorl.engine.pool.SeedJob, each with its config and split) in one pool on the plan's slots;
    None when a signal stopped them (the seeds that finished keep their files)."""
    from autorl.engine.live import LiveView
    from autorl.engine.options import RunOptions
    from autorl.engine.pool import PoolRun, run_local
    from autorl.engine.process import Stop
    from autorl.engine.trial_run import _Signals

    spec = RunOptions(budget=budget).budget_spec()
    stop = Stop()
    with _Signals(stop), LiveView(budget) as view, warm.starters(stop):
        run = PoolRun(backend, None, list(jobs), spec, the_plan, stop, lambda done: "", report)
        results, _ = run_local(run, view)
    return None if stop else results
