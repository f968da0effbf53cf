"""Environments as the embedded backend and the fixed eval see them: examples in, a reward out.

Each environment is a verifiers v1 taskset package under ``environments/`` whose pure ``core`` module (no
verifiers import) generates or loads the problems and scores completions. prime-rl loads the same package
through verifiers (``env.taskset.id``); this adapter calls the same core in-process, so both backends and the
eval share one reward. ``fields`` are the taskset fields exactly as written under
``[orchestrator.train.source.env.taskset]`` (or in eval.toml), without ``id``; they mean the same thing here
and in the verifiers Taskset (``split`` picks the problems; unknown fields are an error).

    env = load_env("autorl-arithmetic", {"split": "train"})
    stream = env.train_examples(seed=0)          # endless, seeded random order
    ex = next(stream); env.score("#### 42", ex)  # -> 0.0 or 1.0

A core module offers four functions: ``settings_from_fields(dict) -> Settings`` (with ``.split``),
``stream(settings, seed) -> Iterator[Problem]``, ``first(settings, n) -> list[Problem]`` and
``score(completion, answer) -> float``; ``Problem`` has ``id``, ``prompt`` and ``answer``.
``settings_from_fields`` raises a ValueError whose ``field`` attribute names the bad (or unknown) field and
``message`` says why: autorl checks the fields of train.toml with it before anything runs. A core that
reads data from outside (a file, the hub) may offer ``data_problem(settings) -> str | None``: a trial is
refused before training when it says the data can't be read.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

# taskset id -> the core module of its package (the ids prime-rl uses in env.taskset.id)
ENVIRONMENTS: dict[str, str] = {
    "autorl-arithmetic": "autorl_arithmetic.core",
    "autorl-gsm8k": "autorl_gsm8k.core",
    "autorl-reverse": "autorl_reverse.core",
}


@dataclass(frozen=True)
class Example:
    id: str  # stable within its split: the same example always has the same id
    prompt: str  # plain text: the user message (chat template) or the raw model input (no template)
    answer: str  # gold answer, as the core scorer expects it


class Env:
    """One environment with its fields applied: the examples of ``split`` and the shared reward."""

    def __init__(self, name: str, core: ModuleType, fields: dict[str, Any]) -> None:
        self.name = name
        self.core = core
        self.fields = dict(fields)
        self.settings = core.settings_from_fields(self.fields)  # validates the fields
        self.split: str = self.settings.split

    def train_examples(self, seed: int) -> Iterator[Example]:
        """An endless stream of the split's examples in a seeded random order (training)."""
        return (Example(p.id, p.prompt, p.answer) for p in self.core.stream(self.settings, seed))

    def eval_examples(self, n: int) -> list[Example]:
        """The first ``n`` examples of the split in its fixed order: same fields + n -> same list."""
        return [Example(p.id, p.prompt, p.answer) for p in self.core.first(self.settings, n)]

    def data_problem(self) -> str | None:
        """Why the environment's data can't be read here now (a core's optional ``data_problem``), or None."""
        check = getattr(self.core, "data_problem", None)
        return check(self.settings) if check else None

    def score(self, completion: str, example: Example) -> float:
        """The environment's reward for one completion (the taskset's ``correct`` reward)."""
        return self.core.score(completion, example.answer)


def known_ids() -> list[str]:
    return sorted(ENVIRONMENTS)


def normalize_id(taskset_id: str) -> str:
    """verifiers' id rules: drop ``owner/`` and ``@version``; dashes and underscores are the same."""
    name = taskset_id.rsplit("/", 1)[-1].split("@", 1)[0].lower()
    return name.replace("_", "-")


def core_of(taskset_id: str) -> ModuleType | None:
    """The core module of a known taskset id; None for ids only prime-rl can load."""
    key = normalize_id(taskset_id)
    return importlib.import_module(ENVIRONMENTS[key]) if key in ENVIRONMENTS else None


def load_env(taskset_id: str, fields: dict[str, Any] | None = None) -> Env:
    """The environment of a taskset id with its fields; unknown ids and fields raise ValueError."""
    key = normalize_id(taskset_id)
    if key not in ENVIRONMENTS:
        raise ValueError(
            f"unknown taskset id {taskset_id!r} for the embedded backend and the eval; known ids: "
            f"{', '.join(known_ids())} (other tasksets run on the prime-rl backend only)"
        )
    fields = {k: v for k, v in (fields or {}).items() if k != "id"}
    return Env(key, importlib.import_module(ENVIRONMENTS[key]), fields)
