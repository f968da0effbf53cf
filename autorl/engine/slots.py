"""How a trial's seeds share the machine: the backend's slots, and how many seeds run at once.

`--parallel auto` (the default) runs as many seeds at once as the backend finds slots for on this machine
(`Backend.plan_slots`); `--parallel N` asks for N: more than the slots runs them unpinned, side by side
(oversubscribed, said in the plan). With Ray the cluster's resources decide; `--parallel` caps the seeds
in flight.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autorl.engine.backend import Backend, Slot, TrialConfig
from autorl.io.machine import Machine, load_machine, own_cpu_ids


@dataclass(frozen=True)
class Plan:
    slots: list[Slot]  # one per seed running at once (the first `parallel` are used)
    parallel: int  # seeds at once
    seeds: int  # seeds planned
    oversubscribed: bool = False  # more seeds at once than the machine has slots for
    where: str = "local"  # local | ray ADDRESS

    @property
    def waves(self) -> int:
        return -(-self.seeds // self.parallel)

    def describe(self) -> str:
        text = f"plan: {self.seeds} seed(s), {self.parallel} at a time ({self.waves} wave(s)) on {self.where}"
        if self.where == "local":
            text += ": " + "; ".join(s.describe() for s in self.slots[: self.parallel])
        if self.oversubscribed:
            text += " (oversubscribed: more seeds at once than this machine has slots; they share cores)"
        return text


def current_machine() -> Machine:
    """The machine file when there is one (prepare wrote it), else what is cheap to see: the CPUs. Either
    way the CPUs are the ones this process may use now (`autorl tune` runs trials side by side, each on its
    own cores)."""
    cpus = len(own_cpu_ids())
    machine = load_machine() or Machine(python="", platform="", torch=None, cpus=cpus, ram_gb=0.0)
    return replace(machine, cpus=cpus)


def plan(
    backend: Backend,
    cfg: TrialConfig,
    seeds: int,
    parallel: int | None = None,
    ray: str | None = None,
    machine: Machine | None = None,
) -> Plan:
    """`seeds` seeds on the backend's slots: `parallel` at once (None: as many as there are slots; more than
    that oversubscribes them, said in the plan), or on the Ray cluster at `ray`, whose resources decide."""
    slots = backend.plan_slots(cfg, machine or current_machine()) or [Slot()]
    if ray is not None:
        at_once = min(parallel or seeds, seeds)
        return Plan(slots=slots[:1], parallel=at_once, seeds=seeds, where=f"ray {ray}")
    wanted = min(parallel or len(slots), seeds)
    if wanted <= len(slots):
        return Plan(slots=slots[:wanted], parallel=wanted, seeds=seeds)
    unpinned = [Slot(index=i, threads=slots[0].threads) for i in range(wanted)]
    return Plan(slots=unpinned, parallel=wanted, seeds=seeds, oversubscribed=True)
