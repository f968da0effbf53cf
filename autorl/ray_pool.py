"""Seeds across machines: each seed is a Ray task running `autorl.seed.run_seed` on a worker.

`run.py --ray ADDRESS` connects to a running Ray cluster (`ray start --head` on one machine, `ray start
--address HEAD:6379` on the others); `--ray local` starts a Ray instance on this machine. Each task asks
for its seed's resources (CPUs, GPUs: from the backend's slot) and runs in the worker's checkout of autorl,
which must be the same commit: the worker refuses when its harness hash differs. It sends back the seed's
result and its small run files (logs, metrics, eval rows); the weights stay on the worker unless the run
directory is on shared storage. Waves, the early stop and a stop request work as in the local pool.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

from autorl import atomic, paths
from autorl.backend import Backend, Slot
from autorl.pool import AfterWave, Report, SeedJob, waves
from autorl.process import BudgetSpec, Stop
from autorl.seed import SeedResult, run_seed
from autorl.slots import Plan

SMALL_FILE_BYTES = 64 * 2**20  # run files larger than this (none so far) stay on the worker


class HarnessMismatch(RuntimeError):
    """The worker's checkout is not the commit the trial runs."""


def resources(slot: Slot) -> dict[str, float]:
    """What a seed asks Ray for: the cores of its slot (at least one) and its share of GPUs."""
    cpus = max(len(slot.cpus), slot.threads or 1)
    gpus = len(slot.gpus) * (slot.gpu_share if slot.gpu_share is not None else 1.0)
    return {"num_cpus": float(cpus), "num_gpus": float(gpus)}


def small_files(seed_dir: Path) -> dict[str, bytes]:
    """The seed directory's own files (not the weights directory): what comes back to the driver."""
    if not seed_dir.is_dir():
        return {}
    return {
        p.name: p.read_bytes()
        for p in sorted(seed_dir.iterdir())
        if p.is_file() and p.stat().st_size <= SMALL_FILE_BYTES
    }


def seed_task(
    expected_harness: str,
    backend: Backend,
    cfg: Any,
    job: SeedJob,
    run_id: str,
    spec: BudgetSpec,
    slot: Slot,
) -> tuple[SeedResult, dict[str, bytes], str]:
    """Runs on a Ray worker, in the worker's checkout (its repo root, or AUTORL_ROOT)."""
    from autorl.harness import harness_hash

    root = paths.repo_root()
    found = harness_hash(root)
    if found != expected_harness:
        raise HarnessMismatch(
            f"worker {socket.gethostname()}: the autorl checkout at {root} has harness {found}, the trial "
            f"runs {expected_harness}: check out the same commit on every node"
        )
    seed_dir = paths.runs_dir() / run_id / job.dir.name
    result = run_seed(backend, cfg, job.seed, job.index, seed_dir, spec, slot)
    return result, small_files(seed_dir), socket.gethostname()


def _connect(address: str) -> bool:
    """ray.init for `address`; returns whether this call started the Ray instance (to shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    if address == "local":
        env = {"AUTORL_ROOT": str(paths.repo_root())}
        ray.init(
            num_cpus=os.cpu_count(),
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": env},
        )
        return True
    ray.init(address=address, log_to_driver=False)
    return False


def run_ray(
    address: str,
    backend: Backend,
    cfg: Any,
    jobs: list[SeedJob],
    spec: BudgetSpec,
    plan: Plan,
    stop: Stop,
    after_wave: AfterWave,
    report: Report,
    harness: str,
) -> tuple[list[SeedResult], str]:
    import ray

    started_here = _connect(address)
    slot = plan.slots[0]
    task_slot = Slot(threads=slot.threads)  # Ray assigns cores and GPUs (CUDA_VISIBLE_DEVICES) itself
    remote = ray.remote(seed_task).options(**resources(slot), max_retries=0)
    run_id = jobs[0].dir.parent.name
    results: list[SeedResult] = []
    try:
        planned = waves(jobs, plan.parallel)
        for w, wave in enumerate(planned):
            if stop:
                break
            refs = {remote.remote(harness, backend, cfg, job, run_id, spec, task_slot): job for job in wave}
            results += _gather(refs, stop, report)
            if w + 1 < len(planned) and not stop and (why := after_wave(results)):
                return results, why
        return results, ""
    finally:
        if started_here:
            ray.shutdown()


def _gather(refs: dict[Any, SeedJob], stop: Stop, report: Report) -> list[SeedResult]:
    import ray
    from ray.exceptions import RayTaskError, TaskCancelledError

    pending = list(refs)
    out: list[SeedResult] = []
    cancelled = False
    while pending:
        if stop and not cancelled:
            for ref in pending:  # KeyboardInterrupt in the task: its child gets SIGTERM and saves
                ray.cancel(ref, force=stop.hard.is_set())
            cancelled = True
        ready, pending = ray.wait(pending, num_returns=1, timeout=0.5)
        for ref in ready:
            job = refs[ref]
            try:
                result, files, host = ray.get(ref)
            except TaskCancelledError:
                result, files, host = SeedResult(job.index, job.seed, job.dir, status="interrupted"), {}, ""
            except RayTaskError as exc:
                cause = exc.cause if isinstance(exc.cause, Exception) else exc
                if isinstance(cause, HarnessMismatch):
                    raise cause from None
                result = SeedResult(job.index, job.seed, job.dir, status="crash", error=f"Ray task: {cause}")
                files, host = {}, ""
            result.dir, result.host = job.dir, host
            _land(job.dir, files)
            if host and host != socket.gethostname():
                result.log.insert(0, f"seed {job.seed} ran on {host}")
            out.append(result)
            report(result)
        if not ready:
            time.sleep(0.05)
    return out


def _land(seed_dir: Path, files: dict[str, bytes]) -> None:
    """Write the files a worker sent back, unless the worker wrote into this same directory."""
    seed_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        target = seed_dir / name
        if not target.exists():
            atomic.write_bytes(target, data)
