"""PPO for the classic track (CleanRL-style): every hyperparameter comes from ClassicConfig; the networks are
autorl/classic/agent.py's. GAE; clipped surrogate; (clipped) value loss; entropy bonus; target-KL early
stop; linear or constant lr; running observation and reward normalisation; per-minibatch advantage
normalisation.

Speed: CartPole uses gymnasium's numpy-vectorised env (one numpy op per step for all envs), so the rollout
costs a few tensor ops per *vector* step and nothing per env step.

Autoreset: gymnasium >= 1.0 vector envs reset a finished env on the *next* step ("next-step" autoreset).
So the observation returned on the step an episode ends is the true final observation (its value bootstraps a
time-limit truncation), and the following transition (final obs -> reset obs, action ignored, reward 0) is
not a real one: it is masked out of GAE and of the loss.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from torch import nn

from autorl.classic.agent import MLP, Agent, ObsNormaliser, RunningMeanStd, agent_arch, normalise_obs
from autorl.classic.config import ClassicConfig


def make_vec_env(env_id: str, num_envs: int) -> gym.vector.VectorEnv:
    """CartPole: gymnasium's numpy-vectorised env (~8x SyncVectorEnv); others: the standard sync one."""
    if env_id == "CartPole-v1":
        envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point")
    else:
        envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync")
    mode = envs.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    assert mode == AutoresetMode.NEXT_STEP, f"{env_id}: expected next-step autoreset, got {mode}"
    return envs


# ----------------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------------


@dataclass
class Update:
    """What one PPO update (rollout + optimisation) reports."""

    update: int  # 1-based
    env_steps: int  # total env steps so far (num_envs per vector step)
    episodic_return: float | None  # mean raw return of the episodes that ended in this rollout
    episodes: int
    loss: float
    pg_loss: float
    v_loss: float
    entropy: float
    approx_kl: float
    clipfrac: float
    explained_var: float
    lr: float
    epochs: int  # epochs run (fewer when target_kl stopped early)
    rollout_s: float
    update_s: float


@dataclass
class _EnvState:
    """What carries over from one rollout to the next: the envs' last observation and episode state."""

    next_obs: torch.Tensor
    prev_done: np.ndarray  # the last vector step ended these envs' episodes (the next one is an autoreset)
    ep_return: np.ndarray  # raw return of the running episode of each env
    disc_return: np.ndarray  # discounted return, for reward scaling
    env_steps: int = 0
    next_value: np.ndarray | None = None  # V(next_obs) after the last rollout, GAE's bootstrap

    @classmethod
    def start(cls, envs: gym.vector.VectorEnv, seed: int, num_envs: int) -> _EnvState:
        obs = torch.from_numpy(np.asarray(envs.reset(seed=seed)[0], dtype=np.float32))
        return cls(obs, np.zeros(num_envs, dtype=bool), np.zeros(num_envs), np.zeros(num_envs))


@dataclass
class _Batch:
    """One rollout's real transitions, flattened: what the optimisation epochs sample minibatches from."""

    obs: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    values: torch.Tensor

    @property
    def size(self) -> int:
        return self.returns.numel()

    def explained_var(self) -> float:
        var_y = self.returns.var().item() if self.size > 1 else 0.0
        return float("nan") if var_y == 0 else 1.0 - (self.returns - self.values).var().item() / var_y


@dataclass
class _Losses:
    """The last minibatch's losses, the clip fractions of all, the epochs run (an Update's figures)."""

    loss: torch.Tensor = field(default_factory=lambda: torch.zeros(()))
    pg_loss: torch.Tensor = field(default_factory=lambda: torch.zeros(()))
    v_loss: torch.Tensor = field(default_factory=lambda: torch.zeros(()))
    entropy: torch.Tensor = field(default_factory=lambda: torch.zeros(()))
    approx_kl: torch.Tensor = field(default_factory=lambda: torch.zeros(()))
    clipfracs: list[torch.Tensor] = field(default_factory=list)
    epochs: int = 0

    def report(self) -> dict[str, Any]:
        return {
            "loss": self.loss.item(),
            "pg_loss": self.pg_loss.item(),
            "v_loss": self.v_loss.item(),
            "entropy": self.entropy.item(),
            "approx_kl": self.approx_kl.item(),
            "clipfrac": torch.stack(self.clipfracs).mean().item() if self.clipfracs else 0.0,
            "epochs": self.epochs,
        }


class PPO:
    """Holds the envs, agent, optimiser and rollout buffers; `run()` yields after every update."""

    def __init__(self, cfg: ClassicConfig, seed: int):
        self.cfg, self.seed = cfg, seed
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.envs = make_vec_env(cfg.env_id, cfg.num_envs)
        space = self.envs.single_action_space
        self.discrete = isinstance(space, gym.spaces.Discrete)
        obs_dim = int(np.prod(self.envs.single_observation_space.shape or ()))
        if isinstance(space, gym.spaces.Discrete):
            act_dim, self.act_low, self.act_high = int(space.n), None, None
        else:  # a Box: actions are sampled unbounded and clipped to it only when sent to the env
            box = cast(gym.spaces.Box, space)
            act_dim = int(np.prod(box.shape))
            self.act_low, self.act_high = box.low.astype(np.float32), box.high.astype(np.float32)
        self.agent = Agent(agent_arch(cfg, obs_dim, act_dim, self.discrete))
        self.params = list(self.agent.parameters())
        # fused: one kernel for all parameters (CPU fused Adam is ~1.5x faster on these tiny tensors)
        self.optimizer = torch.optim.Adam(self.params, lr=cfg.learning_rate, eps=cfg.adam_eps, fused=True)
        self.obs_norm = ObsNormaliser(obs_dim, cfg.clip_obs, cfg.norm_obs)
        self.return_rms = RunningMeanStd(())  # of the discounted return, for reward scaling
        # Rollout buffers, (num_steps, num_envs, ...), allocated once. What the env returns stays in numpy
        # (GAE runs in numpy: a numpy op on a few dozen floats costs a fraction of a torch op).
        T, N = cfg.num_steps, cfg.num_envs
        self.obs = torch.zeros((T, N, obs_dim))
        self.actions = torch.zeros((T, N) if self.discrete else (T, N, act_dim))
        self.logprobs = torch.zeros((T, N))
        self.values = torch.zeros((T, N))
        self.rewards = np.zeros((T, N), dtype=np.float32)
        self.terminated = np.zeros((T, N), dtype=np.float32)
        self.dones = np.zeros((T, N), dtype=np.float32)  # terminated or truncated
        self.valid = np.zeros((T, N), dtype=bool)  # False for the autoreset transition

    def policy_state(self, update: int, env_steps: int) -> dict[str, Any]:
        """What the evaluator needs: architecture, weights, frozen observation statistics."""
        return {
            "format": "autorl-classic-ppo/1",
            "env_id": self.cfg.env_id,
            "arch": self.agent.arch,
            "state_dict": {k: v.detach().clone() for k, v in self.agent.state_dict().items()},
            "obs_norm": self.obs_norm.state(),
            "update": update,
            "env_steps": env_steps,
        }

    def act_fn(self) -> Callable[[np.ndarray], np.ndarray]:
        """Deterministic policy on raw observations with the *current* (frozen) statistics."""
        return make_act_fn(self.agent, self.obs_norm.state(), self.discrete, self.act_low, self.act_high)

    def snapshot(self) -> Snapshot:
        """The deterministic policy as it is now, kept while training goes on (an in-training evaluation)."""
        return Snapshot(copy.deepcopy(self.agent), self.obs_norm.state())

    def blocks_act_fn(self, snapshots: Sequence[Snapshot]) -> Callable[[np.ndarray], np.ndarray]:
        """The observations of len(snapshots) equal blocks of envs -> their actions, block i by snapshot i:
        what each snapshot's own act function gives for its block. A discrete policy without LayerNorm runs
        all snapshots in one batched forward (MLP.stacked); others run one snapshot per block."""
        b = len(snapshots)
        if b == 1 or not self.discrete or self.cfg.layer_norm:
            low, high = self.act_low, self.act_high
            acts = [make_act_fn(x.agent, x.obs_norm, self.discrete, low, high) for x in snapshots]
            if b == 1:
                return acts[0]
            return lambda obs: np.concatenate([act(x) for act, x in zip(acts, np.split(obs, b), strict=True)])
        forward = MLP.stacked([s.agent.actor for s in snapshots])
        norm = _stacked_norm([s.obs_norm for s in snapshots])

        def act(obs: np.ndarray) -> np.ndarray:
            with torch.inference_mode():
                x = torch.from_numpy(np.asarray(obs, dtype=np.float32)).reshape(b, -1, obs.shape[-1])
                return forward(normalise_obs(x, norm)).argmax(-1).reshape(-1).numpy()

        return act

    def run(self, stop: Callable[[], bool] = lambda: False) -> Iterator[Update]:
        """Rollout, GAE, optimisation, num_updates times; yields after each update. `stop()` is asked
        between vector steps: a stop request ends the run with the weights of the last complete update."""
        cfg = self.cfg
        state = _EnvState.start(self.envs, self.seed, cfg.num_envs)
        for update in range(1, cfg.num_updates + 1):
            lr = self._set_lr(update)
            t0 = time.perf_counter()
            finished = self._rollout(state, stop)
            if finished is None:
                return
            assert state.next_value is not None  # a rollout that finished sets it
            batch = self._batch(self._advantages(state.next_value))
            t1 = time.perf_counter()
            losses = self._optimise(batch)
            t2 = time.perf_counter()
            returns_done = np.concatenate(finished) if finished else np.zeros(0)
            yield Update(
                update=update,
                env_steps=state.env_steps,
                episodic_return=float(returns_done.mean()) if returns_done.size else None,
                episodes=int(returns_done.size),
                **losses.report(),
                explained_var=batch.explained_var(),
                lr=lr,
                rollout_s=t1 - t0,
                update_s=t2 - t1,
            )

    def _set_lr(self, update: int) -> float:
        """This update's learning rate (linear: annealed to 0 over num_updates), set on the optimiser."""
        cfg = self.cfg
        lr = cfg.learning_rate
        if cfg.lr_schedule == "linear":
            lr *= 1.0 - (update - 1) / cfg.num_updates
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        return lr

    def _rollout(self, state: _EnvState, stop: Callable[[], bool]) -> list[np.ndarray] | None:
        """num_steps vector steps into the buffers, no per-env Python; the raw returns of the episodes
        that ended (one array per vector step where some did). None when `stop()` said so."""
        agent, envs = self.agent, self.envs
        finished: list[np.ndarray] = []
        with torch.inference_mode():
            for t in range(self.cfg.num_steps):
                if stop():
                    return None  # weights are those of the last complete update
                x = self.obs_norm(state.next_obs, update=True)
                self.obs[t] = x
                self.valid[t] = ~state.prev_done
                action, logp, value = agent.sample(x)
                self.actions[t] = action
                self.logprobs[t] = logp
                self.values[t] = value
                if self.discrete:
                    env_action = action.numpy()
                else:
                    env_action = np.clip(action.numpy(), self.act_low, self.act_high)
                obs, reward, term, trunc, _ = envs.step(env_action)
                reward = np.asarray(reward, dtype=np.float64)
                done = np.logical_or(term, trunc)

                state.ep_return += reward
                if done.any():
                    finished.append(state.ep_return[done].copy())
                    state.ep_return[done] = 0.0
                self.rewards[t] = self._scaled_reward(state, reward, done)
                self.terminated[t] = term
                self.dones[t] = done
                state.prev_done = done
                state.next_obs = torch.from_numpy(np.asarray(obs, dtype=np.float32))
            state.env_steps += self.cfg.num_steps * self.cfg.num_envs
            state.next_value = agent.value(self.obs_norm(state.next_obs)).numpy()
        return finished

    def _scaled_reward(self, state: _EnvState, reward: np.ndarray, done: np.ndarray) -> np.ndarray:
        """norm_reward: the reward over the std of the discounted return (not centred), clipped."""
        cfg = self.cfg
        if not cfg.norm_reward:
            return reward
        state.disc_return = state.disc_return * cfg.gamma + reward
        self.return_rms.update(torch.from_numpy(state.disc_return[~state.prev_done]))
        state.disc_return[done] = 0.0
        return np.clip(
            reward / math.sqrt(self.return_rms.var.item() + 1e-8), -cfg.clip_reward, cfg.clip_reward
        )

    def _advantages(self, next_value: np.ndarray) -> np.ndarray:
        """GAE(lambda) over the rollout, bootstrapping truncated episodes from the final observation."""
        cfg = self.cfg
        T, N = cfg.num_steps, cfg.num_envs
        values = self.values.numpy()
        advantages = np.zeros((T, N), dtype=np.float32)
        last = np.zeros(N, dtype=np.float32)
        for t in reversed(range(T)):
            v_next = next_value if t == T - 1 else values[t + 1]
            delta = self.rewards[t] + cfg.gamma * v_next * (1.0 - self.terminated[t]) - values[t]
            last = delta + cfg.gamma * cfg.gae_lambda * (1.0 - self.dones[t]) * last
            advantages[t] = last
        return advantages

    def _batch(self, advantages: np.ndarray) -> _Batch:
        """The real transitions of the rollout (autoreset ones left out), flattened."""
        returns = advantages + self.values.numpy()
        idx = torch.from_numpy(np.flatnonzero(self.valid))
        return _Batch(
            obs=self.obs.flatten(0, 1)[idx],
            actions=self.actions.flatten(0, 1)[idx],
            logprobs=self.logprobs.flatten()[idx],
            advantages=torch.from_numpy(advantages).flatten()[idx],
            returns=torch.from_numpy(returns).flatten()[idx],
            values=self.values.flatten()[idx],
        )

    def _optimise(self, b: _Batch) -> _Losses:
        """The clipped surrogate for update_epochs over minibatches; stops early past target_kl."""
        cfg = self.cfg
        B = b.size
        mb_size = max(1, math.ceil(B / cfg.num_minibatches))
        losses = _Losses()
        for _epoch in range(cfg.update_epochs):
            losses.epochs += 1
            perm = torch.randperm(B)
            for start in range(0, B, mb_size):
                self._minibatch_step(b, perm[start : start + mb_size], losses)
            if cfg.target_kl > 0 and losses.approx_kl.item() > cfg.target_kl:
                break  # the policy moved far enough from the one that collected the data
        return losses

    def _minibatch_step(self, b: _Batch, mb: torch.Tensor, losses: _Losses) -> None:
        """One gradient step on the minibatch `mb` (indices into the batch); its figures into `losses`."""
        cfg = self.cfg
        new_logp, ent, new_value = self.agent.evaluate(b.obs[mb], b.actions[mb])
        logratio = new_logp - b.logprobs[mb]
        ratio = logratio.exp()
        with torch.no_grad():
            losses.approx_kl = ((ratio - 1) - logratio).mean()  # the low-variance k3 estimator
            losses.clipfracs.append(((ratio - 1.0).abs() > cfg.clip_coef).float().mean())

        adv = b.advantages[mb]
        if cfg.norm_adv and adv.numel() > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        losses.pg_loss = torch.max(
            -adv * ratio, -adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)
        ).mean()
        losses.v_loss = self._value_loss(new_value, b.values[mb], b.returns[mb])
        losses.entropy = ent.mean()
        losses.loss = losses.pg_loss - cfg.ent_coef * losses.entropy + cfg.vf_coef * losses.v_loss
        self.optimizer.zero_grad(set_to_none=True)
        losses.loss.backward()
        nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm, foreach=True)
        self.optimizer.step()

    def _value_loss(
        self, new_value: torch.Tensor, old_value: torch.Tensor, returns: torch.Tensor
    ) -> torch.Tensor:
        """0.5 * squared error to the returns; clip_vloss: the larger of it and the clipped value's."""
        cfg = self.cfg
        if not cfg.clip_vloss:
            return 0.5 * (new_value - returns).square().mean()
        v_clipped = old_value + (new_value - old_value).clamp(-cfg.clip_coef, cfg.clip_coef)
        return 0.5 * torch.max((new_value - returns).square(), (v_clipped - returns).square()).mean()

    def close(self) -> None:
        self.envs.close()


# ----------------------------------------------------------------------------------------------------
# Deterministic policies for evaluation
# ----------------------------------------------------------------------------------------------------


def make_act_fn(
    agent: Agent,
    norm_state: dict[str, Any] | None,
    discrete: bool,
    act_low: np.ndarray | None = None,
    act_high: np.ndarray | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """A batch of raw observations -> a batch of env actions (argmax / Gaussian mean, clipped to bounds)."""

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            x = normalise_obs(torch.from_numpy(np.asarray(obs, dtype=np.float32)), norm_state)
            action = agent.act_deterministic(x).numpy()
        if discrete:
            return action
        return np.clip(action, act_low, act_high)

    return act


@dataclass(frozen=True)
class Snapshot:
    """The deterministic policy at one point of training: a copy of the agent, its observation statistics."""

    agent: Agent
    obs_norm: dict[str, Any] | None


def _stacked_norm(states: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Several snapshots' observation statistics as one (B, 1, obs_dim) state for normalise_obs."""
    present = [s for s in states if s is not None]  # a run normalises all of them or none (norm_obs)
    if not present:
        return None
    stack = {k: torch.stack([s[k] for s in present]).unsqueeze(1) for k in ("mean", "var")}
    return {**stack, "clip": present[0]["clip"]}


def load_policy(path: str, env: gym.vector.VectorEnv) -> Callable[[np.ndarray], np.ndarray]:
    """Rebuild a saved policy (policy.pt) as a deterministic act function for `env`'s action space."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    agent = Agent(state["arch"])
    agent.load_state_dict(state["state_dict"])
    agent.eval()
    if agent.discrete:
        return make_act_fn(agent, state["obs_norm"], True)
    box = cast(gym.spaces.Box, env.single_action_space)
    return make_act_fn(agent, state["obs_norm"], False, box.low, box.high)
