"""train.toml's [trainer]: optimizer, learning-rate schedule, loss, the model's engineering (prime-rl's
trainer config, pinned 559b447)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from autorl.io.tomlcheck import FieldProblem
from autorl.llm.schema.base import MAX_COEF, MAX_STEPS, Strict


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
    decoder layers (prime-rl backend only)."""
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
    """[trainer.model]: prime-rl trainer engineering knobs (prime-rl backend only, but `ac`)."""

    attn: Literal["flash_attention_2", "flash_attention_3", "flash_attention_4", "auto"] = "auto"
    """Attention kernel; `auto` = FA3 on H100/H200 (needs the flash-attn-3 extra)."""
    compile: CompileConfig | None = CompileConfig()
    """torch.compile the model; "None" = eager (faster start-up)."""
    ac: ActivationCheckpointConfig | None = ActivationCheckpointConfig()
    """Activation checkpointing (full, every layer, by default); "None" disables it. The embedded trainer
    checkpoints whole decoder layers (`mode = "full"`, every `freq`-th) where this table is set; unset, every
    layer of a model of 20M+ parameters and none of the tiny default model."""
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
