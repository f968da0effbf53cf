"""eval.toml's schema: the fixed evaluation's environments (`EvalSpec`, one `EnvSpec` per [[env]]).

Separate from autorl.llm.eval so that reading or explaining eval.toml imports no torch.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from autorl.llm import envs


class EnvSpec(BaseModel):
    """One [[env]] of eval.toml."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True)

    name: str | None = None
    """Label of this environment in eval.jsonl, per_env and the summary's `eval/<env>` line; default: the
    taskset id. Labels must be unique."""
    taskset: dict[str, Any]
    """`id` plus the taskset's own fields, the same table as [orchestrator.train.source.env.taskset] in
    train.toml. Its `split` must be one training never uses (`eval`; `test` is sealed: `autorl confirm`)."""
    num_examples: int = Field(gt=0, le=1_000_000)
    """Held-out examples: the first N of the taskset's fixed eval sequence, always the same ones."""
    samples_per_example: int = Field(default=1, gt=0, le=1024)
    """Completions per example (greedy sampling gives identical copies)."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature of the evaluation; 0 = greedy."""
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    """Nucleus-sampling mass (no top-k, whatever the model's generation_config.json says)."""
    max_tokens: int = Field(gt=0, le=1_048_576)
    """Completion budget per sample, in tokens."""
    seed: int = Field(default=0, ge=0, le=2**32 - 1)
    """Sampling seed, used when temperature > 0 (batch b is seeded with seed + b)."""

    @field_validator("taskset")
    @classmethod
    def _has_id(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("id"), str):
            raise ValueError('[env.taskset] needs an `id` (e.g. id = "autorl-arithmetic")')
        return value

    @property
    def label(self) -> str:
        return self.name or envs.normalize_id(self.taskset["id"])

    @property
    def taskset_fields(self) -> dict[str, Any]:
        """The [env.taskset] table without its id: the taskset's own fields."""
        return {k: v for k, v in self.taskset.items() if k != "id"}

    def load_env(self) -> envs.Env:
        return envs.load_env(self.taskset["id"], self.taskset_fields)


class EvalSpec(BaseModel):
    """eval.toml: the list of evaluation environments."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    env: list[EnvSpec] = Field(min_length=1)
    """One [[env]] table per evaluation environment; eval_score = the mean over them of each one's mean score
    (a composite over tasks, so a trial cannot win by overfitting one)."""

    @field_validator("env")
    @classmethod
    def _unique_labels(cls, value: list[EnvSpec]) -> list[EnvSpec]:
        labels = [e.label for e in value]
        if len(set(labels)) != len(labels):
            raise ValueError(f"[[env]] labels must be unique, got {labels} (set `name`)")
        return value
