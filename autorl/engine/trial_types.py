"""The shapes a trial passes from step to step: what it runs (`Setup`), what it is compared with
(`Reference`) and what its seeds left (`Trained`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorl.engine.backend import Backend
from autorl.engine.options import RunOptions
from autorl.engine.seed import SeedResult
from autorl.engine.track import Track

if TYPE_CHECKING:
    from autorl.record.rungs import AbortRule
    from autorl.record.stats import NoiseFloor


@dataclass(frozen=True)
class Setup:
    """A validated trial before it runs: the flags (config path and seed count resolved), the track, the
    backend (its name and the object) and the config it validated."""

    opts: RunOptions
    track: Track
    backend_name: str
    backend: Backend
    cfg: Any
    root: Path

    @property
    def config_path(self) -> Path:
        assert self.opts.config is not None  # resolved by the command's validation
        return self.opts.config


@dataclass(frozen=True)
class Reference:
    """What the trial is compared with, read once before it runs (the ledger does not change during it), so
    that a multi-seed trial can stop early when the candidate is behind after some of its seeds."""

    ledger_rows: list[dict[str, str]]
    row: dict[str, str] | None  # the best kept trial of the same eval set, harness and budget
    eval_rows: list[dict[str, Any]]  # its eval rows, checked against the hash its row recorded
    noise: NoiseFloor  # one noise floor serves every interim look and the verdict
    abort: AbortRule | None = None  # the early abort against its rungs (None: off, `abort_note` says why)
    abort_note: str = ""


@dataclass
class Trained:
    """What the seeds left: the base model's eval rows, the seeds' results, why the trial stopped adding
    seeds ("" = it did not) and the fault of the harness that ended it ("" = none)."""

    base_rows: list[dict[str, Any]] = field(default_factory=list)
    results: list[SeedResult] = field(default_factory=list)
    stopped_early: str = ""
    failure: str = ""
