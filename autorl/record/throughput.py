"""How much deciding a stretch of trials did with the machine: decisions per hour, seeds per decision, and the
share of core time no seed held (the swarm's summary, docs/swarm.md's one-agent-against-two study).

Read from what the trials recorded: the ledger's rows, and each seed's outcome.json, whose `slot` (the cores
it was pinned to; none: the whole machine) and `slot_held` (epoch seconds it held them, autorl/engine/seed.py)
say which cores were busy when.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from autorl.io import paths
from autorl.record.outcome import seed_outcomes
from autorl.record.row import LedgerRow


@dataclass(frozen=True)
class Throughput:
    """Trials of one stretch of wall time, `wall_s` long, on a machine of `cores` cores."""

    wall_s: float
    cores: int
    decisions: int  # trials that ended `ok` (a verdict, then keep or discard)
    seeds: int  # seeds those trials trained
    core_seconds_held: float  # core x seconds some seed held, within the stretch

    @property
    def decisions_per_hour(self) -> float:
        return self.decisions / (self.wall_s / 3600) if self.wall_s > 0 else 0.0

    @property
    def seeds_per_decision(self) -> float | None:
        return self.seeds / self.decisions if self.decisions else None

    @property
    def cores_idle(self) -> float:
        """The share of the stretch's core time no seed held (its start-up, its eval and its training count as
        held; the agents' thinking, the trials' own start and their statistics do not)."""
        total = self.wall_s * self.cores
        return max(0.0, 1 - self.core_seconds_held / total) if total > 0 else 0.0

    def lines(self) -> dict[str, str]:
        per, minutes = self.seeds_per_decision, self.wall_s / 60
        return {
            "decisions_per_hour": f"{self.decisions_per_hour:.1f} ({self.decisions} in {minutes:.1f} min)",
            "seeds_per_decision": f"{per:.2f}" if per is not None else "-",
            "cores_idle": f"{self.cores_idle:.0%} of {self.cores} cores' time held by no seed",
        }


def measure(rows: Sequence[LedgerRow], since: float, until: float, cores: int | None = None) -> Throughput:
    """The trials among `rows` (their run directories under runs/) in the stretch [since, until] (epoch
    seconds): the `ok` ones count as decisions, each seed's held cores are clipped to the stretch."""
    cores = cores or len(os.sched_getaffinity(0))
    decisions = seeds = 0
    held = 0.0
    for row in rows:
        outcomes = seed_outcomes(paths.runs_dir() / row.run_id)
        if row.status == "ok":
            decisions += 1
            seeds += sum(o.status == "ok" for o in outcomes)
        for o in outcomes:
            if span := o.slot_held:
                seconds = max(0.0, min(span[1], until) - max(span[0], since))
                held += seconds * (len(o.slot) or cores)
    return Throughput(until - since, cores, decisions, seeds, held)
