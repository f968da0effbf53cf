"""train.toml's [orchestrator]: batches, groups, advantages (the algorithm), sources and their samplers,
sampling (prime-rl's orchestrator config, pinned 559b447)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from autorl.io.tomlcheck import INHERITS, FieldProblem
from autorl.llm.schema.base import MAX_BATCH, MAX_COEF, MAX_GROUP, MAX_SEQ_LEN, MAX_STEPS, Strict


class SamplingConfig(Strict):
    """[orchestrator.train.sampling]: top_p is fixed at 1.0 by prime-rl."""

    temperature: float = Field(1.0, ge=0, le=2)
    """Sampling temperature of the training rollouts (top_p is fixed at 1.0); the trainer divides its logits
    by it too."""
    max_completion_tokens: int | None = Field(None, ge=1, le=MAX_SEQ_LEN)
    """Completion tokens per turn; must be < `seq_len`. "None" = until EOS or the context (`seq_len`) is
    full."""


class LengthPenalty(Strict):
    """Subtracted from each reward before the GRPO baseline, scaled by the group's mean reward."""

    type: Literal["linear"] = "linear"
    """Linear penalty: `R' = R - mean(R)·(w_out·o/max o + w_in·in/max in + w_turns·n/max n)`, maxima over the
    group, before the GRPO baseline `A = R' - mean(R')`."""
    num_output_tokens_weight: float = Field(0.25, ge=0, le=MAX_COEF)
    """`w_out`: weight of the completion-token term; 0 disables it."""
    num_input_tokens_weight: float = Field(0.1, ge=0, le=MAX_COEF)
    """`w_in`: weight of the input-token term (tokens conditioned on, not generated: prompt, tool output); 0
    disables it."""
    num_turns_weight: float = Field(0.1, ge=0, le=MAX_COEF)
    """`w_turns`: weight of the turns term; 0 disables it."""


class GRPOAlgo(Strict):
    type: Literal["grpo"] = "grpo"
    """GRPO: advantage = reward - group mean (no division by the std)."""
    length_penalty: LengthPenalty | None = None
    """Length penalty subtracted from each reward before the group baseline; absent = none."""


class MaxRLAlgo(Strict):
    """prime-rl only: advantage = (R - mean) / mean."""

    type: Literal["max_rl"] = "max_rl"
    """MaxRL: advantage = (R - mean) / mean over the group."""


class RAEAlgo(Strict):
    """prime-rl only: reward minus a per-agent EMA baseline."""

    type: Literal["rae"] = "rae"
    """RAE: advantage = reward minus a per-agent EMA baseline."""
    decay: float = Field(0.95, ge=0, lt=1)
    """Decay of the EMA baseline."""


class EchoRole(Strict):
    alpha: float = Field(0.1, gt=0, le=MAX_COEF)
    """Per-token cross-entropy weight of this role's env-provided tokens (ECHO's lambda)."""


class EchoRoles(Strict):
    system: EchoRole | None = None
    """Train on system-message tokens; absent = not trained."""
    user: EchoRole | None = None
    """Train on user-message (env feedback) tokens; absent = not trained."""
    assistant: EchoRole | None = None
    """Train on env-provided assistant-message tokens; absent = not trained."""
    tool: EchoRole | None = None
    """Train on tool-response tokens (the default, at alpha 0.1). Setting any role replaces the whole
    table."""


class EchoAlgo(Strict):
    """prime-rl only: GRPO plus weighted CE on env-provided tokens."""

    type: Literal["echo"] = "echo"
    """ECHO: GRPO on the sampled tokens plus weighted cross-entropy on env-provided tokens of later turns, by
    role."""
    length_penalty: LengthPenalty | None = None
    """As `grpo`'s length penalty."""
    roles: EchoRoles = EchoRoles(tool=EchoRole())
    """Which env-provided message roles train, each at its own `alpha`."""


class OPSDAlgo(Strict):
    """prime-rl only: on-policy self-distillation against demonstrations."""

    type: Literal["opsd"] = "opsd"
    """OPSD: on-policy self-distillation against the task's demonstrations."""
    demo_key: str = "demonstration"
    """Field of the task that holds the demonstration."""
    template: str = (
        "Here is an example of an expert response:\n<demonstration>\n{demonstration}\n</demonstration>"
    )
    """How the demonstration is shown to the teacher; `{demonstration}` is replaced by it."""


AlgoConfig = Annotated[GRPOAlgo | MaxRLAlgo | RAEAlgo | EchoAlgo | OPSDAlgo, Field(discriminator="type")]


class TasksetConfig(Strict):
    """The taskset's own fields (e.g. `split`, `min_digits`), free-form here: the taskset checks them."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)
    """The taskset: `autorl-arithmetic`, `autorl-reverse`, `autorl-gsm8k`, ... (docs/environments.md)."""


class EnvConfig(Strict):
    taskset: TasksetConfig
    """The taskset: `id` plus its own fields (e.g. `split`, `min_digits`), checked by the taskset, not
    here."""


class StandardSampler(Strict):
    type: Literal["standard"] = "standard"
    """Cycle through the taskset in order."""


class DifficultyPool(Strict):
    threshold: float = Field(ge=-MAX_COEF, le=MAX_COEF)
    """Inclusive maximum reward of a task in this pool."""
    weight: float = Field(ge=0, le=MAX_COEF)
    """Relative per-task sampling weight of this pool."""


class DifficultyPoolSampler(Strict):
    type: Literal["difficulty_pool"] = "difficulty_pool"
    """Sample tasks by difficulty pools (assigned by the reward a task got)."""
    pools: dict[str, DifficultyPool] = {
        "hard": DifficultyPool(threshold=0.25, weight=0.2),
        "normal": DifficultyPool(threshold=0.75, weight=1.0),
        "easy": DifficultyPool(threshold=1.0, weight=0.2),
    }
    """Named pools, ordered by their reward thresholds."""


class AdvantageRangeGate(Strict):
    """Rejects a whole group whose advantages fall in [reject_min, reject_max]."""

    type: Literal["advantage_range"] = "advantage_range"
    """Reject a whole group whose advantages fall in [`reject_min`, `reject_max`]."""
    reject_min: float = Field(0.0, ge=-MAX_COEF, le=MAX_COEF)
    """Lower end of the rejected advantage range; at most `reject_max`."""
    reject_max: float = Field(0.0, ge=-MAX_COEF, le=MAX_COEF)
    """Upper end of the rejected advantage range."""

    @model_validator(mode="after")
    def _ordered(self) -> AdvantageRangeGate:
        if self.reject_min > self.reject_max:
            raise FieldProblem(("reject_min", "must be <= reject_max"))
        return self


class CurriculumConfig(Strict):
    """prime-rl only: task sampler and admission gates."""

    sampler: Annotated[StandardSampler | DifficultyPoolSampler, Field(discriminator="type")] = (
        StandardSampler()
    )
    """Task selection, by `type`."""
    gates: dict[str, AdvantageRangeGate] = {}
    """Named admission gates: a group trains only when every gate admits it."""


class SourceConfig(Strict):
    """One [[orchestrator.train.source]]. group_size and sampling inherit the orchestrator's when unset."""

    name: str | None = None
    """Display name and metric prefix; default: the taskset id. Unique; `agg` is reserved."""
    ratio: float = Field(1.0, gt=0, le=1e6)
    """Sampling weight among sources: only the ratios matter (normalised to probabilities)."""
    group_size: int = Field(1, ge=1, le=MAX_GROUP, json_schema_extra={INHERITS: "orchestrator.group_size"})
    """This source's group size; default: `orchestrator.group_size`. Must divide `orchestrator.batch_size`."""
    sampling: SamplingConfig = Field(
        SamplingConfig(), json_schema_extra={INHERITS: "orchestrator.train.sampling"}
    )
    """This source's sampling: the fields it does not set are inherited from [orchestrator.train.sampling]."""
    env: EnvConfig
    """The environment the tasks and rewards come from."""
    curriculum: CurriculumConfig | None = None
    """Task sampler and admission gates; absent = cycle through the taskset, admit every group."""

    @property
    def resolved_name(self) -> str:
        return self.name or self.env.taskset.id


class OrchestratorTrainConfig(Strict):
    source: list[SourceConfig] = Field(default_factory=list)
    """The training sources, one [[orchestrator.train.source]] each (at least one); each group's task comes
    from a source drawn with probability ~ ratio."""
    sampling: SamplingConfig = SamplingConfig()
    """Sampling of every source that does not set its own."""
    filter_zero_advantages: bool = True
    """Tokens with advantage exactly 0 get no RL weight (groups whose completions all score the same
    contribute nothing)."""

    @model_validator(mode="after")
    def _sources(self) -> OrchestratorTrainConfig:
        problems = []
        names = [s.resolved_name for s in self.source]
        for i, name in enumerate(names):
            if names.index(name) != i:
                problems.append(
                    (f"source.{i}.name", f"'{name}' is used by another source; names must be unique")
                )
            if name == "agg":
                problems.append((f"source.{i}.name", "'agg' is reserved by prime-rl for aggregated metrics"))
        if problems:
            raise FieldProblem(*problems)
        # prime-rl semantics: a source's sampling inherits the group-level fields it does not set itself
        for src in self.source:
            merged = self.sampling.model_dump() | src.sampling.model_dump(exclude_unset=True)
            src.sampling = SamplingConfig(**merged)
        return self


class OrchestratorConfig(Strict):
    batch_size: int | None = Field(None, ge=1, le=MAX_BATCH)
    """Rollouts per trainer step; "None" = 128 unless `token_batch_size` is set (set at most one). Divisible
    by `group_size` and by every source's."""
    token_batch_size: int | None = Field(None, ge=1, le=64 * MAX_BATCH)
    """Fill each step by tokens instead of rollouts; exclusive with `batch_size`."""
    group_size: int = Field(1, ge=1, le=MAX_GROUP)
    """Completions per prompt (the GRPO group); sources inherit it."""
    max_off_policy_steps: int = Field(8, ge=0, le=MAX_STEPS)
    """Queued rollouts older than this many policy versions are dropped. Embedded: >= 1 trains on the previous
    step's rollouts (prime-rl's one-step pipeline lag), 0 strictly on-policy."""
    algo: AlgoConfig = GRPOAlgo()
    """How rewards become advantages, selected by `type` (`opd` and `sft` are refused: they need an external
    teacher)."""
    train: OrchestratorTrainConfig = Field(default_factory=OrchestratorTrainConfig)
    """What the training rollouts are sampled from, and how."""

    @model_validator(mode="after")
    def _batching(self) -> OrchestratorConfig:
        if self.batch_size is not None and self.token_batch_size is not None:
            raise FieldProblem(("token_batch_size", "set exactly one of batch_size or token_batch_size"))
        if self.batch_size is None and self.token_batch_size is None:
            self.batch_size = 128  # prime-rl's default
        problems = []
        if self.batch_size is not None and self.batch_size % self.group_size:
            problems.append(
                ("batch_size", f"({self.batch_size}) must be divisible by group_size ({self.group_size})")
            )
        for i, src in enumerate(self.train.source):
            if "group_size" not in src.model_fields_set:
                src.group_size = self.group_size  # prime-rl: sources inherit the orchestrator's group_size
            elif self.batch_size is not None and self.batch_size % src.group_size:
                problems.append(
                    (
                        f"train.source.{i}.group_size",
                        f"({src.group_size}) must divide orchestrator.batch_size ({self.batch_size})",
                    )
                )
        if problems:
            raise FieldProblem(*problems)
        return self
