"""The classic-track training child.

    python -m autorl.classic.train --config resolved.json --run-dir DIR --seed K

Runs autorl.classic.ppo under the runner's protocol (autorl.progress): `ready` when the envs and the agent
exist (the budget clock starts), one `step` event and one metrics.jsonl row per PPO update, `pause`/`resume`
around the in-training evaluation (not charged to the budget), `saved` after each atomic save of
weights/policy.pt, `done` at the end. Stops at total_env_steps or at the score's env-step budget
(evaluate.SCORE_STEPS), whichever first, or on SIGTERM (saves, exits 0).

The in-training evaluation runs on the score's grid of env steps (evaluate.due_eval) and once more at the end
if the last update was not evaluated. run_dir/train_state.json (rewritten atomically) holds the figures the
backend and the evaluator use: updates, env steps, training seconds, the in-training evaluations (the
learning curve the score integrates), time_to_solve_seconds and env_steps_to_solve (the first evaluation
that reached the solved threshold; null if none did).
"""

from __future__ import annotations

import argparse
import io
import json
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorl import atomic, progress
from autorl.classic.config import ClassicConfig
from autorl.classic.evaluate import SCORE_STEPS, SOLVED_AT, due_eval, train_eval, train_eval_envs
from autorl.machine import peak_rss_gb

if TYPE_CHECKING:
    from autorl.classic.ppo import Update

SAVE_EVERY_S = 5.0  # training-clock seconds between periodic saves (a save costs about a millisecond)


class TrainingClock:
    """Seconds since start(), excluding paused intervals: the same clock the runner charges to the budget."""

    def __init__(self) -> None:
        self.t0 = self.paused_at = 0.0
        self.paused_total = 0.0

    def start(self) -> None:
        self.t0 = time.monotonic()

    def pause(self) -> None:
        self.paused_at = time.monotonic()
        progress.emit("pause")

    def resume(self) -> None:
        self.paused_total += time.monotonic() - self.paused_at
        progress.emit("resume")

    def seconds(self) -> float:
        return time.monotonic() - self.t0 - self.paused_total


@dataclass(kw_only=True)
class TrainState:
    """run_dir/train_state.json: the figures the backend and the evaluator read (rewritten at each save)."""

    seed: int
    env_id: str
    updates: int = 0
    env_steps: int = 0
    seconds: float = 0.0  # training-clock seconds
    finished: bool = False  # reached its last update (not stopped by SIGTERM)
    solved_threshold: float
    time_to_solve_seconds: float | None = None  # the first in-training evaluation at the threshold
    env_steps_to_solve: int | None = None
    evals: list[list[float]] = field(default_factory=list)  # [training seconds, env steps, mean return]
    peak_memory_gb: float | None = None
    weights: str | None = None  # relative to the run directory

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


class ClassicRun:
    """One seed's training: PPO updates on the training clock, the in-training evaluations off it, saves."""

    def __init__(self, cfg: ClassicConfig, seed: int, run_dir: Path, stop: threading.Event):
        from autorl.classic.ppo import PPO

        self.cfg, self.run_dir, self.stop = cfg, run_dir, stop
        self.weights = run_dir / "weights" / "policy.pt"
        self.weights.parent.mkdir(parents=True, exist_ok=True)
        self.ppo = PPO(cfg, seed)
        self.eval_envs = train_eval_envs(cfg.env_id)
        self.state = TrainState(seed=seed, env_id=cfg.env_id, solved_threshold=SOLVED_AT[cfg.env_id])
        self.clock = TrainingClock()
        self.last_step = min(cfg.total_env_steps, SCORE_STEPS[cfg.env_id])  # the score covers no more
        self.last_return: float | None = None  # mean return of the last rollout in which episodes ended

    def save(self, update: int, env_steps: int) -> None:
        import torch

        buffer = io.BytesIO()
        torch.save(self.ppo.policy_state(update, env_steps), buffer)
        atomic.write_bytes(self.weights, buffer.getvalue())  # the evaluator never sees a half-written file
        self.state.weights = str(self.weights.relative_to(self.run_dir))
        self.state.peak_memory_gb = round(peak_rss_gb(), 3)
        atomic.write_text(self.run_dir / "train_state.json", self.state.to_json())
        progress.emit("saved", step=update, path=str(self.weights))

    def evaluate_now(self, update: int, env_steps: int, seconds: float) -> float:
        """The in-training evaluation of the current policy, off the clock; one point of the curve."""
        self.clock.pause()
        mean_return = train_eval(self.cfg.env_id, self.eval_envs, self.ppo.act_fn())
        self.clock.resume()
        state = self.state
        state.evals.append([round(seconds, 4), env_steps, round(mean_return, 3)])
        if mean_return >= state.solved_threshold and state.time_to_solve_seconds is None:
            state.time_to_solve_seconds = round(seconds, 4)
            state.env_steps_to_solve = env_steps
            progress.emit("solved", step=update, seconds=round(seconds, 4), eval_return=mean_return)
        return mean_return

    def run(self) -> int:
        cfg = self.cfg
        progress.emit("ready", env_id=cfg.env_id, num_updates=cfg.num_updates, batch_size=cfg.batch_size)
        self.clock.start()
        if due_eval(cfg.env_id, 0, cfg.batch_size):
            self.evaluate_now(0, 0, 0.0)
        update, env_steps = self.train()
        if not self.state.evals or self.state.evals[-1][1] != env_steps:  # stopped early: the policy now
            self.evaluate_now(update, env_steps, self.clock.seconds())
        self.state.finished = not self.stop.is_set()
        self.state.seconds = round(self.clock.seconds(), 4)
        self.save(update, env_steps)
        self.ppo.close()
        self.eval_envs.close()
        progress.emit(
            "done", step=update, env_steps=env_steps, time_to_solve_seconds=self.state.time_to_solve_seconds
        )
        return 0

    def train(self) -> tuple[int, int]:
        """PPO updates until the last step, PPO's last update or a stop; the (update, env steps) reached."""
        update = env_steps = 0
        last_save = 0.0
        with open(self.run_dir / "metrics.jsonl", "a") as metrics:
            for u in self.ppo.run(stop=self.stop.is_set):
                update, env_steps = u.update, u.env_steps
                seconds = self.clock.seconds()
                done = env_steps + self.cfg.batch_size > self.last_step
                row = self.record(u, seconds, done)
                metrics.write(json.dumps(row) + "\n")
                metrics.flush()
                self.emit_step(row)
                if seconds - last_save >= SAVE_EVERY_S:
                    self.save(update, env_steps)
                    last_save = seconds
                if self.stop.is_set() or done:
                    break
        return update, env_steps

    def record(self, u: Update, seconds: float, done: bool) -> dict[str, Any]:
        """The metrics.jsonl row of update `u` (with the in-training evaluation when one is due)."""
        cfg = self.cfg
        if u.episodic_return is not None:
            self.last_return = u.episodic_return
        sps = cfg.batch_size / max(u.rollout_s + u.update_s, 1e-9)  # env steps per second of this update
        row: dict[str, Any] = {
            "step": u.update,
            "reward_mean": self.last_return,
            "loss": u.loss,
            "lr": u.lr,
            "seconds": round(seconds, 4),
            "samples_per_s": round(sps, 1),
            "env_steps": u.env_steps,
            "episodes": u.episodes,
            "pg_loss": u.pg_loss,
            "v_loss": u.v_loss,
            "entropy": u.entropy,
            "approx_kl": u.approx_kl,
            "clipfrac": u.clipfrac,
            "explained_var": u.explained_var,
            "epochs": u.epochs,
        }
        self.state.updates, self.state.env_steps, self.state.seconds = (
            u.update,
            u.env_steps,
            round(seconds, 4),
        )
        if not self.stop.is_set() and (due_eval(cfg.env_id, u.env_steps, cfg.batch_size) or done):
            row["eval_return"] = self.evaluate_now(u.update, u.env_steps, seconds)
        return row

    def emit_step(self, row: dict[str, Any]) -> None:
        event = {k: row[k] for k in ("loss", "lr", "seconds", "samples_per_s", "env_steps")}
        if self.last_return is not None:
            event["reward"] = round(self.last_return, 3)
        if "eval_return" in row:
            event["eval_return"] = round(row["eval_return"], 3)
        progress.emit("step", step=row["step"], **event)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="classic-track PPO training child")
    p.add_argument("--config", type=Path, required=True, help="resolved.json written by the runner")
    p.add_argument("--run-dir", type=Path, required=True)
    p.add_argument("--seed", type=int, required=True)
    args = p.parse_args(argv)

    stop = threading.Event()  # acted on between vector steps: the weights saved are a complete update's
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    cfg = ClassicConfig.model_validate(json.loads(args.config.read_text())["ppo"])

    import torch

    torch.set_num_threads(cfg.torch_threads)
    return ClassicRun(cfg, args.seed, args.run_dir, stop).run()


if __name__ == "__main__":
    sys.exit(main())
