"""Re-training recorded configs: `autorl confirm` (on the sealed test split) and `autorl fidelity` (at a
longer budget) train trials' runs/<id>/config.toml again, on fresh seeds.

`recorded_config` loads a trial's config as it ran (refusing one whose file is gone, that no longer loads,
or whose eval set changed); `run_jobs` runs the seeds of several configs in one pool on the machine's
slots (or as Ray tasks with `ray`), as a trial's seeds run, with a trial's signal handling and warm starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from autorl.engine import warm
from autorl.engine.backend import Backend, TrialConfig
from autorl.engine.seed import SeedResult
from autorl.engine.track import Track
from autorl.io import paths
from autorl.record.row import LedgerRow

if TYPE_CHECKING:
    from autorl.engine.slots import Plan


class RetrainError(Exception):
    """A recorded config cannot be re-trained (or the command cannot start): exit 2, nothing run."""


def recorded_config(row: LedgerRow, track: Track[Any], role: str) -> TrialConfig:
    """The validated config of the trial `row` (its runs/<id>/config.toml), for the backend it ran on."""
    from autorl.io.machine import load_machine
    from autorl.io.tomlcheck import ConfigError

    path = paths.run_config_file(row.run_id)
    if not path.exists():
        raise RetrainError(f"{path} is missing: the {role}'s config cannot be re-trained")
    machine = load_machine()
    try:
        cfg = track.load_config(path, row.backend, machine.model_name if machine else None)
    except ConfigError as exc:
        raise RetrainError(f"the {role}'s config no longer loads: {exc}") from None
    if track.eval_hash(cfg) != row.eval_hash:
        raise RetrainError(f"the eval set changed since {row.run_id} ran: it cannot be re-trained under it")
    return cfg


def same_harness(row: LedgerRow, what: str) -> None:
    """Refuse a trial recorded under another harness: its config is re-trained only under its own."""
    from autorl.io.harness import harness_hash

    if harness_hash(paths.repo_root()) != row.harness_hash:
        raise RetrainError(
            f"the harness changed since {row.run_id} ran: its config cannot be {what} under it"
        )


def retrain_plan(backend: Backend, cfg: TrialConfig, budget: float, seeds: int, ray: str | None) -> Plan:
    """The slot plan (autorl.engine.slots.Plan) of `seeds` seeds at `budget`: the machine's, or Ray's."""
    from autorl.engine.slots import plan

    return plan(backend, cfg, seeds, ray=ray)


def run_jobs(
    backend: Any,
    jobs: Sequence[Any],
    budget: float,
    the_plan: Any,
    report: Callable[[SeedResult], None],
    ray: str | None = None,
) -> list[SeedResult] | None:
    """The jobs (autorl.engine.pool.SeedJob, each with its config and split) in one pool on the plan's slots,
    or as Ray tasks on the cluster at `ray`; None when a signal stopped them (the seeds that finished keep
    their files). RetrainError when the cluster cannot take them (nothing ran)."""
    from autorl.engine.console import Signals
    from autorl.engine.live import LiveView
    from autorl.engine.pool import PoolRun, run_local
    from autorl.engine.process import BudgetSpec, Stop
    from autorl.engine.ray_pool import cluster_for, run_ray
    from autorl.engine.trial_types import RAY_START_TIMEOUT_S
    from autorl.io.harness import harness_hash
    from autorl.io.tomlcheck import ConfigError

    stop = Stop()
    with Signals(stop), LiveView(budget) as view, warm.starters(stop):
        spec = BudgetSpec(budget_s=budget)
        run = PoolRun(backend, None, list(jobs), spec, the_plan, stop, lambda done: "", report)
        try:
            cluster = cluster_for(ray, RAY_START_TIMEOUT_S, the_plan, harness_hash(paths.repo_root()), stop)
        except ConfigError as exc:
            raise RetrainError(str(exc)) from None
        results, _ = run_ray(cluster, run) if cluster is not None else run_local(run, view)
    return None if stop else results
