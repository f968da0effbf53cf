"""classic.toml: the PPO hyperparameters the agent edits on the classic track (CartPole-v1, BipedalWalker-v3).

Validated like train.toml (autorl.io.tomlcheck.load_toml): unknown keys are named with file:line and the
nearest valid key, values are range-checked, and harness-owned keys (seeds, the evaluation, the device) are
refused with the reason. Cheap to import: no torch, no gymnasium.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from autorl.io.tomlcheck import ConfigError, FieldProblem, config_hash, load_toml

ENV_IDS = ("CartPole-v1", "BipedalWalker-v3")

# Keys the harness owns. Changing a seed is never an experiment; the evaluation and its cadence define the
# score and time_to_solve_seconds, so they are fixed in autorl/classic/evaluate.py.
REFUSED: dict[str, str] = {
    "seed": "is harness-owned: every trial gets fresh seeds from the runner (use --seeds N for more of them)",
    "seeds": "is harness-owned: use `run.py --seeds N`",
    "torch_deterministic": "is harness-owned (the run is seeded by the runner)",
    "eval_episodes": "is harness-owned: the fixed evaluator runs 100 episodes with fixed seeds",
    "eval_every": "is harness-owned: a fixed in-training eval cadence keeps time_to_solve comparable",
    "eval_seeds": "is harness-owned: the evaluation seeds are fixed",
    "solved_threshold": "is harness-owned: CartPole-v1 is solved at 475, BipedalWalker-v3 at 300",
    "device": "is harness-owned: the classic track runs on CPU (small MLPs are fastest there)",
    "cuda": "is harness-owned: the classic track runs on CPU (small MLPs are fastest there)",
    "run_dir": "is harness-owned: the runner chooses the run directory",
    "output_dir": "is harness-owned: the runner chooses the run directory",
    "budget": "is harness-owned: use `run.py --budget SECONDS` (total_env_steps bounds training from inside)",
}


class ClassicConfig(BaseModel):
    """Every PPO hyperparameter, CleanRL names where one exists. A default serves a key classic.toml omits.

    Strict: TOML types are exact (`clip_vloss = 1` is not a boolean); an integer is still a valid float.
    Every number is finite (TOML's inf and nan are refused) and bounded."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, use_attribute_docstrings=True)

    # --- what to train and for how long --------------------------------------------------------------
    env_id: Literal["CartPole-v1", "BipedalWalker-v3"] = "CartPole-v1"
    """The gymnasium environment: `CartPole-v1` (solved at 475) or `BipedalWalker-v3` (solved at 300)."""
    total_env_steps: int = Field(200_000, ge=1_000, le=10_000_000_000)
    """Training ends here, or at the score's budget (50k env steps on CartPole) or `--budget`, whichever comes
    first; the linear lr schedule reaches 0 here."""
    torch_threads: int = Field(1, ge=1, le=64)
    """torch CPU threads; small MLPs are fastest single-threaded."""

    # --- rollout ---------------------------------------------------------------------------------------
    num_envs: int = Field(32, ge=1, le=4096)
    """Parallel environments (CartPole: numpy-vectorised, nearly free per env)."""
    num_steps: int = Field(64, ge=1, le=16_384)
    """Steps per env per rollout; batch = `num_envs * num_steps`."""

    # --- optimiser -------------------------------------------------------------------------------------
    learning_rate: float = Field(3e-3, gt=0.0, le=1.0)
    """Adam step size at the start of training."""
    lr_schedule: Literal["constant", "linear"] = "linear"
    """`linear`: anneal the learning rate to 0 at `total_env_steps`; `constant`: keep it."""
    adam_eps: float = Field(1e-5, gt=0.0, le=1.0)
    """Adam epsilon (CleanRL/SB3 PPO use 1e-5, not torch's 1e-8)."""
    max_grad_norm: float = Field(0.5, gt=0.0, le=1e4)
    """Global gradient-norm clip."""
    update_epochs: int = Field(4, ge=1, le=100)
    """Passes over each rollout."""
    num_minibatches: int = Field(4, ge=1, le=4096)
    """Minibatches per pass (minibatch = batch / num_minibatches); at most the batch."""

    # --- PPO objective ---------------------------------------------------------------------------------
    gamma: float = Field(0.99, gt=0.0, le=1.0)
    """Discount factor."""
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0)
    """GAE lambda (0 = one-step TD, 1 = Monte Carlo)."""
    clip_coef: float = Field(0.2, gt=0.0, le=10.0)
    """Surrogate clip range (also the value clip range when `clip_vloss`)."""
    clip_vloss: bool = True
    """Clip the value update around the old values."""
    vf_coef: float = Field(0.5, ge=0.0, le=100.0)
    """Value-loss weight."""
    ent_coef: float = Field(0.0, ge=0.0, le=1.0)
    """Entropy-bonus weight."""
    target_kl: float = Field(0.0, ge=0.0, le=10.0)
    """Stop an update's epochs once the approximate KL exceeds this; 0 = no early stop."""
    norm_adv: bool = True
    """Normalise advantages per minibatch."""

    # --- normalisation ---------------------------------------------------------------------------------
    norm_obs: bool = False
    """Running mean/std observation normalisation (the statistics are saved with the policy)."""
    norm_reward: bool = False
    """Scale rewards by the running std of the discounted return."""
    clip_obs: float = Field(10.0, gt=0.0, le=1e6)
    """Clip normalised observations to ±clip_obs."""
    clip_reward: float = Field(10.0, gt=0.0, le=1e6)
    """Clip scaled rewards to ±clip_reward."""

    # --- network ---------------------------------------------------------------------------------------
    hidden_width: int = Field(64, ge=1, le=4096)
    """Units per hidden layer (separate actor and critic MLPs)."""
    hidden_depth: int = Field(2, ge=1, le=8)
    """Hidden layers of each MLP."""
    activation: Literal["tanh", "relu", "elu", "gelu", "silu"] = "tanh"
    """Activation of the hidden layers."""
    layer_norm: bool = False
    """LayerNorm after each hidden linear layer."""
    hidden_gain: float = Field(2**0.5, ge=0.0, le=10.0)
    """Orthogonal-init gain of the hidden layers (sqrt 2 in the PPO recipe)."""
    actor_gain: float = Field(0.01, ge=0.0, le=10.0)
    """Orthogonal-init gain of the policy head (small: start near-uniform)."""
    critic_gain: float = Field(1.0, ge=0.0, le=10.0)
    """Orthogonal-init gain of the value head."""
    log_std_init: float = Field(0.0, ge=-10.0, le=5.0)
    """Initial log-std of the Gaussian policy (continuous actions only)."""

    @model_validator(mode="after")
    def _batch_fits(self) -> ClassicConfig:
        batch = self.num_envs * self.num_steps
        if self.num_minibatches > batch:
            raise FieldProblem(
                "num_minibatches",
                f"must be <= num_envs * num_steps = {batch} (one rollout is split into minibatches)",
            )
        if self.total_env_steps < batch:
            raise FieldProblem(
                "total_env_steps", f"must be >= num_envs * num_steps = {batch} (at least one update)"
            )
        return self

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_env_steps // self.batch_size


@dataclass
class LoadedClassicConfig:
    """Same shape as autorl.llm.config.LoadedConfig, so the runner treats both tracks alike."""

    path: Path
    text: str
    data: dict[str, Any]  # the raw TOML, exactly as written
    model: ClassicConfig  # validated, with defaults
    config_hash: str
    # The env steps the learning curve's score covers. None: the harness's (evaluate.SCORE_STEPS). Never read
    # from classic.toml: only `autorl fidelity`'s long runs set a longer horizon (Track.lengthen).
    score_env_steps: int | None = None
    # The trial's rungs, (fraction of the horizon, env steps) each: set by the runner for the seeds it scores
    # along the way (Track.with_rungs), never by classic.toml.
    rungs: tuple[tuple[float, int], ...] = ()


def _hint(key: str) -> str | None:
    if key in ("lr", "learning-rate"):
        return "did you mean `learning_rate`?"
    if key in ("total_timesteps", "n_timesteps", "max_env_steps"):
        return "did you mean `total_env_steps`?"
    return None


def load_classic_config(path: Path | str) -> LoadedClassicConfig:
    """Read and validate classic.toml; raises autorl.io.tomlcheck.ConfigError naming file:line and key."""
    path = Path(path)
    text, data, model = load_toml(path, ClassicConfig, REFUSED, hint=_hint)
    assert isinstance(model, ClassicConfig)
    return LoadedClassicConfig(path=path, text=text, data=data, model=model, config_hash=config_hash(data))


__all__ = ["ENV_IDS", "REFUSED", "ClassicConfig", "ConfigError", "LoadedClassicConfig", "load_classic_config"]
