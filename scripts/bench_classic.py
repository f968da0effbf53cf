"""Time to solve CartPole-v1: this PPO (classic.toml) vs SB3 PPO (rl-baselines3-zoo) vs CleanRL defaults.

    uv run --extra bench python scripts/bench_classic.py [--seeds 5] [--first-seed 1] [--cap 120] [--config F]

Four contenders, each over the same seeds, interleaved seed by seed so that load on the machine hits all
of them alike, all in this one process with torch.set_num_threads(1):
- ours: autorl.classic.ppo with the shipped classic.toml;
- sb3-zoo (peer): stable-baselines3 PPO with rl-baselines3-zoo's tuned CartPole-v1 hyperparameters (8 envs,
  n_steps 32, batch 256, 20 epochs, gamma 0.98, lambda 0.8, lr and clip linearly annealed from 1e-3 and
  0.2 over 1e5 steps, ent 0), on SB3's DummyVecEnv as the zoo runs it;
- cleanrl-sb3 (peer): CleanRL ppo.py's default hyperparameters (4 envs, 128 steps, lr 2.5e-4 annealed over
  5e5 steps, 4 epochs x 4 minibatches, gamma 0.99, lambda 0.95, clip 0.2, ent 0.01, vf 0.5, max grad norm
  0.5, 64x64 tanh) on SB3's PPO. CleanRL is a single-file script, not an installable library; SB3 stands
  in for its code (both step a Python vector env of gymnasium CartPoles and run the same PyTorch PPO update);
- cleanrl-ours (ablation, not a peer): the same CleanRL defaults run through *our* implementation, so its
  ratio to ours isolates the hyperparameters from the code.

The target (ours >= 5x faster than the best peer) is checked against the two peers; the ablation ratio is
printed beside it.

Solve criterion, identical for all: autorl.classic.evaluate.train_eval (100 CartPole episodes, fixed
seeds, deterministic policy) reaches a mean return of 475. It runs at a cadence of training-clock time
(`eval_due_after`: gaps of 10% of the training time so far, at least 0.02 s), with evaluation time excluded
from the clock. Time to solve = training-clock seconds at
the first passing evaluation; runs that do not solve within --cap seconds count as not solved (inf).
Both wall-clock (the target) and process CPU seconds (robust when other jobs share the cores) are shown.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from autorl.classic.config import ClassicConfig, load_classic_config
from autorl.classic.evaluate import SOLVED_AT, train_eval
from autorl.classic.ppo import PPO

ENV_ID = "CartPole-v1"
THRESHOLD = SOLVED_AT[ENV_ID]
CONTENDERS = ("ours", "sb3-zoo", "cleanrl-sb3", "cleanrl-ours")
PEERS = ("sb3-zoo", "cleanrl-sb3")  # other people's code and hyperparameters; the target is against these

# CleanRL ppo.py defaults (docs.cleanrl.dev, ppo.py Args), in classic.toml keys.
CLEANRL_DEFAULTS = dict(
    env_id=ENV_ID,
    total_env_steps=500_000,
    num_envs=4,
    num_steps=128,
    learning_rate=2.5e-4,
    lr_schedule="linear",
    adam_eps=1e-5,
    max_grad_norm=0.5,
    update_epochs=4,
    num_minibatches=4,
    gamma=0.99,
    gae_lambda=0.95,
    clip_coef=0.2,
    clip_vloss=True,
    vf_coef=0.5,
    ent_coef=0.01,
    target_kl=0.0,
    norm_adv=True,
    norm_obs=False,
    norm_reward=False,
    hidden_width=64,
    hidden_depth=2,
    activation="tanh",
    layer_norm=False,
    hidden_gain=2**0.5,
    actor_gain=0.01,
    critic_gain=1.0,
)


def eval_due_after(seconds: float) -> float:
    """When the solve check after one at `seconds` is due: every time to solve resolved to ~10%."""
    return seconds + max(0.02, 0.1 * seconds)


class Clock:
    """Training clock (wall and CPU) that excludes evaluations."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        self._w = self._c = 0.0

    def start(self) -> None:
        self._w, self._c = time.perf_counter(), time.process_time()

    def stop(self) -> None:
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c


class SolveWatch:
    """Evaluates at the fixed cadence (wall training clock); records the first time the threshold is met."""

    def __init__(self, cap_s: float):
        self.clock = Clock()
        self.cap_s = cap_s
        self.next_eval = eval_due_after(0.0)
        self.solved_at: tuple[float, float] | None = None  # (wall, cpu)
        self.env_steps = 0  # at the solve (or at the end)
        self.evals = 0

    def check(self, act: Callable[[np.ndarray], np.ndarray], env_steps: int) -> bool:
        """Call with the clock running, at a point where the policy is complete; True = stop training."""
        self.clock.stop()
        self.env_steps = env_steps
        if self.clock.wall >= self.next_eval:
            self.evals += 1
            self.next_eval = eval_due_after(self.clock.wall)
            if train_eval(ENV_ID, act)[0] >= THRESHOLD:
                self.solved_at = (self.clock.wall, self.clock.cpu)
        done = self.solved_at is not None or self.clock.wall >= self.cap_s
        self.clock.start()
        return done


def run_ours(cfg: ClassicConfig, seed: int, cap_s: float) -> SolveWatch:
    ppo = PPO(cfg, seed)
    watch = SolveWatch(cap_s)
    watch.clock.start()
    for u in ppo.run():
        if watch.check(ppo.act_fn(), u.env_steps):
            break
    watch.clock.stop()
    ppo.close()
    return watch


def run_sb3(seed: int, cap_s: float, n_envs: int, total_timesteps: int, **ppo_kwargs) -> SolveWatch:
    """SB3 PPO on SB3's DummyVecEnv; `ppo_kwargs` are stable_baselines3.PPO arguments."""
    from stable_baselines3 import PPO as SB3PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env(ENV_ID, n_envs=n_envs, seed=seed)
    model = SB3PPO("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **ppo_kwargs)
    watch = SolveWatch(cap_s)

    def act(obs: np.ndarray) -> np.ndarray:
        return model.predict(obs, deterministic=True)[0]

    class Watch(BaseCallback):
        def _on_step(self) -> bool:  # after every vector step; the policy changes only between rollouts
            return not watch.check(act, self.num_timesteps)

    watch.clock.start()
    model.learn(total_timesteps=total_timesteps, callback=Watch())
    watch.clock.stop()
    env.close()
    return watch


def linear(start: float) -> Callable[[float], float]:
    """SB3 schedule annealed linearly to 0 over learn()'s total_timesteps (the zoo's lin_<x>)."""
    return lambda progress_remaining: progress_remaining * start


def run_sb3_zoo(seed: int, cap_s: float) -> SolveWatch:
    """rl-baselines3-zoo's hyperparams/ppo.yml CartPole-v1 entry."""
    return run_sb3(
        seed,
        cap_s,
        n_envs=8,
        total_timesteps=100_000,
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=linear(1e-3),
        clip_range=linear(0.2),
    )


def run_sb3_cleanrl(seed: int, cap_s: float) -> SolveWatch:
    """CLEANRL_DEFAULTS in SB3's arguments. SB3's MlpPolicy is already 64x64 tanh, orthogonal init (gains
    sqrt 2, 0.01, 1) with Adam eps 1e-5, as in ppo.py."""
    d = CLEANRL_DEFAULTS
    batch = d["num_envs"] * d["num_steps"]
    return run_sb3(
        seed,
        cap_s,
        n_envs=d["num_envs"],
        total_timesteps=d["total_env_steps"],
        n_steps=d["num_steps"],
        batch_size=batch // d["num_minibatches"],
        n_epochs=d["update_epochs"],
        learning_rate=linear(d["learning_rate"]),
        gamma=d["gamma"],
        gae_lambda=d["gae_lambda"],
        clip_range=d["clip_coef"],
        clip_range_vf=d["clip_coef"] if d["clip_vloss"] else None,
        ent_coef=d["ent_coef"],
        vf_coef=d["vf_coef"],
        max_grad_norm=d["max_grad_norm"],
        normalize_advantage=d["norm_adv"],
    )


def fmt(x: float) -> str:
    return "not solved" if math.isinf(x) else f"{x:6.2f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=1, help="seeds first-seed .. first-seed + seeds - 1")
    p.add_argument("--cap", type=float, default=120.0, help="training seconds before a run counts unsolved")
    p.add_argument("--config", type=Path, default=Path("classic.toml"))
    p.add_argument("--only", default=",".join(CONTENDERS), help="comma-separated contenders")
    args = p.parse_args()
    torch.set_num_threads(1)

    ours = load_classic_config(args.config).model
    if ours.env_id != ENV_ID:
        raise SystemExit(f"{args.config} trains {ours.env_id}; this benchmark is for {ENV_ID}")
    contenders: dict[str, Callable[[int], SolveWatch]] = {
        "ours": lambda seed: run_ours(ours, seed, args.cap),
        "sb3-zoo": lambda seed: run_sb3_zoo(seed, args.cap),
        "cleanrl-sb3": lambda seed: run_sb3_cleanrl(seed, args.cap),
        "cleanrl-ours": lambda seed: run_ours(ClassicConfig(**CLEANRL_DEFAULTS), seed, args.cap),
    }
    names = [n for n in args.only.split(",") if n]
    results: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    print(f"# CartPole-v1 time to solve (train_eval >= {THRESHOLD:g}, evaluated off the clock)")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} thread(s); seeds {seeds[0]}..{seeds[-1]}")
    for seed in seeds:
        for name in names:
            watch = contenders[name](seed)
            solved = watch.solved_at or (math.inf, math.inf)
            results[name].append(solved)
            print(
                f"seed {seed} {name:17s} wall {fmt(solved[0])} s  cpu {fmt(solved[1])} s  "
                f"env steps {watch.env_steps:6d}  (clock {watch.clock.wall:.1f} s, {watch.evals} evals)",
                flush=True,
            )

    print("\n| contender | solved | median wall s | median cpu s |")
    print("|---|---|---|---|")
    medians: dict[str, tuple[float, float]] = {}
    for name in names:
        walls, cpus = [r[0] for r in results[name]], [r[1] for r in results[name]]
        medians[name] = (statistics.median(walls), statistics.median(cpus))
        n_solved = sum(not math.isinf(w) for w in walls)
        print(f"| {name} | {n_solved}/{len(walls)} | {fmt(medians[name][0])} | {fmt(medians[name][1])} |")
    if "ours" not in medians:
        return
    ours_wall, ours_cpu = medians["ours"]
    for name, (wall, cpu) in medians.items():
        if name != "ours":
            print(f"ratio {name} / ours: wall {wall / ours_wall:.1f}x, cpu {cpu / ours_cpu:.1f}x")
    peers = {n: medians[n][0] for n in PEERS if n in medians}
    if peers:
        best = min(peers, key=peers.__getitem__)
        print(f"speed-up vs the best peer ({best}): {peers[best] / ours_wall:.1f}x (target >= 5x)")
    if "cleanrl-ours" in medians:
        print(f"hyperparameters alone (cleanrl-ours / ours): {medians['cleanrl-ours'][0] / ours_wall:.1f}x")


if __name__ == "__main__":
    main()
