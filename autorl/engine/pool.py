"""The local pool: a trial's seeds run `parallel` at a time, in waves, each on its own slot.

Each seed is `autorl.engine.seed.run_seed` in a thread of this process (the work itself is in the seed's child
processes, pinned to the slot's cores / GPUs). After every wave `after_wave(results)` may end the trial
early (the futility stop); a crashed seed does not stop its siblings; a stop request (signal) lets every
running seed end gracefully and starts nothing new. Ray runs the same waves across machines
(autorl/engine/ray_pool.py).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from autorl.engine.backend import Backend, TrialConfig
from autorl.engine.live import LiveView
from autorl.engine.process import BudgetSpec, Stop
from autorl.engine.seed import Judge, SeedResult, run_seed
from autorl.engine.slots import Plan


@dataclass(frozen=True)
class SeedJob:
    index: int  # position among the trial's seeds
    seed: int
    dir: Path
    cfg: TrialConfig | None = None  # None: the pool's config (autorl confirm runs two configs in one pool)
    split: str = "eval"  # the eval split ("test" for autorl confirm)

    def config(self, pool_cfg: TrialConfig | None) -> TrialConfig:
        """The config this seed trains: its own, else the pool's."""
        cfg = pool_cfg if self.cfg is None else self.cfg
        assert cfg is not None, "a job without its own config runs in a pool that has one"
        return cfg


AfterWave = Callable[[list[SeedResult]], str]  # -> "" to go on, else why the trial stops adding seeds
Report = Callable[[SeedResult], None]  # called as each seed finishes (prints its log)


def waves(jobs: list[SeedJob], parallel: int, done: int = 0) -> list[list[SeedJob]]:
    """The jobs `parallel` at a time; after `done` seeds that finished before (a stopped trial run again)
    the first wave fills the wave they ended in, so that each look falls after the seeds the trial planned
    it after (autorl.record.stats.looks)."""
    if not jobs:
        return []
    first = -done % parallel or parallel
    return [jobs[:first], *(jobs[i : i + parallel] for i in range(first, len(jobs), parallel))]


@dataclass(frozen=True)
class PoolRun:
    """What running a trial's seeds needs, the same for the local pool and for Ray."""

    backend: Backend
    cfg: TrialConfig | None  # the config of every job without its own
    jobs: list[SeedJob]
    spec: BudgetSpec
    plan: Plan  # the slots and how many seeds run at once
    stop: Stop
    after_wave: AfterWave
    report: Report
    judge: Judge = field(
        default_factory=Judge
    )  # how the seeds' rungs are judged (the early abort); none: never stopped at one
    done: int = 0  # the trial's seeds that finished before (kept from its stopped run): not among `jobs`


def run_local(run: PoolRun, view: LiveView) -> tuple[list[SeedResult], str]:
    """Run the jobs in waves of `plan.parallel` on the plan's slots (at least `parallel` of them)."""
    slots, parallel, stop = run.plan.slots, run.plan.parallel, run.stop
    assert 1 <= parallel <= len(slots), (parallel, len(slots))
    results: list[SeedResult] = []
    planned = waves(run.jobs, parallel, run.done)
    for w, wave in enumerate(planned):
        if stop:
            break
        with ThreadPoolExecutor(max_workers=len(wave), thread_name_prefix="seed") as pool:
            futures = {
                pool.submit(
                    run_seed,
                    run.backend,
                    job.config(run.cfg),
                    job.seed,
                    job.index,
                    job.dir,
                    run.spec,
                    slot=slot,
                    on_event=view.callback(job.index, f"seed {job.index + 1}/{len(run.jobs) + run.done}"),
                    stop=stop,
                    split=job.split,
                    judge=run.judge,
                ): job
                for job, slot in zip(wave, slots, strict=False)
            }
            for future in as_completed(futures):
                view.finish(futures[future].index)
                result = future.result()
                results.append(result)
                run.report(result)
        if w + 1 < len(planned) and not stop and (why := run.after_wave(results)):
            return results, why
    return results, ""
