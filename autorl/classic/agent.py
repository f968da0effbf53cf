"""The classic track's networks: separate actor and critic MLPs with orthogonal init, and the running
observation statistics that normalise their inputs. PPO (autorl/classic/ppo.py) trains an `Agent`; the
evaluator (autorl/classic/evaluate.py) acts with one.

Discrete actions (CartPole-v1) use a Categorical policy, continuous ones (BipedalWalker-v3) a Gaussian with a
state-independent log-std. Sampling, log-probs and entropies are written out (no torch.distributions objects
in the hot loop).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch
from torch import nn
from torch.nn import functional as F

from autorl.classic.config import ClassicConfig

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "elu": F.elu,
    "gelu": F.gelu,
    "silu": F.silu,
}
LOG_2PI = math.log(2 * math.pi)


# ----------------------------------------------------------------------------------------------------
# Running statistics (observation and return normalisation, as in SB3's VecNormalize / CleanRL's wrappers)
# ----------------------------------------------------------------------------------------------------


class RunningMeanStd:
    """Mean and variance of a stream of batches (Chan et al. parallel update), float64."""

    def __init__(self, shape: tuple[int, ...] = ()):
        self.mean = torch.zeros(shape, dtype=torch.float64)
        self.var = torch.ones(shape, dtype=torch.float64)
        self.count = 1e-4

    def update(self, x: torch.Tensor) -> None:
        x = x.to(torch.float64)
        n = x.shape[0]
        batch_mean, batch_var = x.mean(0), x.var(0, unbiased=False)
        delta = batch_mean - self.mean
        total = self.count + n
        self.mean = self.mean + delta * (n / total)
        m2 = self.var * self.count + batch_var * n + delta.square() * (self.count * n / total)
        self.var = m2 / total
        self.count = total

    def state(self) -> dict[str, Any]:
        return {"mean": self.mean.clone(), "var": self.var.clone(), "count": float(self.count)}


class ObsNormaliser:
    """(obs - mean) / std, clipped; stats updated from every observation the policy sees while training."""

    def __init__(self, obs_dim: int, clip: float, enabled: bool):
        self.enabled, self.clip = enabled, clip
        self.rms = RunningMeanStd((obs_dim,))

    def __call__(self, obs: torch.Tensor, update: bool = False) -> torch.Tensor:
        if not self.enabled:
            return obs
        if update:
            self.rms.update(obs)
        std = torch.sqrt(self.rms.var + 1e-8)
        return ((obs - self.rms.mean) / std).clamp(-self.clip, self.clip).to(torch.float32)

    def state(self) -> dict[str, Any] | None:
        return {**self.rms.state(), "clip": self.clip} if self.enabled else None


def normalise_obs(obs: torch.Tensor, state: dict[str, Any] | None) -> torch.Tensor:
    """Apply saved ObsNormaliser statistics (frozen), as the evaluator does."""
    if state is None:
        return obs
    std = torch.sqrt(state["var"] + 1e-8)
    return ((obs - state["mean"]) / std).clamp(-state["clip"], state["clip"]).to(torch.float32)


# ----------------------------------------------------------------------------------------------------
# The agent
# ----------------------------------------------------------------------------------------------------


def linear(n_in: int, n_out: int, gain: float) -> nn.Linear:
    """Orthogonal weights with the given gain, zero bias (the PPO implementation-details recipe)."""
    layer = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class MLP(nn.Module):
    """hidden_depth x (Linear [-> LayerNorm] -> activation), then a linear head.

    forward() calls the layers functionally: on these tiny tensors the per-module call overhead of an
    nn.Sequential would be a large part of the cost of a step.
    """

    def __init__(self, n_in: int, n_out: int, arch: dict[str, Any], out_gain: float):
        super().__init__()
        width, depth = arch["hidden_width"], arch["hidden_depth"]
        self.hidden = nn.ModuleList(
            linear(n_in if i == 0 else width, width, arch["hidden_gain"]) for i in range(depth)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(depth)) if arch["layer_norm"] else None
        self.head = linear(width, n_out, out_gain)
        self.activation = ACTIVATIONS[arch["activation"]]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, module in enumerate(self.hidden):
            layer = cast(nn.Linear, module)
            x = F.linear(x, layer.weight, layer.bias)
            if self.norms is not None:
                norm = cast(nn.LayerNorm, self.norms[i])
                x = F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
            x = self.activation(x)
        return F.linear(x, self.head.weight, self.head.bias)

    @staticmethod
    def stacked(mlps: Sequence[MLP]) -> Callable[[torch.Tensor], torch.Tensor]:
        """The forward of several MLPs of one architecture without LayerNorm, all at once: x (B, n, in) ->
        (B, n, out), x[i] through mlps[i]. One batched matrix product per layer instead of B: on these tiny
        layers the calls, not the arithmetic, are the cost. The same numbers as each MLP's forward
        (tests/test_classic.py checks it on trained policies)."""
        assert all(m.norms is None for m in mlps), "LayerNorm has one weight per MLP: run them one by one"

        def stack(layers: Sequence[nn.Linear]) -> tuple[torch.Tensor, torch.Tensor]:
            weight = torch.stack([layer.weight.detach() for layer in layers]).transpose(1, 2)
            return weight, torch.stack([layer.bias.detach() for layer in layers]).unsqueeze(1)

        hidden = [stack([cast(nn.Linear, m.hidden[i]) for m in mlps]) for i in range(len(mlps[0].hidden))]
        head, activation = stack([m.head for m in mlps]), mlps[0].activation

        def forward(x: torch.Tensor) -> torch.Tensor:
            for weight, bias in hidden:
                x = activation(torch.baddbmm(bias, x, weight))
            return torch.baddbmm(head[1], x, head[0])

        return forward


def agent_arch(cfg: ClassicConfig, obs_dim: int, act_dim: int, discrete: bool) -> dict[str, Any]:
    """Everything needed to rebuild the network (saved with the weights, read by the evaluator)."""
    return {
        "obs_dim": obs_dim,
        "act_dim": act_dim,
        "discrete": discrete,
        "hidden_width": cfg.hidden_width,
        "hidden_depth": cfg.hidden_depth,
        "activation": cfg.activation,
        "layer_norm": cfg.layer_norm,
        "hidden_gain": cfg.hidden_gain,
        "actor_gain": cfg.actor_gain,
        "critic_gain": cfg.critic_gain,
        "log_std_init": cfg.log_std_init,
    }


class Agent(nn.Module):
    """Separate actor and critic MLPs. Discrete: actor outputs logits. Continuous: actor outputs the mean."""

    def __init__(self, arch: dict[str, Any]):
        super().__init__()
        self.arch = dict(arch)
        self.discrete = bool(arch["discrete"])
        self.actor = MLP(arch["obs_dim"], arch["act_dim"], arch, arch["actor_gain"])
        self.critic = MLP(arch["obs_dim"], 1, arch, arch["critic_gain"])
        if not self.discrete:
            self.log_std = nn.Parameter(torch.full((arch["act_dim"],), float(arch["log_std_init"])))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rollout: a sampled action, its log-probability and the state value."""
        out = self.actor(obs)
        if self.discrete:
            logp_all = torch.log_softmax(out, -1)
            gumbel = -torch.log(-torch.log(torch.rand_like(out)))  # Gumbel-max: 2x cheaper than multinomial
            action = (logp_all + gumbel).argmax(-1)
            logp = logp_all.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        else:
            noise = torch.randn_like(out)
            action = out + noise * self.log_std.exp()
            logp = (-0.5 * noise.square() - self.log_std - 0.5 * LOG_2PI).sum(-1)
        return action, logp, self.value(obs)

    def evaluate(
        self, obs: torch.Tensor, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Update: log-probability of the stored actions under the current policy, entropy, value."""
        out = self.actor(obs)
        if self.discrete:
            logp_all = torch.log_softmax(out, -1)
            logp = logp_all.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)
            entropy = -(logp_all.exp() * logp_all).sum(-1)
        else:
            z = (action - out) / self.log_std.exp()
            logp = (-0.5 * z.square() - self.log_std - 0.5 * LOG_2PI).sum(-1)
            entropy = (0.5 + 0.5 * LOG_2PI + self.log_std).sum().expand(obs.shape[0])
        return logp, entropy, self.value(obs)

    def act_deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """Evaluation: the most likely action (argmax logits / the Gaussian mean)."""
        out = self.actor(obs)
        return out.argmax(-1) if self.discrete else out
