"""The LLM track: train.toml (a prime-rl `rl` config), the embedded or prime-rl backend, eval.toml."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorl.engine.backend import Backend
from autorl.engine.track import ConfigFile, Track
from autorl.io import paths
from autorl.io.jsonl import read_jsonl
from autorl.io.machine import Machine
from autorl.record.outcome import SeedOutcome
from autorl.record.stats import DEFAULT_SEED_SD

if TYPE_CHECKING:
    from autorl.llm.config import LoadedConfig

# A source's keys that take the orchestrator's value where train.toml leaves them unset (SourceConfig): its
# group_size (orchestrator.group_size) and its sampling (orchestrator.train.sampling)
INHERITED_SOURCE_KEY = re.compile(r"orchestrator\.train\.source\.[^.]+\.(group_size|sampling\..+)")


class LLMTrack:
    name = "llm"
    seed_sd_prior = DEFAULT_SEED_SD
    # The rule's A/A `improved` rate at 6 seeds, one at a time: 3.5% of 2000 pairs resampled from 60 real
    # seeds of train.toml at --budget 90 (docs/statistics.md, "Real seeds").
    false_keep_rate = 0.035
    budget_is_training_time = True
    budget_note = ""  # every seed trains the whole budget (unless its config stops it: max_steps)
    default_config = "train.toml"
    default_space = "space.toml"
    # 6 seeds, the fewest that give the keep rule >= 80% power for a +0.05 gain with the early stop
    # (scripts/simulate_decisions.py: 86%; 5 seeds give 80%).
    default_seeds = 6
    default_backend = "embedded"
    # Rungs at a quarter and half of the budget; the abort is off by default until real curves at the
    # longer research budgets calibrate its margin (docs/statistics.md, "Early abort").
    rungs: tuple[float, ...] = (0.25, 0.5)
    abort_margin: float | None = None

    def backend_name(self, requested: str, machine: Machine | None) -> str:
        if requested != "auto":
            return requested
        return machine.backend if machine else self.default_backend

    def load_config(self, path: Path, backend_name: str, prepared_model: str | None) -> LoadedConfig:
        from autorl.llm.config import load_train_config

        return load_train_config(path, backend=backend_name, prepared_model=prepared_model)

    def data_problems(self, cfg: LoadedConfig) -> list[str]:
        from autorl.llm.config import data_problems

        return data_problems(cfg)

    def make_backend(self, backend_name: str) -> Backend[LoadedConfig]:
        if backend_name == "prime-rl":
            from autorl.llm.primerl.backend import PrimeRLBackend

            return PrimeRLBackend()
        from autorl.llm.embedded.backend import EmbeddedBackend

        return EmbeddedBackend()

    def config_keys(self, path: Path) -> dict[str, Any]:
        from autorl.io.tomlcheck import flatten

        model = self.load_config(path, "", None).model
        data = model.model_dump(mode="json")
        sources = data["orchestrator"]["train"]["source"]
        for src, dumped in zip(model.orchestrator.train.source, sources, strict=True):
            dumped["name"] = src.resolved_name  # a source's name defaults to its taskset's id
        return flatten(data, named=True)

    def inherited_from(self, key: str) -> str | None:
        if m := INHERITED_SOURCE_KEY.fullmatch(key):
            return "orchestrator.group_size" if m[1] == "group_size" else f"orchestrator.train.{m[1]}"
        return None

    def config_files(self) -> tuple[ConfigFile, ...]:
        from autorl.llm.config import EMBEDDED_UNSUPPORTED, REFUSED, TrainConfig
        from autorl.llm.evalspec import EvalSpec

        train = ConfigFile("train.toml", TrainConfig, '"None"', REFUSED, EMBEDDED_UNSUPPORTED, "prime-rl")
        return train, ConfigFile("eval.toml", EvalSpec, "unset")

    def prepare_reason(self, machine: Machine | None) -> str | None:
        from autorl.llm.prepare import builtin_model_outdated

        if machine is None:
            return "no machine file yet: running prepare.py first"
        if builtin_model_outdated(machine):
            return "the builtin base model was built from an older recipe: running prepare.py again"
        return None

    def prepare(self, config_path: Path) -> Machine:
        from autorl.llm.prepare import prepare

        return prepare(config_path)

    def eval_hash(self, cfg: LoadedConfig) -> str:
        from autorl.llm.eval import eval_spec_hash, load_eval_spec

        return eval_spec_hash(load_eval_spec(paths.eval_spec_file()))

    def base_model_id(self, cfg: LoadedConfig) -> str:
        return cfg.model.model.name

    def score_range(self, cfg: LoadedConfig | None) -> tuple[float, float]:
        return 0.0, 1.0  # verifier rewards are 0/1

    def lengthen(self, cfg: LoadedConfig, factor: float, along_s: Sequence[float] = ()) -> LoadedConfig:
        """The budget is the wall clock: the long budget alone trains it longer. `along_s`: the trainer keeps
        its weights when its clock passes each (LoadedConfig.snapshot_s; the embedded backend), evaluated
        after the run into the seed's along.jsonl."""
        return dataclasses.replace(cfg, snapshot_s=tuple(along_s)) if along_s else cfg

    def with_rungs(self, cfg: LoadedConfig, budget_s: float) -> LoadedConfig:
        """The rungs at their training seconds (LoadedConfig.rungs; the embedded backend scores them)."""
        return dataclasses.replace(cfg, rungs=tuple((f, f * budget_s) for f in self.rungs))

    def rows_at(
        self, seed_dir: Path, rows: list[dict[str, Any]], fraction: float
    ) -> list[dict[str, Any]] | None:
        """The end's rows at 1; before it, the eval rows of the snapshot kept at that fraction of the run
        (along.jsonl, autorl/engine/seed.py evaluate_along); the end's rows too when the seed ended training
        on its own before that point (its config's own limit, `max_steps`: it had stopped there already);
        None when there is none (the prime-rl backend keeps no snapshots, or its eval failed)."""
        if fraction >= 1:
            return rows
        along = seed_dir / "along.jsonl"
        points = read_jsonl(along) if along.exists() else []
        here = [p for p in points if abs(p["fraction"] - fraction) < 1e-4]
        if not here and SeedOutcome.read(seed_dir).stop_reason == "exited":
            return rows  # never reached the point: it ended sooner, so its end is its state there
        point = next((p for p in here if "error" not in p), None)
        if point is None or not (seed_dir / point["eval_file"]).exists():
            return None
        return read_jsonl(seed_dir / point["eval_file"])


TRACK: Track[LoadedConfig] = LLMTrack()
