"""The contract between the trial runner and a training backend (embedded, prime-rl, classic)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from autorl import progress


@dataclass
class Launch:
    """How to start and follow one training child (run in its own process group by autorl.process)."""

    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)  # added to os.environ
    # A stdout line -> progress event (see autorl.progress), or None for a plain log line.
    parse_line: Callable[[str], dict[str, Any] | None] = progress.parse


@dataclass
class TrainOutcome:
    """What a backend found after its child ended (normally, stopped at the budget, or crashed)."""

    weights_dir: Path | None  # the latest complete weights, or None when none were saved
    steps: int = 0
    peak_memory_gb: float | None = None
    failed_component: str | None = None  # prime-rl: inference | orchestrator | trainer
    notes: list[str] = field(
        default_factory=list
    )  # shown in the summary's log, e.g. which weights were picked
    extras: dict[str, Any] = field(
        default_factory=dict
    )  # backend-specific figures, e.g. time_to_solve_seconds


class Backend(Protocol):
    """One per backend; instances are cheap and hold no state between trials."""

    name: str

    def check(self, cfg: Any) -> None:
        """Raise autorl.tomlcheck.ConfigError for anything this backend cannot honour (named by key)."""

    def resolve(self, cfg: Any, run_dir: Path, seed: int) -> dict[str, Any]:
        """The config the child will run with (printed by --dry-run, written as resolved.json/toml)."""

    def launch(self, cfg: Any, run_dir: Path, seed: int) -> Launch:
        """Write what the child needs into run_dir and say how to start it."""

    def collect(self, cfg: Any, run_dir: Path) -> TrainOutcome:
        """After the child ended: pick the latest complete weights, count steps, attribute a crash."""

    def eval_command(self, cfg: Any, weights_dir: Path | None, out_path: Path) -> Launch:
        """The fixed evaluation of weights_dir (None = the untrained base model) writing out_path (JSONL)."""

    # Optional: backends may also define
    #   summary_extras(self, cfg, outcomes: list[TrainOutcome], eval_rows: list[dict]) -> dict[str, str]
    # whose key: value lines are added to the summary block and to the ledger's `extras` column.
