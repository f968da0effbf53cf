"""train.toml's top level: the model, the step and sequence limits, and the trainer and orchestrator tables
(prime-rl's `rl` config, pinned 559b447), with the checks across tables."""

from __future__ import annotations

from pydantic import Field, model_validator

from autorl.io.tomlcheck import FieldProblem
from autorl.llm.schema.base import MAX_SEQ_LEN, MAX_STEPS, Strict
from autorl.llm.schema.orchestrator import (
    OrchestratorConfig,
)
from autorl.llm.schema.trainer import (
    TrainerConfig,
    check_scheduler,
)


class ModelConfig(Strict):
    name: str = Field("Qwen/Qwen3-0.6B", min_length=1)
    """HF id or local directory of the model. Harness-owned once prepared: changing it is refused until `uv
    run prepare.py` is re-run."""


class TrainConfig(Strict):
    """train.toml. Field names are prime-rl's keys; defaults are prime-rl's (pinned 559b447)."""

    model: ModelConfig = ModelConfig()
    """The policy model."""
    max_steps: int | None = Field(None, ge=1, le=MAX_STEPS)
    """Trainer (optimizer) steps; "None" = train until the wall-clock budget stops the run."""
    seq_len: int = Field(2048, ge=16, le=MAX_SEQ_LEN)
    """Tokens per sample (prompt + completion); longer samples are cut and the cut tokens leave the loss."""
    trainer: TrainerConfig = TrainerConfig()
    """The trainer: optimizer, schedule, loss, model engineering."""
    orchestrator: OrchestratorConfig = OrchestratorConfig()
    """The orchestrator: batches, groups, advantages, sources, sampling."""

    @model_validator(mode="after")
    def _cross_checks(self) -> TrainConfig:
        problems = []
        if not self.orchestrator.train.source:
            problems.append(
                (
                    "orchestrator.train.source",
                    "is missing: add at least one [[orchestrator.train.source]] table",
                )
            )
        group = self.orchestrator.train.sampling
        sampling = [("orchestrator.train.sampling", group)]
        sources = self.orchestrator.train.source
        sampling += [(f"orchestrator.train.source.{i}.sampling", s.sampling) for i, s in enumerate(sources)]
        for i, (where, s) in enumerate(sampling):
            if s.max_completion_tokens is not None and s.max_completion_tokens >= self.seq_len:
                if i > 0 and s.max_completion_tokens == group.max_completion_tokens:
                    continue  # inherited from the group level, reported there
                problems.append(
                    (
                        f"{where}.max_completion_tokens",
                        f"({s.max_completion_tokens}) must be < seq_len ({self.seq_len}): "
                        "the prompt has to fit in the sequence too",
                    )
                )
        sched = self.trainer.scheduler
        problem = check_scheduler(
            sched.type, getattr(sched, "warmup_steps", 0), getattr(sched, "decay_steps", 0), self.max_steps
        )
        if problem:
            problems.append(problem)
        if problems:
            raise FieldProblem(*problems)
        return self
