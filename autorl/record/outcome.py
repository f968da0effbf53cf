"""`runs/<run_id>/seed-<k>/outcome.json`: how one seed ended, its one shape.

`autorl.engine.seed.write_outcome` writes it (its only writer; Ray brings it back from the node that ran
the seed); `autorl show` and the health flags (autorl.record.runview), the cost estimates
(autorl.engine.cost), the swarm's throughput (autorl.record.throughput), `autorl fidelity` and a stopped
trial run again (autorl.engine.seed.finished_seed: the seeds it keeps) read it, all through
`SeedOutcome.read`.
A file a crash left half-written, or none at all, reads as `SeedOutcome()`: status `?`, nothing known.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from autorl.io import atomic, inputs

FILE = "outcome.json"


class SeedOutcome(BaseModel):
    """How a seed ended, as its outcome.json records it."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    seed: int | None = None
    """The training seed (harness-chosen)."""
    status: str = "?"
    """ok | crash | timeout | interrupted; `?` when no outcome.json was written."""
    stop_reason: str | None = None
    """Why the training process ended: exited (on its own) | budget | aborted (at a rung: the early abort) |
    hang | startup_cap | interrupted."""
    reason: str | None = None
    """The stop in words, as the trial's log line gives it."""
    error: str | None = None
    """A crash report's telling line."""
    training_seconds: float | None = None
    """Seconds on the training clock."""
    startup_seconds: float | None = None
    """Seconds before the training clock started (imports, model load; the first wave waits for its warm
    starter)."""
    steps: int | None = None
    """Optimizer steps (classic: PPO updates)."""
    eval_seconds: float | None = None
    """Seconds its fixed eval took (None: none ran, or a file from before this field)."""
    peak_rss_gb: float | None = None
    """The training process tree's peak resident memory, GB."""
    cpu_wait_share: float | None = None
    """The share of its training during which some task on the machine waited for a CPU
    (/proc/pressure/cpu)."""
    slot_wait_seconds: float = 0.0
    """Seconds it waited for its slot, held by another trial's seed."""
    slot: list[int] = []
    """The cores it held (none: unpinned)."""
    slot_held: tuple[float, float] | None = None
    """When it held its slot: (start, end), epoch seconds."""

    @classmethod
    def read(cls, seed_dir: Path) -> SeedOutcome:
        """The seed's outcome; `SeedOutcome()` (status `?`) when the file is missing or not one."""
        try:
            return cls.model_validate(inputs.read_json_object(seed_dir / FILE))
        except ValidationError:
            return cls()

    def write(self, seed_dir: Path) -> None:
        seed_dir.mkdir(parents=True, exist_ok=True)
        atomic.write_text(seed_dir / FILE, self.model_dump_json() + "\n")


def seed_outcomes(run_dir: Path) -> list[SeedOutcome]:
    """The outcomes of a run's seeds (`seed-<k>/`), in seed order."""
    dirs = [d for d in run_dir.glob("seed-*") if d.is_dir() and d.name[5:].isdigit()]
    return [SeedOutcome.read(d) for d in sorted(dirs, key=lambda d: int(d.name[5:]))]
