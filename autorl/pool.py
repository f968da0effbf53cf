"""The local pool: a trial's seeds run `parallel` at a time, in waves, each on its own slot.

Each seed is `autorl.seed.run_seed` in a thread of this process (the work itself is in the seed's child
processes, pinned to the slot's cores / GPUs). After every wave `after_wave(results)` may end the trial
early (the futility stop); a crashed seed does not stop its siblings; a stop request (signal) lets every
running seed end gracefully and starts nothing new. Ray runs the same waves across machines
(autorl/ray_pool.py).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.backend import Backend, Slot
from autorl.live import LiveView
from autorl.process import BudgetSpec, Stop
from autorl.seed import SeedResult, run_seed


@dataclass(frozen=True)
class SeedJob:
    index: int  # position among the trial's seeds
    seed: int
    dir: Path
    cfg: Any = None  # None: the pool's config (autorl confirm runs two configs in one pool)
    split: str = "eval"  # the eval split ("test" for autorl confirm)


AfterWave = Callable[[list[SeedResult]], str]  # -> "" to go on, else why the trial stops adding seeds
Report = Callable[[SeedResult], None]  # called as each seed finishes (prints its log)


def waves(jobs: list[SeedJob], parallel: int) -> list[list[SeedJob]]:
    return [jobs[i : i + parallel] for i in range(0, len(jobs), parallel)]


def run_local(
    backend: Backend,
    cfg: Any,
    jobs: list[SeedJob],
    spec: BudgetSpec,
    slots: list[Slot],
    parallel: int,
    stop: Stop,
    view: LiveView,
    after_wave: AfterWave,
    report: Report,
) -> tuple[list[SeedResult], str]:
    """Run the jobs in waves of `parallel` on `slots` (at least `parallel` of them)."""
    assert 1 <= parallel <= len(slots), (parallel, len(slots))
    results: list[SeedResult] = []
    planned = waves(jobs, parallel)
    for w, wave in enumerate(planned):
        if stop:
            break
        with ThreadPoolExecutor(max_workers=len(wave), thread_name_prefix="seed") as pool:
            futures = {}
            for job, slot in zip(wave, slots, strict=False):
                on_event = view.callback(job.index, f"seed {job.index + 1}/{len(jobs)}")
                futures[
                    pool.submit(
                        run_seed,
                        backend,
                        cfg if job.cfg is None else job.cfg,
                        job.seed,
                        job.index,
                        job.dir,
                        spec,
                        slot,
                        on_event,
                        stop,
                        job.split,
                    )
                ] = job
            for future in as_completed(futures):
                view.finish(futures[future].index)
                result = future.result()
                results.append(result)
                report(result)
        if w + 1 < len(planned) and not stop and (why := after_wave(results)):
            return results, why
    return results, ""
