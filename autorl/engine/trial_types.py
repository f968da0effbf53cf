"""The shapes a trial passes from step to step: what it runs (`Setup`), what it is compared with
(`Reference`) and what its seeds left (`Trained`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorl.engine.backend import Backend, TrialConfig
from autorl.engine.process import BudgetSpec
from autorl.engine.seed import SeedResult
from autorl.engine.track import Track

if TYPE_CHECKING:
    from autorl.record.ledger import ReferenceEvidence
    from autorl.record.row import LedgerRow
    from autorl.record.rungs import AbortRule
    from autorl.record.stats import NoiseFloor


RAY_START_TIMEOUT_S = 60.0  # for each Ray node's first worker: a broken venv on a node must not hang a trial


@dataclass(frozen=True)
class TrialRequest:
    """What a trial is asked to do, resolved from run.py's flags by the command: the engine needs these and
    no other flag."""

    budget: BudgetSpec  # training seconds per seed, and the start-up, hang and SIGTERM limits around it
    seeds: int  # planned (the early stop or the early abort may run fewer)
    parallel: int | None = None  # seeds at once; None: as many as the machine (or the cluster) has slots for
    ray: str | None = None  # a Ray address ("local" starts one); None: the local pool
    ray_start_timeout: float = RAY_START_TIMEOUT_S
    all_seeds: bool = False  # no early stop (and no early abort)
    no_abort: bool = False  # no early abort (rungs are still scored)
    quick: bool = False  # a quick look: one seed, no reference, no verdict
    description: str = ""  # one line recorded in results.tsv
    rerun: str | None = None  # in a swarm: the run id whose exact config this trial runs again on purpose


@dataclass(frozen=True)
class Setup:
    """A validated trial before it runs: what it is asked to do, the config file, the track, the backend (its
    name and the object) and the config it validated."""

    request: TrialRequest
    config_path: Path
    track: Track
    backend_name: str
    backend: Backend
    cfg: TrialConfig
    root: Path


@dataclass(frozen=True)
class Reference:
    """What the trial is compared with, read once before it runs (the ledger does not change during it), so
    that a multi-seed trial can stop early when the candidate is behind after some of its seeds."""

    ledger_rows: list[LedgerRow]
    row: LedgerRow | None  # the best kept trial of the same eval set, harness and budget
    # its eval rows, checked against the hash its row recorded, with those of its config's other trials
    eval_rows: list[dict[str, Any]]
    noise: NoiseFloor  # one noise floor serves every interim look and the verdict
    abort: AbortRule | None = None  # the early abort against its rungs (None: off, `abort_note` says why)
    abort_note: str = ""
    # the trials whose seeds `eval_rows` holds, the reference's first (None: its own alone, or no reference)
    evidence: ReferenceEvidence | None = None


@dataclass
class Trained:
    """What the seeds left: the base model's eval rows, the seeds' results, why the trial stopped adding
    seeds ("" = it did not), the fault of the harness that ended it ("" = none), the seconds the base
    eval took (0: read from the cache) and the seeds it kept from its config's stopped trial."""

    base_rows: list[dict[str, Any]] = field(default_factory=list)
    results: list[SeedResult] = field(default_factory=list)  # the kept seeds first
    stopped_early: str = ""
    failure: str = ""
    base_eval_seconds: float = 0.0
    kept: int = 0  # how many of `results` finished in `kept_from`, not here (trial_run.kept_seeds)
    kept_from: str = ""  # the stopped trial they finished in

    @property
    def started(self) -> bool:
        """Whether a seed's training started in this trial (a kept seed's did not)."""
        return any(r.child is not None for r in self.results[self.kept :])
