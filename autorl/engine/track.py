"""A track is one kind of experiment: what it trains, how it is configured, evaluated and compared.

Two tracks share the harness (budget, seeds, statistics, ledger): `llm` (RL post-training of a language
model, autorl/llm/) and `classic` (PPO on gymnasium tasks, autorl/classic/). Everything that differs
between them is a member of `Track`; the runner, tune, status and report ask the track instead of
comparing names. Each track module is imported only when asked for, so a refusal stays fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from autorl.engine.backend import Backend, C
from autorl.io.machine import Machine

TRACK_MODULES = {"llm": "autorl.llm.track", "classic": "autorl.classic.track"}


@dataclass(frozen=True)
class ConfigFile:
    """One file of a track's config, as the key reference (docs/config.md, run.py --explain) documents it."""

    file: str  # the file name at the repo root
    model: type  # the pydantic model that validates it (each field's docstring is its meaning)
    none: str  # how the file writes a None value
    refused: Mapping[str, str] = field(default_factory=dict)  # the loader's refusals: pattern -> why
    # Keys (patterns, `a.b` or `a.b=variant`) that only `only_backend` takes; the others take every key.
    only_keys: tuple[str, ...] = ()
    only_backend: str = ""


class Track(Protocol[C]):
    """One track, typed over its config (`C`: what `load_config` returns and its backends take)."""

    name: str  # the `track` column of the ledger and run.py's --track
    default_config: str  # file name at the repo root
    default_space: str  # `autorl tune`'s search space when --space is not given (a path in the repo)
    default_seeds: int  # seeds of a trial when --seeds is not given
    default_backend: str  # the backend when the machine file names none (llm: auto -> the prepared one)

    def backend_name(self, requested: str, machine: Machine | None) -> str:
        """The backend a trial runs on: `requested` unless it is `auto`."""
        ...

    def load_config(self, path: Path, backend_name: str, prepared_model: str | None) -> C:
        """Validate the config file into typed objects (raises autorl.io.tomlcheck.ConfigError)."""
        ...

    def data_problems(self, cfg: C) -> list[str]:
        """Why the config's training data can't be read on this machine now, one line each (refused before
        anything runs: a trial never trains and then crashes on missing data)."""
        ...

    def make_backend(self, backend_name: str) -> Backend[C]: ...

    def prepare_reason(self, machine: Machine | None) -> str | None:
        """Why the machine must be prepared before this trial (None: it need not)."""
        ...

    def prepare(self, config_path: Path) -> Machine:
        """Prepare the machine (raises autorl.llm.prepare.PrepareError)."""
        ...

    def eval_hash(self, cfg: C) -> str:
        """Hash of the fixed evaluation: trials are compared only under the same one."""
        ...

    def base_model_id(self, cfg: C) -> str:
        """What the untrained starting point is (the base eval's cache key)."""
        ...

    # The prior single-seed sd of eval_score, before the ledger has measured one. A constant, not scaled by
    # the reference's score: a reference that scored low by chance would otherwise get a smaller prior just
    # when the candidate's regression to the mean looks like a gain.
    seed_sd_prior: float

    # What the budget bounds, when it is not simply the training time every seed spends (`autorl status`
    # says it next to the budget); "" where it is.
    budget_note: str
    # Whether every seed trains the whole budget unless its config ends training sooner (llm: a wall-clock
    # budget, `max_steps`); a seed that ends sooner then says the config has its own limit (the trial's
    # `health/stops_itself`). False where seeds end at a horizon by design (classic).
    budget_is_training_time: bool

    # How often the verdict reads `improved` for a candidate no better than its reference, at the track's
    # default seeds with both early stops, measured on real seeds (docs/statistics.md, "Real seeds"):
    # `autorl status` multiplies it by the comparisons made to say how many keeps chance alone explains.
    false_keep_rate: float

    # Where every seed scores itself while it trains, as fractions of its run (autorl/record/rungs.py), and
    # the early abort's margin there in spreads of one seed (None: the abort is off by default on this track);
    # both chosen from real curves (docs/statistics.md, "Early abort").
    rungs: tuple[float, ...]
    abort_margin: float | None

    def with_rungs(self, cfg: C, budget_s: float) -> C:
        """`cfg` as trained with its seeds scored at `rungs` along the run (llm: training seconds of the
        budget; classic: env steps of the score's horizon)."""
        ...

    def score_range(self, cfg: C | None) -> tuple[float, float]:
        """The lowest and highest eval_score possible (the interval is clipped to it; a reference whose
        interval touches the top leaves no room to improve); None: the track's default config's."""
        ...

    def lengthen(self, cfg: C, factor: float, along_s: Sequence[float] = ()) -> C:
        """`cfg` as trained `factor` times longer than a trial trains it (`autorl fidelity`, a long confirm):
        where the budget is the wall clock (llm), the config itself; where the score covers a fixed number of
        env steps (classic), the config with a score horizon `factor` times as long. `along_s`: training
        seconds at which the run is also scored (llm: snapshots of the weights; classic: its curve already
        scores every grid point)."""
        ...

    def config_files(self) -> tuple[ConfigFile, ...]:
        """The files of this track's config, for the key reference (the schemas are imported now)."""
        ...

    def config_keys(self, path: Path) -> dict[str, Any]:
        """A config file as dotted keys, read by this commit's schema: every default and inherited value
        filled in (as they are now), a list's entries by name (llm: a training source by its name,
        `source.reverse.sampling...`). Raises ConfigError where the schema refuses it (a config an older
        commit ran)."""
        ...

    def inherited_from(self, key: str) -> str | None:
        """The key whose value `key` (of `config_keys`) takes where the file leaves it unset (llm: a source's
        sampling and group_size, the orchestrator's); None for a key that inherits nothing."""
        ...

    def rows_at(
        self, seed_dir: Path, rows: list[dict[str, Any]], fraction: float
    ) -> list[dict[str, Any]] | None:
        """A lengthened seed's score rows (`rows`, from its directory `seed_dir`) as they stood `fraction`
        (0..1] of the way through its run: the score a shorter run would have had. None where the track did
        not record it."""
        ...


def get_track(name: str) -> Track[Any]:
    """The track `name` (its module imported now: a refusal stays fast), whatever its config type."""
    if name not in TRACK_MODULES:
        raise ValueError(f"unknown track {name!r} (known: {', '.join(TRACK_MODULES)})")
    return importlib.import_module(TRACK_MODULES[name]).TRACK


def training_budget(track: str, budget: float | None) -> float | None:
    """The seconds every seed of a `track` trial at `budget` trains unless its config stops it (None where
    seeds end at a horizon by design, Track.budget_is_training_time, or the track is unknown)."""
    known = track in TRACK_MODULES and get_track(track).budget_is_training_time
    return budget if known else None


def track_names() -> list[str]:
    return list(TRACK_MODULES)
