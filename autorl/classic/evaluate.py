"""The fixed evaluator of the classic track (harness-owned): 100 episodes, fixed seeds, deterministic policy.

    python -m autorl.classic.evaluate --weights runs/.../weights/policy.pt --env CartPole-v1 --out eval.jsonl
    python -m autorl.classic.evaluate --weights none --env CartPole-v1 --out base.jsonl   # a random policy

Episode i is the first episode of a gymnasium env reset with seed EVAL_SEED + i (run as a batch of 100
envs in one sync vector env, so it equals a lone `gymnasium.make(env).reset(seed=EVAL_SEED + i)`). One JSON
line per episode: {"env", "example_id": "episode-<i>", "sample": 0, "score": return}. eval_score = mean.

The same module holds the harness-owned in-training evaluation (`train_eval`), whose first pass of the
solved threshold gives time_to_solve_seconds. It runs on *other* seeds than the final evaluation. This
module imports torch and gymnasium lazily: the runner imports it for `eval_hash` before anything heavy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

EVAL_VERSION = "classic-eval/1"  # bump when the evaluation changes: results stop being comparable
EVAL_EPISODES = 100
EVAL_SEED = 1_000_000_000  # episode i: seed EVAL_SEED + i (training seeds are < 10^7)
# The sealed test split (`autorl confirm`): fresh episodes no trial is ever scored on.
SPLIT_SEEDS = {"eval": EVAL_SEED, "test": 2_000_000_000}
RANDOM_POLICY_SEED = 12345  # the untrained baseline: uniform random actions from this RNG

# Solved thresholds (mean return over the 100 episodes) and the normaliser printed as eval_normalised.
SOLVED_AT = {"CartPole-v1": 475.0, "BipedalWalker-v3": 300.0}
NORMALISER = {"CartPole-v1": 500.0, "BipedalWalker-v3": 300.0}

# In-training evaluation (time_to_solve_seconds): episodes and cadence, in training-clock seconds. The gap
# between evaluations is 10% of the training time so far, at least `min_gap_s`: every time to solve is
# resolved to within ~10% (fast and slow configs alike) while a long run is evaluated only ~100 times.
# CartPole: 100 episodes on the numpy-vectorised env cost ~50 ms. BipedalWalker: 10 episodes of up to
# 1600 steps cost several seconds. Time spent here is excluded from the budget (pause/resume events).
TRAIN_EVAL_SEED = 2_000_000_000
TRAIN_EVAL_REL_GAP = 0.1
TRAIN_EVAL = {
    "CartPole-v1": {"episodes": 100, "min_gap_s": 0.02},  # ~50 ms per eval, off the clock
    "BipedalWalker-v3": {"episodes": 10, "min_gap_s": 30.0},
}


def next_train_eval(env_id: str, seconds: float) -> float:
    """When the in-training evaluation after one at `seconds` (0 = the first) is due."""
    return seconds + max(TRAIN_EVAL[env_id]["min_gap_s"], TRAIN_EVAL_REL_GAP * seconds)


ActFn = Callable[[np.ndarray], np.ndarray]


def eval_hash(cfg: Any = None, env_id: str | None = None) -> str:
    """Identifies the evaluation set: results are comparable only under the same hash."""
    env = env_id or cfg.model.env_id
    spec = json.dumps([EVAL_VERSION, env, EVAL_EPISODES, EVAL_SEED, SOLVED_AT.get(env)])
    return hashlib.sha256(spec.encode()).hexdigest()[:12]


def run_episodes(envs: Any, act: ActFn, seed: int | list[int]) -> np.ndarray:
    """The return of the first episode of every env in a (next-step autoreset) vector env."""
    obs, _ = envs.reset(seed=seed)
    n = envs.num_envs
    returns = np.zeros(n)
    done = np.zeros(n, dtype=bool)
    while not done.all():
        obs, reward, term, trunc, _ = envs.step(act(obs))
        returns += np.where(done, 0.0, reward)  # later episodes of an env are ignored
        done |= np.logical_or(term, trunc)
    return returns


def random_act_fn(envs: Any, seed: int = RANDOM_POLICY_SEED) -> ActFn:
    """Uniform random actions from a fixed RNG: the untrained baseline, deterministic across runs."""
    import gymnasium as gym

    rng = np.random.default_rng(seed)
    space, n = envs.single_action_space, envs.num_envs
    if isinstance(space, gym.spaces.Discrete):
        return lambda obs: rng.integers(space.n, size=n)
    return lambda obs: rng.uniform(space.low, space.high, size=(n, *space.shape)).astype(np.float32)


def evaluate(
    env_id: str, act_for: Callable[[Any], ActFn], episodes: int = EVAL_EPISODES, split: str = "eval"
) -> np.ndarray:
    """The fixed evaluation: `episodes` returns; `act_for(envs)` builds the policy for the vector env.

    Episode i of `split` starts from seed SPLIT_SEEDS[split] + i (test: `autorl confirm` only)."""
    import gymnasium as gym

    first = SPLIT_SEEDS[split]
    envs = gym.make_vec(env_id, num_envs=episodes, vectorization_mode="sync")
    try:
        return run_episodes(envs, act_for(envs), [first + i for i in range(episodes)])
    finally:
        envs.close()


def train_eval_envs(env_id: str) -> Any:
    """The vector env of the in-training evaluation (built once per training run)."""
    import gymnasium as gym

    n = TRAIN_EVAL[env_id]["episodes"]
    if env_id == "CartPole-v1":  # numpy-vectorised: 100 episodes in ~50 ms
        return gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    return gym.make_vec(env_id, num_envs=n, vectorization_mode="sync")


def train_eval(env_id: str, envs: Any, act: ActFn) -> float:
    """Mean return of the in-training evaluation (fixed seeds, deterministic policy)."""
    if env_id == "CartPole-v1":  # numpy-vectorised env: one RNG for all its envs
        return float(run_episodes(envs, act, TRAIN_EVAL_SEED).mean())
    return float(run_episodes(envs, act, [TRAIN_EVAL_SEED + i for i in range(envs.num_envs)]).mean())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="The fixed classic-track evaluation (harness-owned).")
    p.add_argument("--weights", required=True, help="policy.pt, a directory holding it, or `none` (random)")
    p.add_argument("--env", required=True, choices=sorted(SOLVED_AT), help="gymnasium env id")
    p.add_argument("--out", type=Path, required=True, help="JSONL, one line per episode")
    p.add_argument(
        "--split", choices=sorted(SPLIT_SEEDS), default="eval", help="eval (trials) or test (autorl confirm)"
    )
    args = p.parse_args(argv)

    import torch

    from autorl.classic.ppo import load_policy

    torch.set_num_threads(1)
    started = time.monotonic()
    if args.weights.lower() == "none":
        act_for: Callable[[Any], ActFn] = random_act_fn
        source = "random policy"
    else:
        path = Path(args.weights)
        if path.is_dir():
            path = path / "policy.pt"
        saved_env = torch.load(path, map_location="cpu", weights_only=True)["env_id"]
        if saved_env != args.env:
            print(f"error: {path} was trained on {saved_env}, not {args.env}", file=sys.stderr)
            return 2
        act_for = lambda envs: load_policy(str(path), envs)  # noqa: E731
        source = str(path)
    returns = evaluate(args.env, act_for, split=args.split)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    with open(tmp, "w") as f:
        for i, ret in enumerate(returns):
            f.write(
                json.dumps({"env": args.env, "example_id": f"episode-{i}", "sample": 0, "score": float(ret)})
            )
            f.write("\n")
    tmp.replace(args.out)
    mean = float(returns.mean())
    summary = {
        "env": args.env,
        "weights": source,
        "split": args.split,
        "episodes": len(returns),
        "mean_return": round(mean, 3),
        "std_return": round(float(returns.std()), 3),
        "eval_normalised": round(mean / NORMALISER[args.env], 4),
        "solved": mean >= SOLVED_AT[args.env],
        "seconds": round(time.monotonic() - started, 2),
    }
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
