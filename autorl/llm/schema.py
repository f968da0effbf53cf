"""train.toml's schema: the subset of prime-rl's `rl` config (pinned: prime-rl 559b447) that autorl accepts.

`TrainConfig` is the pydantic tree whose field names are exactly prime-rl's keys, with prime-rl's defaults;
whether a dotted key exists in the pinned schema at all is autorl.llm.primerl_keys'. Refusals and loading
live in autorl.llm.config. Cheap to import (no torch).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from autorl.io.tomlcheck import FieldProblem

# ====================================================================================================
# TrainConfig: the accepted subset, field names = prime-rl keys, defaults = prime-rl's defaults
# ====================================================================================================


class Strict(BaseModel):
    """Base of every table: unknown keys are errors; TOML types are exact (strict: `"64"` is not an
    integer, `true` is not 1; an integer is still a valid float); the string "None" means None (prime-rl's
    TOML null). Every number is finite (TOML's inf and nan are refused) and bounded: see MAX_STEPS etc."""

    model_config = ConfigDict(
        extra="forbid",
        validate_default=True,
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,  # the docstring under a field is its description (docs/config.md)
    )

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
                if isinstance(kind := getattr(default, "type", None), str):
                    data[name] = {**value, "type": kind}
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
    """The optimizer: AdamW, prime-rl's default and the only one autorl accepts."""
    lr: float = Field(1e-6, gt=0, le=1.0)  # AdamW: above 1 every step overshoots
    """Peak learning rate (one AdamW step per trainer step; the scheduler scales it)."""
    weight_decay: float = Field(0.01, ge=0, le=1.0)  # decoupled: lr * weight_decay <= 1 keeps weights finite
    """Decoupled (AdamW) weight decay."""
    max_norm: float | None = Field(1.0, gt=0, le=MAX_COEF)
    """Gradient-norm clip; "None" disables clipping."""
    betas1: float = Field(0.9, ge=0, lt=1)
    """Adam β1 (first-moment decay)."""
    betas2: float = Field(0.999, ge=0, lt=1)
    """Adam β2 (second-moment decay)."""


class ConstantScheduler(Strict):
    type: Literal["constant"] = "constant"
    """Constant learning rate `trainer.optim.lr`."""


class LinearScheduler(Strict):
    type: Literal["linear"] = "linear"
    """Linear warm-up to `lr`, then linear decay to `min_lr` over the last `decay_steps` steps. Needs
    `warmup_steps > 0` or `decay_steps > 0`; `decay_steps > 0` needs `max_steps`, and `warmup_steps +
    decay_steps <= max_steps`."""
    warmup_steps: int = Field(10, ge=0, le=MAX_STEPS)
    """Trainer steps of linear warm-up to `lr`."""
    decay_steps: int = Field(10, ge=0, le=MAX_STEPS)
    """Trainer steps of linear decay to `min_lr` at the end of training."""
    min_lr: float = Field(0.0, ge=0, le=1.0)
    """Learning rate reached at the end of the decay; at most `trainer.optim.lr`."""


class CosineScheduler(Strict):
    type: Literal["cosine"] = "cosine"
    """Linear warm-up, then cosine decay to `min_lr` at `max_steps`. Needs `max_steps`, with `warmup_steps <
    max_steps`."""
    warmup_steps: int = Field(10, ge=0, le=MAX_STEPS)
    """Trainer steps of linear warm-up to `lr`; must be < `max_steps`."""
    min_lr: float = Field(0.0, ge=0, le=1.0)
    """Learning rate reached at `max_steps`; at most `trainer.optim.lr`."""


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
    """prime-rl's default loss, per token `-k·adv_tau·A·ρ + kl_tau·(logπ - logμ)²`, normalised by the RL-token
    count of the whole step batch; `k = 0` (the token leaves the policy-gradient term) outside the trust
    region set by `dppo_mask_low`/`dppo_mask_high`."""
    dppo_mask_low: float = Field(0.2, gt=0, le=1)
    """A token with `A <= 0` is masked when its probability fell by more than this vs the sampling policy (`π
    - μ < -dppo_mask_low`: a gap of probabilities, not a ratio)."""
    dppo_mask_high: float = Field(0.2, gt=0, le=1)
    """A token with `A > 0` is masked when its probability rose by more than this vs the sampling policy (`π -
    μ > dppo_mask_high`)."""
    adv_tau: float = Field(1.0, gt=0, le=MAX_COEF)
    """Weight of the policy-gradient (advantage) term."""
    kl_tau: float = Field(1e-3, ge=0, le=MAX_COEF)
    """Weight of the squared log-ratio term (trainer vs sampling policy)."""


class IPOLoss(Strict):
    """Like `default`, but masks |δ| > ipo_threshold regardless of the advantage's sign."""

    type: Literal["ipo"] = "ipo"
    """Like `default`, but masks a token when `|π - μ| > ipo_threshold`, whatever the sign of its
    advantage."""
    ipo_threshold: float = Field(0.1, gt=0, le=1)
    """Probability gap `|π - μ|` beyond which a token is masked."""
    adv_tau: float = Field(1.0, gt=0, le=MAX_COEF)
    """Weight of the policy-gradient (advantage) term."""
    kl_tau: float = Field(1e-3, ge=0, le=MAX_COEF)
    """Weight of the squared log-ratio term (trainer vs sampling policy)."""


LossConfig = Annotated[DefaultLoss | IPOLoss, Field(discriminator="type")]


class CompileConfig(Strict):
    fullgraph: bool = False
    """Compile transformer blocks with torch.compile's `fullgraph=True`."""


class ActivationCheckpointConfig(Strict):
    mode: Literal["full", "selective"] = "full"
    """`full` checkpoints whole transformer blocks; `selective` only the `targets` inside supported custom
    decoder layers."""
    freq: int = Field(1, ge=1, le=1024)
    """Checkpoint every N-th layer."""
    targets: list[str] = ["norm"]
    """Selective checkpoint targets (prime-rl's names: `norm`, `attn_proj`, `mlp`, `mla_up_proj`,
    `routed_experts`, `linear_attn`)."""


class ActivationOffloadingConfig(Strict):
    pin_memory: bool = True
    """Pin offloaded activations in CPU memory."""
    max_inflight_activations: int = Field(5, ge=1, le=1024)
    """Activations kept in flight while offloading: more smooth the overlap, at the cost of GPU memory."""


class LoRAConfig(Strict):
    rank: int = Field(16, ge=1, le=65536)
    """Rank of the low-rank update matrices."""
    alpha: float = Field(32.0, ge=0, le=MAX_COEF)
    """LoRA scaling parameter."""
    dropout: float = Field(0.0, ge=0, le=1)
    """LoRA dropout rate."""
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
    """Module names (match any component of the module path) or regex patterns to apply LoRA to; names the
    model lacks are ignored."""
    modules_to_save: list[str] = []
    """Module names or regex patterns kept fully trainable (not frozen), matched like `target_modules`."""


class TrainerModelConfig(Strict):
    """[trainer.model]: prime-rl trainer engineering knobs (prime-rl backend only)."""

    attn: Literal["flash_attention_2", "flash_attention_3", "flash_attention_4", "auto"] = "auto"
    """Attention kernel; `auto` = FA3 on H100/H200 (needs the flash-attn-3 extra)."""
    compile: CompileConfig | None = CompileConfig()
    """torch.compile the model; "None" = eager (faster start-up)."""
    ac: ActivationCheckpointConfig | None = ActivationCheckpointConfig()
    """Activation checkpointing (full, every layer, by default); "None" disables it."""
    ac_offloading: ActivationOffloadingConfig | None = ActivationOffloadingConfig()
    """Offload checkpointed activations to CPU; "None" disables it."""
    fsdp_cpu_offload: bool = False
    """FSDP CPU offloading of parameters, gradients and optimizer states; not together with
    `optim_cpu_offload`."""
    optim_cpu_offload: bool = True
    """Offload only the optimizer states to CPU, weights stay on the GPU."""
    impl: Literal["hf", "custom", "auto"] = "auto"
    """Model implementation; `auto` = prime-rl's `custom` where the model supports it, else `hf`."""
    optimization_dtype: Literal["bfloat16", "float32"] = "float32"
    """dtype the optimizer updates the weights in."""
    reduce_dtype: Literal["bfloat16", "float32"] = "float32"
    """dtype of gradient and parameter reductions."""
    lora: LoRAConfig | None = None
    """Train LoRA adapters instead of all weights; "None" (absent) = full fine-tuning."""

    @model_validator(mode="after")
    def _offload_exclusive(self) -> TrainerModelConfig:
        if self.fsdp_cpu_offload and self.optim_cpu_offload:
            raise FieldProblem(
                ("fsdp_cpu_offload", "cannot be combined with optim_cpu_offload (prime-rl rejects it)")
            )
        return self


class TrainerConfig(Strict):
    optim: OptimConfig = OptimConfig()
    """The optimizer."""
    scheduler: SchedulerConfig = ConstantScheduler()
    """Learning-rate schedule, selected by `type`; stepped once per trainer step."""
    loss: LossConfig = DefaultLoss()
    """The RL loss, selected by `type` (`custom` is refused: it imports and runs arbitrary code)."""
    model: TrainerModelConfig = TrainerModelConfig()
    """prime-rl trainer engineering: attention kernel, compilation, checkpointing, offloading, LoRA."""

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
    group_size: int = Field(1, ge=1, le=MAX_GROUP)
    """This source's group size; default: `orchestrator.group_size`. Must divide `orchestrator.batch_size`."""
    sampling: SamplingConfig = SamplingConfig()
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
