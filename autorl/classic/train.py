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
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

from autorl import atomic, progress
from autorl.classic.config import ClassicConfig
from autorl.classic.evaluate import SCORE_STEPS, SOLVED_AT, due_eval, train_eval, train_eval_envs

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


def peak_rss_gb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / (1024**3 if sys.platform == "darwin" else 1024**2)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="classic-track PPO training child")
    p.add_argument("--config", type=Path, required=True, help="resolved.json written by the runner")
    p.add_argument("--run-dir", type=Path, required=True)
    p.add_argument("--seed", type=int, required=True)
    args = p.parse_args(argv)

    stop_requested = False

    def on_sigterm(signum: int, frame: Any) -> None:
        nonlocal stop_requested
        stop_requested = True  # acted on between vector steps: the weights saved are a complete update's

    signal.signal(signal.SIGTERM, on_sigterm)

    resolved = json.loads(args.config.read_text())
    cfg = ClassicConfig.model_validate(resolved["ppo"])

    import torch

    from autorl.classic.ppo import PPO

    torch.set_num_threads(cfg.torch_threads)
    run_dir = args.run_dir
    weights_dir = run_dir / "weights"
    weights_dir.mkdir(parents=True, exist_ok=True)
    ppo = PPO(cfg, args.seed)
    eval_envs = train_eval_envs(cfg.env_id)
    threshold = SOLVED_AT[cfg.env_id]

    state: dict[str, Any] = {
        "seed": args.seed,
        "env_id": cfg.env_id,
        "updates": 0,
        "env_steps": 0,
        "seconds": 0.0,
        "finished": False,
        "solved_threshold": threshold,
        "time_to_solve_seconds": None,
        "env_steps_to_solve": None,
        "evals": [],  # [training seconds, env steps, mean return]
        "peak_memory_gb": None,
        "weights": None,
    }

    def save(update: int, env_steps: int) -> None:
        path = weights_dir / "policy.pt"
        buffer = io.BytesIO()
        torch.save(ppo.policy_state(update, env_steps), buffer)
        atomic.write_bytes(path, buffer.getvalue())  # the evaluator never sees a half-written file
        state.update(weights=str(path.relative_to(run_dir)), peak_memory_gb=round(peak_rss_gb(), 3))
        atomic.write_text(run_dir / "train_state.json", json.dumps(state, indent=1))
        progress.emit("saved", step=update, path=str(path))

    clock = TrainingClock()
    last_step = min(cfg.total_env_steps, SCORE_STEPS[cfg.env_id])  # the score covers no more env steps

    def evaluate_now(update: int, env_steps: int, seconds: float) -> float:
        """The in-training evaluation of the current policy, off the clock; one point of the curve."""
        clock.pause()
        mean_return = train_eval(cfg.env_id, eval_envs, ppo.act_fn())
        clock.resume()
        state["evals"].append([round(seconds, 4), env_steps, round(mean_return, 3)])
        if mean_return >= threshold and state["time_to_solve_seconds"] is None:
            state["time_to_solve_seconds"] = round(seconds, 4)
            state["env_steps_to_solve"] = env_steps
            progress.emit("solved", step=update, seconds=round(seconds, 4), eval_return=mean_return)
        return mean_return

    progress.emit("ready", env_id=cfg.env_id, num_updates=cfg.num_updates, batch_size=cfg.batch_size)
    clock.start()
    update = env_steps = 0
    last_save = 0.0
    if due_eval(cfg.env_id, 0, cfg.batch_size):
        evaluate_now(0, 0, 0.0)
    last_return: float | None = None
    with open(run_dir / "metrics.jsonl", "a") as metrics:
        for u in ppo.run(stop=lambda: stop_requested):
            update, env_steps = u.update, u.env_steps
            seconds = clock.seconds()
            if u.episodic_return is not None:
                last_return = u.episodic_return
            sps = cfg.batch_size / max(u.rollout_s + u.update_s, 1e-9)  # env steps per second of this update
            row: dict[str, Any] = {
                "step": update,
                "reward_mean": last_return,
                "loss": u.loss,
                "lr": u.lr,
                "seconds": round(seconds, 4),
                "samples_per_s": round(sps, 1),
                "env_steps": env_steps,
                "episodes": u.episodes,
                "pg_loss": u.pg_loss,
                "v_loss": u.v_loss,
                "entropy": u.entropy,
                "approx_kl": u.approx_kl,
                "clipfrac": u.clipfrac,
                "explained_var": u.explained_var,
                "epochs": u.epochs,
            }
            state.update(updates=update, env_steps=env_steps, seconds=round(seconds, 4))
            done = env_steps + cfg.batch_size > last_step
            if not stop_requested and (due_eval(cfg.env_id, env_steps, cfg.batch_size) or done):
                row["eval_return"] = evaluate_now(update, env_steps, seconds)

            metrics.write(json.dumps(row) + "\n")
            metrics.flush()
            event = {k: row[k] for k in ("loss", "lr", "seconds", "samples_per_s", "env_steps")}
            if last_return is not None:
                event["reward"] = round(last_return, 3)
            if "eval_return" in row:
                event["eval_return"] = round(row["eval_return"], 3)
            progress.emit("step", step=update, **event)

            if seconds - last_save >= SAVE_EVERY_S:
                save(update, env_steps)
                last_save = seconds
            if stop_requested or done:
                break

    if not state["evals"] or state["evals"][-1][1] != env_steps:  # stopped early: the policy as it is now
        evaluate_now(update, env_steps, clock.seconds())
    state["finished"] = not stop_requested
    state["seconds"] = round(clock.seconds(), 4)
    save(update, env_steps)
    ppo.close()
    eval_envs.close()
    progress.emit(
        "done", step=update, env_steps=env_steps, time_to_solve_seconds=state["time_to_solve_seconds"]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
