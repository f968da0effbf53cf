"""The classic-track backend: PPO on CartPole-v1 / BipedalWalker-v3 behind the same runner as the LLM track.

The runner (autorl.commands.trial) loads classic.toml with autorl.classic.config.load_classic_config, then for
each harness seed: resolve -> launch (`python -m autorl.classic.train`) -> collect -> eval_command (`python -m
autorl.classic.evaluate`: the learning-curve score rows, and the final policy's 100 episodes in the seed's
final_eval.jsonl). summary_extras adds the track's summary lines (final_return, solved, solved_seeds,
time_to_solve_seconds, per-seed returns). Cheap to import: no torch, no gymnasium.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorl.classic.evaluate import (
    EVAL_EPISODES,
    EVAL_SEED,
    NORMALISER,
    SCORE_EVERY,
    SCORE_STEPS,
    SOLVED_AT,
    TRAIN_EVAL_EPISODES,
    TRAIN_EVAL_SEED,
    episode_seeds,
    eval_hash,
)
from autorl.engine.backend import WHOLE_MACHINE, Backend, ChildArgs, Collected, Launch, Slot
from autorl.io import paths
from autorl.io.jsonl import read_jsonl
from autorl.io.machine import Machine, cpu_ids

if TYPE_CHECKING:
    from autorl.classic.config import LoadedClassicConfig

FINAL_EVAL = "final_eval.jsonl"  # in the seed's directory: the final policy's 100 episodes (not scored)

# One thread per process: small MLPs run fastest single-threaded, and torch's thread pool would otherwise
# fight the env stepping for the cores.
CHILD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
# What the training and eval children import, once per trial in a warm starter (autorl/engine/warm.py); the
# first optimizer step imports torch._dynamo (half of torch's import time).
WARM = ("torch", "torch._dynamo", "gymnasium", "autorl.classic.train", "autorl.classic.evaluate")


def _seeds_text(seeds: int | list[int]) -> str:
    """How the evaluation's episodes are seeded, for the resolved config."""
    if isinstance(seeds, int):
        return f"{seeds} (one RNG for every episode's start state)"
    return f"{seeds[0]}..{seeds[-1]}"


class ClassicBackend(Backend["LoadedClassicConfig"]):
    name = "classic"
    scores_rungs = True

    def check(self, cfg: LoadedClassicConfig) -> None:
        """Everything classic.toml can express is runnable; validation already happened in the loader."""

    def resolve(
        self, cfg: LoadedClassicConfig, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE
    ) -> dict[str, Any]:
        env_id = cfg.model.env_id
        return {
            "track": "classic",
            "seed": seed,
            "ppo": cfg.model.model_dump(),
            "harness": {  # fixed by autorl/classic/evaluate.py, shown so a dry run tells the whole story
                "eval_episodes": EVAL_EPISODES,
                "eval_seeds": _seeds_text(episode_seeds(env_id, EVAL_SEED, EVAL_EPISODES)),
                "solved_threshold": SOLVED_AT[env_id],
                "normaliser": NORMALISER[env_id],
                "score_env_steps": cfg.score_env_steps
                or SCORE_STEPS[env_id],  # training stops here at the latest
                "score_eval_every": SCORE_EVERY[env_id],
                "train_eval_episodes": TRAIN_EVAL_EPISODES[env_id],
                "train_eval_seed": TRAIN_EVAL_SEED,
                "eval_hash": eval_hash(cfg),
                "rungs": [list(r) for r in cfg.rungs],  # (fraction, env steps): scored on the way
            },
        }

    def launch(
        self, cfg: LoadedClassicConfig, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE
    ) -> Launch:
        # resolved.json: written by the runner
        argv = ChildArgs(run_dir / "resolved.json", run_dir, seed).argv("autorl.classic.train")
        # The child runs the config's torch_threads; plan_slots gave the slot that many cores.
        return Launch(argv=argv, cwd=paths.repo_root(), env=dict(CHILD_ENV), cpus=slot.cpus, warm=WARM)

    def plan_slots(self, cfg: LoadedClassicConfig, machine: Machine) -> list[Slot]:
        """One seed per `torch_threads` cores (one core by default), each pinned to its own cores."""
        cores, per_seed = cpu_ids(machine), cfg.model.torch_threads
        n = max(1, len(cores) // per_seed)
        return [
            Slot(index=i, cpus=tuple(cores[i * per_seed : (i + 1) * per_seed]), threads=per_seed)
            for i in range(n)
        ]

    def collect(self, cfg: LoadedClassicConfig, run_dir: Path) -> Collected:
        state_path = run_dir / "train_state.json"
        weights = run_dir / "weights"
        if not state_path.exists() or not (weights / "policy.pt").exists():
            return Collected(weights_dir=None, notes=[f"no saved policy in {weights}"])
        state = json.loads(state_path.read_text())
        tts = state.get("time_to_solve_seconds")
        note = (
            f"policy after {state['updates']} updates / {state['env_steps']} env steps "
            f"({'finished' if state.get('finished') else 'stopped before its last update'}); "
            + (
                f"in-training eval solved at {tts:.2f} s"
                if tts is not None
                else "in-training eval never solved"
            )
        )
        return Collected(
            weights_dir=weights,
            steps=int(state["updates"]),
            peak_memory_gb=state.get("peak_memory_gb"),
            notes=[note],
            extras={
                "seed": state.get("seed"),
                "env_steps": state.get("env_steps"),
                "time_to_solve_seconds": tts,
                "env_steps_to_solve": state.get("env_steps_to_solve"),
            },
        )

    def eval_command(
        self,
        cfg: LoadedClassicConfig,
        weights_dir: Path | None,
        out_path: Path,
        slot: Slot = WHOLE_MACHINE,
        split: str = "eval",
    ) -> Launch:
        """The eval split scores the seed's learning curve (its in-training evaluations, train_state.json)
        and writes the final policy's 100 episodes next to it; the sealed test split (`autorl confirm`)
        scores the final policy on fresh test episodes, normalised like the curve's points."""
        argv = [sys.executable, "-m", "autorl.classic.evaluate", "--env", cfg.model.env_id]
        if weights_dir is None:  # the random policy: a flat curve at its return
            argv += ["--weights", "none"]
        elif split != "eval":
            argv += ["--weights", str(weights_dir / "policy.pt"), "--split", split]
        else:
            seed_dir = weights_dir.parent
            argv += ["--weights", str(weights_dir / "policy.pt")]
            argv += ["--curve", str(seed_dir / "train_state.json")]
            argv += ["--out", str(seed_dir / FINAL_EVAL)]
            argv += ["--score-steps", str(cfg.score_env_steps)] if cfg.score_env_steps else []
        argv += ["--score-out", str(out_path)]
        return Launch(argv=argv, cwd=paths.repo_root(), env=dict(CHILD_ENV), cpus=slot.cpus, warm=WARM)

    def summary_extras(
        self, cfg: LoadedClassicConfig, collected: list[Collected], eval_rows: list[dict[str, Any]]
    ) -> dict[str, str]:
        """From each seed's final_eval.jsonl (the final policy's episodes); the score rows are the curve's."""
        final_rows = []
        for o in collected:
            path = o.weights_dir.parent / FINAL_EVAL if o.weights_dir is not None else None
            if path is not None and path.exists():
                final_rows += [{**r, "seed": o.extras.get("seed")} for r in read_jsonl(path)]
        return classic_summary(cfg.model.env_id, collected, final_rows)


def classic_summary(
    env_id: str, collected: list[Collected], eval_rows: list[dict[str, Any]]
) -> dict[str, str]:
    """The classic track's summary lines, from the final policy's per-episode rows (with a `seed` field) and
    the collected. They describe the final policies; the score (eval_score) is the learning curve's.

    final_return: the mean return over all evaluated episodes; solved: it reaches the threshold; solved_seeds:
    how many seeds' own 100-episode mean does; time_to_solve_seconds / env_steps_to_solve: medians over the
    seeds whose in-training evaluation reached the threshold (`none` if none did).
    """
    threshold, normaliser = SOLVED_AT[env_id], NORMALISER[env_id]
    by_seed: dict[Any, list[float]] = {}
    for row in eval_rows:
        by_seed.setdefault(row.get("seed", 0), []).append(float(row["score"]))
    seed_means = {seed: statistics.fmean(scores) for seed, scores in by_seed.items()}
    all_scores = [s for scores in by_seed.values() for s in scores]
    mean = statistics.fmean(all_scores) if all_scores else float("nan")
    n_seeds = max(len(collected), len(seed_means))
    solved_seeds = sum(m >= threshold for m in seed_means.values())
    tts = {o.extras.get("seed"): o.extras.get("time_to_solve_seconds") for o in collected}
    solved_times = [t for t in tts.values() if t is not None]
    steps = [o.extras.get("env_steps_to_solve") for o in collected]
    solved_steps = [s for s in steps if s is not None]
    means = list(seed_means.values())

    lines = {
        "env": env_id,
        "final_return": f"{mean:.1f}",
        "eval_normalised": f"{mean / normaliser:.4f}",
        "solved": "yes" if mean >= threshold else "no",
        "solved_threshold": f"{threshold:g}",
        "solved_seeds": f"{solved_seeds}/{n_seeds}",
        "time_to_solve_seconds": f"{statistics.median(solved_times):.2f}" if solved_times else "none",
        "env_steps_to_solve": f"{statistics.median(solved_steps):.0f}" if solved_steps else "none",
        "time_to_solve_per_seed": ",".join(
            f"{seed}={'none' if t is None else f'{t:.2f}'}" for seed, t in tts.items()
        ),
        "seed_returns": ",".join(f"{seed}={m:.1f}" for seed, m in seed_means.items()),
        "seed_return_std": f"{statistics.stdev(means):.2f}" if len(means) > 1 else "0.00",
        "seed_return_range": f"{min(means):.1f}..{max(means):.1f}" if means else "nan",
    }
    return lines
