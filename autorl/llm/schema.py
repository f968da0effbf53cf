"""train.toml's schema: the subset of prime-rl's `rl` config (pinned: prime-rl 559b447) that autorl accepts.

`TrainConfig` is the pydantic tree whose field names are exactly prime-rl's keys, with prime-rl's defaults;
`is_primerl_key` answers whether a dotted key exists in the pinned schema (primerl_keys.txt). Refusals and
loading live in autorl.llm.config. Cheap to import (no torch).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from autorl.tomlcheck import FieldProblem, _match, dotted, generic_key

# ====================================================================================================
# The pinned prime-rl schema (key list derived from prime-rl 559b447, see primerl_keys.txt)
# ====================================================================================================

PRIMERL_KEYS_FILE = Path(__file__).with_name("primerl_keys.txt")


@cache
def primerl_schema_keys() -> frozenset[str]:
    """Every dotted key of prime-rl's `rl` schema at the pinned commit (`*` = list index or free-form)."""
    keys = set()
    for line in PRIMERL_KEYS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.add(line)
    return frozenset(keys)


@cache
def _wildcard_keys() -> tuple[tuple[tuple[str, ...], bool], ...]:
    """(pattern, open) for keys with `*`. An open pattern is a free-form table (a `*` key that nothing
    extends, like `inference.vllm.*`): anything below it is a key too."""
    keys = primerl_schema_keys()
    extended = {k.rsplit(".", 1)[0] for k in keys if "." in k}  # keys that have a key below them
    return tuple((tuple(k.split(".")), k.endswith(".*") and k not in extended) for k in keys if "*" in k)


def is_primerl_key(key: str) -> bool:
    """Is `key` (dotted, list items as indices: `orchestrator.train.source.0.name`) in the pinned schema?

    A key under a free-form table (`inference.vllm.<any vLLM arg>`, `env.taskset.<taskset field>`) counts.
    """
    path = tuple(key.split("."))
    if dotted(path) in primerl_schema_keys() or dotted(generic_key(path)) in primerl_schema_keys():
        return True
    for pattern, is_open in _wildcard_keys():
        n = len(pattern)
        if is_open and len(path) >= n and _match(list(pattern), path[:n]):
            return True
        if _match(list(pattern), path):
            return True
    return False


# ====================================================================================================
# TrainConfig: the accepted subset, field names = prime-rl keys, defaults = prime-rl's defaults
# ====================================================================================================


class Strict(BaseModel):
    """Base of every table: unknown keys are errors; TOML types are exact (strict: `"64"` is not an
    integer, `true` is not 1; an integer is still a valid float); the string "None" means None (prime-rl's
    TOML null). Every number is finite (TOML's inf and nan are refused) and bounded: see MAX_STEPS etc."""

    model_config = ConfigDict(extra="forbid", validate_default=True, strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _prime_rl_conventions(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = {k: (None if v == "None" else v) for k, v in data.items()}
        # Like prime-rl: a union table without `type` takes the type of the field's default.
        for name, field in cls.model_fields.items():
            value, default = data.get(name), field.default
            if isinstance(value, dict) and "type" not in value and isinstance(default, BaseModel):
                if isinstance(getattr(default, "type", None), str):
                    data[name] = {**value, "type": default.type}
        return data


# Upper bounds a user could defend: far beyond any sensible run, low enough that a typo (an extra digit run,
# 1e300) is refused with its key before anything runs instead of crashing a trial or overflowing later.
MAX_STEPS = 10_000_000  # optimizer steps (max_steps, warm-up, decay)
MAX_SEQ_LEN = 1_048_576  # tokens in one sample
MAX_BATCH = 1_048_576  # rollouts (or tokens / 64) in one step
MAX_GROUP = 4096  # completions per prompt
MAX_COEF = 1e4  # loss scales, penalty weights, gradient-norm caps


# ---- trainer -----------------------------------------------------------------------------------------


class OptimConfig(Strict):
    """[trainer.optim]: AdamW (prime-rl's default optimizer; the only one autorl accepts)."""

    type: Literal["adamw"] = "adamw"
    lr: float = Field(1e-6, gt=0, le=1.0)  # AdamW: above 1 every step overshoots
    weight_decay: float = Field(0.01, ge=0, le=1.0)  # decoupled: lr * weight_decay <= 1 keeps weights finite
    max_norm: float | None = Field(1.0, gt=0, le=MAX_COEF)  # "None" disables gradient clipping
    betas1: float = Field(0.9, ge=0, lt=1)
    betas2: float = Field(0.999, ge=0, lt=1)


class ConstantScheduler(Strict):
    type: Literal["constant"] = "constant"


class LinearScheduler(Strict):
    type: Literal["linear"] = "linear"
    warmup_steps: int = Field(10, ge=0, le=MAX_STEPS)
    decay_steps: int = Field(10, ge=0, le=MAX_STEPS)  # linear decay to min_lr over the last decay_steps steps
    min_lr: float = Field(0.0, ge=0, le=1.0)


class CosineScheduler(Strict):
    type: Literal["cosine"] = "cosine"
    warmup_steps: int = Field(10, ge=0, le=MAX_STEPS)
    min_lr: float = Field(0.0, ge=0, le=1.0)


SchedulerConfig = Annotated[
    ConstantScheduler | LinearScheduler | CosineScheduler, Field(discriminator="type")
]


def check_scheduler(
    type_: str, warmup_steps: int, decay_steps: int, max_steps: int | None
) -> tuple[str, str] | None:
    """(key, why) when prime-rl would refuse this `[trainer.scheduler]` (its own config checks), else None.

    The schema checks train.toml with it; autorl.llm.embedded.scheduler checks what it builds with it too.
    """
    if type_ == "linear":
        if warmup_steps == 0 and decay_steps == 0:
            return (
                "trainer.scheduler.type",
                "linear needs warmup_steps > 0 or decay_steps > 0 (or use constant)",
            )
        if decay_steps > 0 and max_steps is None:
            return ("trainer.scheduler.decay_steps", "> 0 needs max_steps to be set (prime-rl)")
        if max_steps is not None and warmup_steps + decay_steps > max_steps:
            return (
                "trainer.scheduler.decay_steps",
                f"warmup_steps ({warmup_steps}) + decay_steps ({decay_steps}) "
                f"must not exceed max_steps ({max_steps})",
            )
    if type_ == "cosine":
        if max_steps is None:
            return ("trainer.scheduler.type", "cosine needs max_steps to be set (prime-rl)")
        if warmup_steps >= max_steps:
            return ("trainer.scheduler.warmup_steps", f"({warmup_steps}) must be < max_steps ({max_steps})")
    return None


class DefaultLoss(Strict):
    """prime-rl's default loss: sign-conditioned trust-region mask on probability gaps, squared-log KL."""

    type: Literal["default"] = "default"
    dppo_mask_low: float = Field(0.2, gt=0, le=1)
    dppo_mask_high: float = Field(0.2, gt=0, le=1)
    adv_tau: float = Field(1.0, gt=0, le=MAX_COEF)
    kl_tau: float = Field(1e-3, ge=0, le=MAX_COEF)


class IPOLoss(Strict):
    """Like `default`, but masks |δ| > ipo_threshold regardless of the advantage's sign."""

    type: Literal["ipo"] = "ipo"
    ipo_threshold: float = Field(0.1, gt=0, le=1)
    adv_tau: float = Field(1.0, gt=0, le=MAX_COEF)
    kl_tau: float = Field(1e-3, ge=0, le=MAX_COEF)


LossConfig = Annotated[DefaultLoss | IPOLoss, Field(discriminator="type")]


class CompileConfig(Strict):
    fullgraph: bool = False


class ActivationCheckpointConfig(Strict):
    mode: Literal["full", "selective"] = "full"
    freq: int = Field(1, ge=1, le=1024)
    targets: list[str] = ["norm"]


class ActivationOffloadingConfig(Strict):
    pin_memory: bool = True
    max_inflight_activations: int = Field(5, ge=1, le=1024)


class LoRAConfig(Strict):
    rank: int = Field(16, ge=1, le=65536)
    alpha: float = Field(32.0, ge=0, le=MAX_COEF)
    dropout: float = Field(0.0, ge=0, le=1)
    target_modules: list[str] = [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
        "experts",
        "fc1_latent_proj",
        "fc2_latent_proj",
    ]
    modules_to_save: list[str] = []


class TrainerModelConfig(Strict):
    """[trainer.model]: prime-rl trainer engineering knobs (prime-rl backend only)."""

    attn: Literal["flash_attention_2", "flash_attention_3", "flash_attention_4", "auto"] = "auto"
    compile: CompileConfig | None = CompileConfig()  # "None" = eager (faster start-up)
    ac: ActivationCheckpointConfig | None = ActivationCheckpointConfig()
    ac_offloading: ActivationOffloadingConfig | None = ActivationOffloadingConfig()
    fsdp_cpu_offload: bool = False
    optim_cpu_offload: bool = True
    impl: Literal["hf", "custom", "auto"] = "auto"
    optimization_dtype: Literal["bfloat16", "float32"] = "float32"
    reduce_dtype: Literal["bfloat16", "float32"] = "float32"
    lora: LoRAConfig | None = None

    @model_validator(mode="after")
    def _offload_exclusive(self) -> TrainerModelConfig:
        if self.fsdp_cpu_offload and self.optim_cpu_offload:
            raise FieldProblem(
                ("fsdp_cpu_offload", "cannot be combined with optim_cpu_offload (prime-rl rejects it)")
            )
        return self


class TrainerConfig(Strict):
    optim: OptimConfig = OptimConfig()
    scheduler: SchedulerConfig = ConstantScheduler()
    loss: LossConfig = DefaultLoss()
    model: TrainerModelConfig = TrainerModelConfig()

    @model_validator(mode="after")
    def _min_lr_below_lr(self) -> TrainerConfig:
        min_lr = getattr(self.scheduler, "min_lr", 0.0)
        if min_lr > self.optim.lr:
            raise FieldProblem(
                ("scheduler.min_lr", f"({min_lr}) must be <= trainer.optim.lr ({self.optim.lr})")
            )
        return self


# ---- orchestrator ------------------------------------------------------------------------------------


class SamplingConfig(Strict):
    """[orchestrator.train.sampling]: top_p is fixed at 1.0 by prime-rl."""

    temperature: float = Field(1.0, ge=0, le=2)
    max_completion_tokens: int | None = Field(None, ge=1, le=MAX_SEQ_LEN)  # None: until EOS or context full


class LengthPenalty(Strict):
    """Subtracted from each reward before the GRPO baseline, scaled by the group's mean reward."""

    type: Literal["linear"] = "linear"
    num_output_tokens_weight: float = Field(0.25, ge=0, le=MAX_COEF)
    num_input_tokens_weight: float = Field(0.1, ge=0, le=MAX_COEF)
    num_turns_weight: float = Field(0.1, ge=0, le=MAX_COEF)


class GRPOAlgo(Strict):
    type: Literal["grpo"] = "grpo"
    length_penalty: LengthPenalty | None = None


class MaxRLAlgo(Strict):
    """prime-rl only: advantage = (R - mean) / mean."""

    type: Literal["max_rl"] = "max_rl"


class RAEAlgo(Strict):
    """prime-rl only: reward minus a per-agent EMA baseline."""

    type: Literal["rae"] = "rae"
    decay: float = Field(0.95, ge=0, lt=1)


class EchoRole(Strict):
    alpha: float = Field(0.1, gt=0, le=MAX_COEF)


class EchoRoles(Strict):
    system: EchoRole | None = None
    user: EchoRole | None = None
    assistant: EchoRole | None = None
    tool: EchoRole | None = None


class EchoAlgo(Strict):
    """prime-rl only: GRPO plus weighted CE on env-provided tokens."""

    type: Literal["echo"] = "echo"
    length_penalty: LengthPenalty | None = None
    roles: EchoRoles = EchoRoles(tool=EchoRole())


class OPSDAlgo(Strict):
    """prime-rl only: on-policy self-distillation against demonstrations."""

    type: Literal["opsd"] = "opsd"
    demo_key: str = "demonstration"
    template: str = (
        "Here is an example of an expert response:\n<demonstration>\n{demonstration}\n</demonstration>"
    )


AlgoConfig = Annotated[GRPOAlgo | MaxRLAlgo | RAEAlgo | EchoAlgo | OPSDAlgo, Field(discriminator="type")]


class TasksetConfig(Strict):
    """[orchestrator.train.source.env.taskset]: `id` plus the taskset's own fields (free-form)."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)


class EnvConfig(Strict):
    taskset: TasksetConfig


class StandardSampler(Strict):
    type: Literal["standard"] = "standard"


class DifficultyPool(Strict):
    threshold: float = Field(ge=-MAX_COEF, le=MAX_COEF)
    weight: float = Field(ge=0, le=MAX_COEF)


class DifficultyPoolSampler(Strict):
    type: Literal["difficulty_pool"] = "difficulty_pool"
    pools: dict[str, DifficultyPool] = {
        "hard": DifficultyPool(threshold=0.25, weight=0.2),
        "normal": DifficultyPool(threshold=0.75, weight=1.0),
        "easy": DifficultyPool(threshold=1.0, weight=0.2),
    }


class AdvantageRangeGate(Strict):
    """Rejects a whole group whose advantages fall in [reject_min, reject_max]."""

    type: Literal["advantage_range"] = "advantage_range"
    reject_min: float = Field(0.0, ge=-MAX_COEF, le=MAX_COEF)
    reject_max: float = Field(0.0, ge=-MAX_COEF, le=MAX_COEF)

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
    gates: dict[str, AdvantageRangeGate] = {}


class SourceConfig(Strict):
    """One [[orchestrator.train.source]]. group_size and sampling inherit the orchestrator's when unset."""

    name: str | None = None  # defaults to the taskset id
    ratio: float = Field(1.0, gt=0, le=1e6)  # relative: only the ratios between sources matter
    group_size: int = Field(1, ge=1, le=MAX_GROUP)
    sampling: SamplingConfig = SamplingConfig()
    env: EnvConfig
    curriculum: CurriculumConfig | None = None

    @property
    def resolved_name(self) -> str:
        return self.name or self.env.taskset.id


class OrchestratorTrainConfig(Strict):
    source: list[SourceConfig] = Field(default_factory=list)
    sampling: SamplingConfig = SamplingConfig()
    filter_zero_advantages: bool = True

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
    batch_size: int | None = Field(None, ge=1, le=MAX_BATCH)  # rollouts per step; None: 128 unless tokens
    token_batch_size: int | None = Field(None, ge=1, le=64 * MAX_BATCH)  # prime-rl only: fill steps by tokens
    group_size: int = Field(1, ge=1, le=MAX_GROUP)
    max_off_policy_steps: int = Field(8, ge=0, le=MAX_STEPS)
    algo: AlgoConfig = GRPOAlgo()
    train: OrchestratorTrainConfig = Field(default_factory=OrchestratorTrainConfig)

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


class ModelConfig(Strict):
    name: str = Field("Qwen/Qwen3-0.6B", min_length=1)  # HF id or local directory


class TrainConfig(Strict):
    """train.toml. Field names are prime-rl's keys; defaults are prime-rl's (pinned 559b447)."""

    model: ModelConfig = ModelConfig()
    max_steps: int | None = Field(None, ge=1, le=MAX_STEPS)  # None: until the budget stops training
    seq_len: int = Field(2048, ge=16, le=MAX_SEQ_LEN)
    trainer: TrainerConfig = TrainerConfig()
    orchestrator: OrchestratorConfig = OrchestratorConfig()

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
