"""The fixed evaluation of the classic track (harness-owned): the score is how fast and reliably PPO learns.

    python -m autorl.classic.evaluate --weights runs/.../weights/policy.pt --env CartPole-v1 \
        --curve runs/.../train_state.json --score-out eval.jsonl --out final_eval.jsonl
    python -m autorl.classic.evaluate --weights none --env CartPole-v1 --score-out base.jsonl  # random policy

The score (`--score-out`, what eval_score averages): the area under the in-training evaluation curve over a
fixed env-step budget (`SCORE_STEPS`), normalised to 0..1. While training, the child evaluates the greedy
policy on fixed seeds at every grid point g = SCORE_EVERY, 2*SCORE_EVERY, ..., SCORE_STEPS env steps (the
policy after the last update that used at most g env steps; one that stopped earlier keeps its last value).
One row per grid point: {"env", "example_id": "steps-<g>", "sample": 0, "score": min(max(R, 0), T) / T},
R the mean return of that evaluation and T the solved threshold. A seed's score is the mean of its rows.
docs/classic.md says why this score and not the final return (capped: every config solves CartPole).

The final policy's return on 100 fixed episodes (`--out`, one line per episode, "episode-<i>") is reported
in the summary (solved, solved_seeds, seed_returns), not scored. This module imports torch and gymnasium
lazily: the runner imports it for `eval_hash` before anything heavy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from autorl.io import atomic

if TYPE_CHECKING:
    from autorl.classic.config import LoadedClassicConfig

# bump when the evaluation changes: results stop being comparable. 3: the final policy's CartPole episodes run
# on the numpy-vectorised env (start states from one RNG seeded EVAL_SEED), like the in-training evaluation.
EVAL_VERSION = "classic-eval/3"
EVAL_EPISODES = 100
EVAL_SEED = 1_000_000_000  # the final policy's episodes (episode_seeds; training seeds are < 10^7)
# Episode seeds per split: eval (the final return in the summary) and the sealed test split (`autorl
# confirm`: fresh episodes no trial is scored on), apart from each other, from training seeds (< 10^7) and
# from the in-training evaluation (TRAIN_EVAL_SEED).
SPLIT_SEEDS = {"eval": EVAL_SEED, "test": 3_000_000_000}
RANDOM_POLICY_SEED = 12345  # the untrained baseline: uniform random actions from this RNG

# Solved thresholds (mean return over the 100 episodes) and the normaliser printed as eval_normalised.
SOLVED_AT = {"CartPole-v1": 475.0, "BipedalWalker-v3": 300.0}
NORMALISER = {"CartPole-v1": 500.0, "BipedalWalker-v3": 300.0}

# The learning curve the score integrates: env steps it covers (training stops there) and the grid of its
# in-training evaluations (off the clock: pause/resume events). CartPole: 100 episodes on the
# numpy-vectorised env, 25 of them. BipedalWalker: 10 episodes of up to 1600 steps, 20 of them.
SCORE_STEPS = {"CartPole-v1": 50_000, "BipedalWalker-v3": 2_000_000}
SCORE_EVERY = {"CartPole-v1": 2_000, "BipedalWalker-v3": 100_000}
TRAIN_EVAL_SEED = 2_000_000_000
TRAIN_EVAL_EPISODES = {"CartPole-v1": 100, "BipedalWalker-v3": 10}
# The training child runs the evaluations of a save period together (train_eval's `policies`) where that is
# cheaper: CartPole's vectorised env steps all their episodes in one call; a sync env of Box2D walkers steps
# env by env, and together every walker would run until the longest episode of any policy ends.
TRAIN_EVAL_TOGETHER = {"CartPole-v1": True, "BipedalWalker-v3": False}
# An env's own revision of its in-training evaluation (part of eval_hash where there is one). BipedalWalker 2:
# every evaluation on new envs; it reused one sync env whose Box2D worlds keep state across resets, so a
# policy's return depended on the evaluations before it (the same policy twice: two returns).
TRAIN_EVAL_REVISION = {"BipedalWalker-v3": 2}
SCORE_RANGE = (0.0, 1.0)  # a point scores min(max(R, 0), T) / T


def curve_grid(env_id: str, horizon: int | None = None) -> list[int]:
    """The env-step counts at which the learning curve is scored, up to `horizon` env steps (None: the
    harness's SCORE_STEPS; `autorl fidelity` scores a longer one)."""
    every = SCORE_EVERY[env_id]
    return list(range(every, (horizon or SCORE_STEPS[env_id]) + 1, every))


def grid_step(row: dict[str, Any]) -> int:
    """The env steps of a score row's grid point (its example_id, `steps-000050000`)."""
    return int(str(row["example_id"]).removeprefix("steps-"))


def point_score(env_id: str, mean_return: float) -> float:
    """One evaluation's score: its mean return clipped to [0, threshold] over the threshold."""
    threshold = SOLVED_AT[env_id]
    return min(max(mean_return, 0.0), threshold) / threshold


def curve_rows(env_id: str, evals: list[list[float]], horizon: int | None = None) -> list[dict[str, Any]]:
    """One seed's score rows from its in-training evaluations [seconds, env steps, mean return]: each grid
    point up to `horizon` takes the last evaluation at or before it (none yet: 0)."""
    rows = []
    for g in curve_grid(env_id, horizon):
        before = [e for e in evals if e[1] <= g]
        value = point_score(env_id, before[-1][2]) if before else 0.0
        rows.append({"env": env_id, "example_id": f"steps-{g:09d}", "sample": 0, "score": value})
    return rows


def due_eval(env_id: str, env_steps: int, batch: int, horizon: int | None = None) -> bool:
    """Evaluate now (after an update that brought training to `env_steps`): a grid point falls before the next
    update ends, so this policy is the one that has used at most that many env steps."""
    return any(env_steps <= g < env_steps + batch for g in curve_grid(env_id, horizon))


ActFn = Callable[[np.ndarray], np.ndarray]


def eval_hash(cfg: LoadedClassicConfig | None = None, env_id: str | None = None) -> str:
    """Identifies the evaluation set (of `cfg`'s env, or `env_id`): results are comparable only under the same
    hash."""
    env = env_id or (cfg.model.env_id if cfg is not None else "")
    revision = [TRAIN_EVAL_REVISION[env]] if env in TRAIN_EVAL_REVISION else []  # none: the hash as before
    spec = json.dumps(
        [
            EVAL_VERSION,
            env,
            EVAL_EPISODES,
            EVAL_SEED,
            SOLVED_AT.get(env),
            SCORE_STEPS.get(env),
            SCORE_EVERY.get(env),
            TRAIN_EVAL_EPISODES.get(env),
            TRAIN_EVAL_SEED,
            *revision,
        ]
    )
    return hashlib.sha256(spec.encode()).hexdigest()[:12]


def run_episodes(envs: Any, act: ActFn, seed: int | list[int]) -> np.ndarray:
    """The return of the first episode of every env in a (next-step autoreset) vector env."""
    obs, _ = envs.reset(seed=seed)
    return play(envs, act, obs)


def play(envs: Any, act: ActFn, obs: np.ndarray) -> np.ndarray:
    """The return of the first episode of every env of `envs`, from its observations `obs` (just reset)."""
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

    The episodes of `split` start from SPLIT_SEEDS[split] (episode_seeds; test: `autorl confirm` only)."""
    envs = eval_envs(env_id, episodes)
    try:
        return run_episodes(envs, act_for(envs), episode_seeds(env_id, SPLIT_SEEDS[split], episodes))
    finally:
        envs.close()


def eval_envs(env_id: str, n: int) -> Any:
    """The vector env of an evaluation of n episodes. CartPole: numpy-vectorised (100 episodes in ~50 ms,
    against ~1.5 s for 100 Python CartPoles); BipedalWalker: the standard sync one."""
    import gymnasium as gym

    if env_id == "CartPole-v1":
        return gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    return gym.make_vec(env_id, num_envs=n, vectorization_mode="sync")


def episode_seeds(env_id: str, first: int, n: int) -> int | list[int]:
    """The reset seed of n evaluation episodes: CartPole's numpy-vectorised env draws every start state from
    one RNG seeded `first`; other envs seed episode i with `first + i`."""
    return first if env_id == "CartPole-v1" else [first + i for i in range(n)]


def train_eval(env_id: str, act: ActFn, policies: int = 1) -> list[float]:
    """Mean return of the in-training evaluation (fixed seeds, deterministic policy) of `policies` policies at
    once, each on new envs: `act` maps the observations of `policies` blocks of TRAIN_EVAL_EPISODES envs to
    their actions, block i by policy i (PPO.blocks_act_fn). Every block plays the episodes one policy plays
    alone, so each policy gets the return it gets alone, whatever else runs with it (tests/test_classic.py).
    CartPole: one numpy-vectorised env of all blocks, so one step of B policies costs about one policy's."""
    n = TRAIN_EVAL_EPISODES[env_id]
    seeds = episode_seeds(env_id, TRAIN_EVAL_SEED, n)
    with closing(eval_envs(env_id, policies * n)) as envs:
        if isinstance(seeds, list):  # seeded env by env
            returns = run_episodes(envs, act, seeds * policies)
        elif policies == 1:
            returns = run_episodes(envs, act, seeds)
        else:  # one RNG draws every start state of CartPole's vector env: give each block the first n's
            with closing(eval_envs(env_id, n)) as alone:
                obs, _ = alone.reset(seed=seeds)
                start = alone.unwrapped.state  # gymnasium's CartPoleVectorEnv: (4, num_envs) float64
            envs.reset(seed=seeds)
            envs.unwrapped.state = np.tile(start, (1, policies))
            returns = play(envs, act, np.tile(obs, (policies, 1)))
    return [float(r) for r in returns.reshape(policies, n).mean(axis=1)]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, "".join(json.dumps(r) + "\n" for r in rows))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="The fixed classic-track evaluation (harness-owned).")
    p.add_argument("--weights", required=True, help="policy.pt, a directory holding it, or `none` (random)")
    p.add_argument("--env", required=True, choices=sorted(SOLVED_AT), help="gymnasium env id")
    p.add_argument("--out", type=Path, help="JSONL, the final policy's return, one line per episode")
    p.add_argument("--curve", type=Path, help="the seed's train_state.json (its in-training evaluations)")
    p.add_argument("--score-out", type=Path, help="JSONL, the score: one line per learning-curve grid point")
    p.add_argument(
        "--score-steps", type=int, help="env steps the curve's score covers (default: SCORE_STEPS; fidelity)"
    )
    p.add_argument(
        "--split",
        choices=sorted(SPLIT_SEEDS),
        default="eval",
        help="eval (trials: the curve) or test (autorl confirm: the final policy on sealed episodes)",
    )
    args = p.parse_args(argv)
    if args.out is None and args.score_out is None:
        p.error("give --out, --score-out or both")
    random_policy = args.weights.lower() == "none"
    if args.score_out is not None and not random_policy and args.curve is None and args.split == "eval":
        p.error("--score-out of trained weights needs --curve (their train_state.json)")

    import torch

    from autorl.classic.ppo import load_policy

    torch.set_num_threads(1)
    started = time.monotonic()
    if random_policy:
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
    mean = float(returns.mean())

    if args.out is not None:
        write_jsonl(
            args.out,
            [
                {"env": args.env, "example_id": f"episode-{i}", "sample": 0, "score": float(ret)}
                for i, ret in enumerate(returns)
            ],
        )
    score_rows: list[dict[str, Any]] = []
    if args.score_out is not None and args.split != "eval":
        # The sealed test split: the final policy on fresh episodes, each scored like a curve point.
        score_rows = [
            {"env": args.env, "example_id": f"episode-{i}", "sample": 0, "score": point_score(args.env, ret)}
            for i, ret in enumerate(returns)
        ]
        write_jsonl(args.score_out, score_rows)
    elif args.score_out is not None:
        # The random policy never learns: its curve is flat at its own return.
        evals = [[0.0, 0, mean]] if random_policy else json.loads(args.curve.read_text())["evals"]
        score_rows = curve_rows(args.env, evals, args.score_steps)
        write_jsonl(args.score_out, score_rows)
    summary = {
        "env": args.env,
        "weights": source,
        "split": args.split,
        "episodes": len(returns),
        "mean_return": round(mean, 3),
        "std_return": round(float(returns.std()), 3),
        "eval_normalised": round(mean / NORMALISER[args.env], 4),
        "solved": mean >= SOLVED_AT[args.env],
        "curve_score": round(float(np.mean([r["score"] for r in score_rows])), 4) if score_rows else None,
        "seconds": round(time.monotonic() - started, 2),
    }
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
