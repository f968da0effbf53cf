"""The contract between the trial runner and a training backend (embedded, prime-rl, classic).

Every backend subclasses `Backend[its track's config type]` explicitly; the optional members (`preflight`,
`availability_note`, `summary_extras`, `plan_slots`) have defaults here, so the runner calls them without
probing. The engine reads a config through `TrialConfig` only; each track and its backends keep their own
config type (autorl.llm.config.LoadedConfig, autorl.classic.config.LoadedClassicConfig).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

from autorl.engine import progress
from autorl.io.cliargs import add_flags, flag, from_args

if TYPE_CHECKING:
    from autorl.io.machine import Machine


@dataclass
class Launch:
    """How to start and follow one training child (run in its own process group by autorl.engine.process)."""

    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)  # added to os.environ
    # A stdout line -> progress event (see autorl.engine.progress), or None for a plain log line.
    parse_line: Callable[[str], dict[str, Any] | None] = progress.parse
    cpus: tuple[int, ...] = ()  # CPU affinity of the child (its slot's cores); () = not pinned
    # Modules a `python -m` child imports that a warm starter may import once for every launch of the trial
    # (autorl/engine/warm.py), and `module:function` entries it calls once after them (a prewarm); () = always
    # a cold start. Launches of one backend share the tuple (one starter).
    warm: tuple[str, ...] = ()

    def child_env(self) -> dict[str, str]:
        """The child's environment, cold or warm: the runner's, then the launch's, and unbuffered output."""
        return {**os.environ, **self.env, "PYTHONUNBUFFERED": "1"}


@dataclass(frozen=True)
class ChildArgs:
    """The flags of a training child, declared once for both sides: the backend's `launch` writes them
    (`argv`), the child parses them (`parse`). A backend whose child takes more subclasses it."""

    config: Path = flag(None, "resolved.json written by the runner", type=Path, required=True)
    run_dir: Path = flag(None, "the seed's directory: weights, metrics, logs", type=Path, required=True)
    seed: int = flag(0, "the training seed (harness-chosen)", type=int, required=True)

    def argv(self, module: str) -> list[str]:
        """`python -m module` with these flags (a None value is left out, a True switch given bare)."""
        out = [sys.executable, "-m", module]
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or value is False:
                continue
            out += [f"--{f.name.replace('_', '-')}"] + ([] if value is True else [str(value)])
        return out

    @classmethod
    def parse(cls, argv: list[str] | None, description: str) -> Self:
        parser = argparse.ArgumentParser(description=description)
        add_flags(parser, cls)
        return from_args(cls, parser.parse_args(argv))


@dataclass
class Collected:
    """What a backend found after its child ended (normally, stopped at the budget, or crashed)."""

    weights_dir: Path | None  # the latest complete weights, or None when none were saved
    steps: int = 0
    peak_memory_gb: float | None = None
    failed_component: str | None = None  # prime-rl: inference | orchestrator | trainer
    # shown in the trial's log, e.g. which weights were picked
    notes: list[str] = field(default_factory=list)
    # backend-specific figures, e.g. time_to_solve_seconds
    extras: dict[str, Any] = field(default_factory=dict)
    # weights kept along the run (a config's snapshot_s: `autorl fidelity`), evaluated after the end
    snapshots: list[Snapshot] = field(default_factory=list)


@dataclass(frozen=True)
class Snapshot:
    """A copy of the weights a trainer kept when its training clock passed `at_s` seconds."""

    at_s: float
    step: int
    path: Path


@dataclass(frozen=True)
class Slot:
    """The share of the machine one seed runs on. Seeds that run at the same time get different slots.

    The default slot is the whole machine (one seed at a time, nothing pinned).
    """

    index: int = 0  # 0..n-1 among the slots of one plan
    cpus: tuple[int, ...] = ()  # cores the seed's processes are pinned to; () = not pinned
    threads: int | None = None  # torch threads of the trainer; None = the backend's own choice
    gpus: tuple[int, ...] = ()  # GPU ids (prime-rl: inference GPU first, then the trainer GPU); () = CPU
    gpu_share: float | None = None  # fraction of each GPU's memory this seed may use when k seeds share it
    port: int | None = None  # base port of the seed's servers (prime-rl: vLLM), distinct per slot

    def describe(self) -> str:
        parts = []
        if self.cpus:
            parts.append(f"cpus {','.join(map(str, self.cpus))}")
        if self.gpus:
            parts.append(f"gpus {','.join(map(str, self.gpus))}")
        if self.gpu_share is not None:
            parts.append(f"{self.gpu_share:.2f} of GPU memory")
        if self.port is not None:
            parts.append(f"port {self.port}")
        return f"slot {self.index}" + (f" ({', '.join(parts)})" if parts else "")


WHOLE_MACHINE = Slot()  # one seed at a time, nothing pinned


class TrialConfig(Protocol):
    """What the engine reads of any track's validated config: the file, its text and its hash. The rest is
    its track's and its backends' own (they are typed over it: `Track[C]`, `Backend[C]`)."""

    @property
    def path(self) -> Path: ...

    @property
    def text(self) -> str: ...

    @property
    def config_hash(self) -> str: ...


C = TypeVar("C", bound=TrialConfig)  # a track's config type
C_contra = TypeVar("C_contra", bound=TrialConfig, contravariant=True)  # what a backend takes


class Backend(Protocol[C_contra]):
    """One per backend; instances are cheap, picklable and hold no state between trials."""

    name: str
    # Whether its training child scores the trial's rungs (the `rung` event, autorl/record/rungs.py): the
    # early abort needs them; prime-rl's processes have no such pause.
    scores_rungs: bool = False

    def check(self, cfg: C_contra) -> None:
        """Raise autorl.io.tomlcheck.ConfigError for anything this backend cannot honour (named by key)."""

    def resolve(self, cfg: C_contra, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE) -> dict[str, Any]:
        """The config the child runs with (printed by --dry-run; the runner writes it as resolved.json)."""
        ...

    def launch(self, cfg: C_contra, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE) -> Launch:
        """Write what the child needs into run_dir (resolved.json is there) and say how to start it."""
        ...

    def collect(self, cfg: C_contra, run_dir: Path) -> Collected:
        """After the child ended: pick the latest complete weights, count steps, attribute a crash."""
        ...

    def eval_command(
        self,
        cfg: C_contra,
        weights_dir: Path | None,
        out_path: Path,
        slot: Slot = WHOLE_MACHINE,
        split: str = "eval",
    ) -> Launch:
        """The fixed evaluation of weights_dir (None = the untrained base model) writing out_path (JSONL),
        on the seed's slot (its cores / GPUs). `split`: "eval" (every trial) or "test" (the sealed test set,
        `autorl confirm` only)."""
        ...

    def preflight(self) -> None:
        """Raise (with the reason) when this backend cannot run here at all; called before anything starts."""
        return None

    def availability_note(self) -> str | None:
        """A line for --dry-run when the backend could not run here (e.g. prime-rl not found)."""
        return None

    def summary_extras(
        self, cfg: C_contra, collected: list[Collected], eval_rows: list[dict[str, Any]]
    ) -> dict[str, str]:
        """Backend-specific `key: value` lines for the summary (also the ledger's `extras` column)."""
        return {}

    def plan_slots(self, cfg: C_contra, machine: Machine) -> list[Slot]:
        """The slots this machine has for one seed of `cfg`: how many seeds can run side by side."""
        return [Slot()]
