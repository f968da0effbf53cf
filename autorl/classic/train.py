"""The classic-track training child.

    python -m autorl.classic.train --config resolved.json --run-dir DIR --seed K

Runs autorl.classic.ppo under the runner's protocol (autorl.engine.progress): `ready` when the envs and the
agent exist (the budget clock starts), one `step` event and one metrics.jsonl row per PPO update,
`pause`/`resume` around the in-training evaluations (not charged to the budget), `rung` at each of the
trial's rungs (harness.rungs: the curve's rows up to it, then a paused wait for the runner's word), `saved`
after each atomic save of weights/policy.pt, `done` at the end. Stops at total_env_steps or at the score's
env-step budget (resolved.json's harness.score_env_steps: evaluate.SCORE_STEPS, or a longer horizon for
`autorl fidelity`), whichever first, or on SIGTERM (saves, exits 0).

The in-training evaluation is due on the score's grid of env steps (evaluate.due_eval) and once more at the
end if the last update was not evaluated. A due evaluation takes a snapshot of the policy; the snapshots of
a save period (SAVE_EVERY_S of training) run together just before the save and at the end (ClassicRun), and
the metrics rows wait for them, so a row carries its `eval_return` as before, written up to one save period
later. run_dir/train_state.json (rewritten atomically) holds the figures the backend and the evaluator use:
updates, env steps, training seconds, the in-training evaluations (the learning curve the score
integrates), time_to_solve_seconds and env_steps_to_solve (the first evaluation that reached the solved
threshold; null if none did).
"""

from __future__ import annotations

import io
import json
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from autorl.classic.config import ClassicConfig
from autorl.classic.evaluate import (
    SCORE_STEPS,
    SOLVED_AT,
    TRAIN_EVAL_TOGETHER,
    curve_rows,
    due_eval,
    grid_step,
    train_eval,
)
from autorl.engine import progress
from autorl.engine.backend import ChildArgs
from autorl.io import atomic
from autorl.io.machine import peak_rss_gb

if TYPE_CHECKING:
    from autorl.classic.ppo import Snapshot, Update

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
    last_env_steps: int | None = None  # where training ends unless stopped: min(total_env_steps, horizon)
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


@dataclass
class DueEval:
    """An in-training evaluation taken, not yet run: the policy at that update, and the row it completes."""

    snapshot: Snapshot
    update: int
    env_steps: int
    seconds: float  # training clock at that update
    row: dict[str, Any] | None  # its metrics.jsonl row (None: the policy at a stop, which has none)


class ClassicRun:
    """One seed's training: PPO updates on the training clock, the in-training evaluations off it, saves.

    An evaluation that falls due takes a snapshot of the policy; the snapshots taken since the last save are
    evaluated together just before the next save and at the end (one batched run: train_eval), and the
    metrics rows from the first of them on wait for their results. So what a save writes (train_state.json's
    evaluations, metrics.jsonl) is what evaluating each policy at once would have written, and every policy
    gets the return it gets alone."""

    def __init__(
        self,
        cfg: ClassicConfig,
        seed: int,
        run_dir: Path,
        stop: threading.Event,
        horizon: int | None = None,
        rungs: list[tuple[float, int]] | None = None,
    ):
        from autorl.classic.ppo import PPO

        self.cfg, self.run_dir, self.stop = cfg, run_dir, stop
        self.weights = run_dir / "weights" / "policy.pt"
        self.weights.parent.mkdir(parents=True, exist_ok=True)
        self.ppo = PPO(cfg, seed)
        self.horizon = horizon or SCORE_STEPS[cfg.env_id]  # the env steps the score covers
        self.last_step = min(cfg.total_env_steps, self.horizon)  # the score covers no more
        self.state = TrainState(
            seed=seed,
            env_id=cfg.env_id,
            solved_threshold=SOLVED_AT[cfg.env_id],
            last_env_steps=self.last_step,
        )
        self.clock = TrainingClock()
        self.last_return: float | None = None  # mean return of the last rollout in which episodes ended
        self.due: list[DueEval] = []
        self.rows: list[dict[str, Any]] = []  # metrics rows not written yet (waiting for an evaluation)
        self.rungs = sorted(rungs or [], key=lambda r: r[1])  # (fraction, env steps)
        self.rungs_due = list(self.rungs)

    def save(self, update: int, env_steps: int) -> None:
        import torch

        buffer = io.BytesIO()
        torch.save(self.ppo.policy_state(update, env_steps), buffer)
        atomic.write_bytes(self.weights, buffer.getvalue())  # the evaluator never sees a half-written file
        self.state.weights = str(self.weights.relative_to(self.run_dir))
        self.state.peak_memory_gb = round(peak_rss_gb(), 3)
        atomic.write_text(self.run_dir / "train_state.json", self.state.to_json())
        progress.emit("saved", step=update, path=str(self.weights))

    def take_eval(self, update: int, env_steps: int, seconds: float, row: dict[str, Any] | None) -> None:
        """An in-training evaluation of the policy as it is now: one point of the curve (run later)."""
        self.due.append(DueEval(self.ppo.snapshot(), update, env_steps, seconds, row))

    def run_evals(self) -> None:
        """Run the evaluations taken, off the clock, and complete their rows."""
        if not self.due:
            return
        env_id, due = self.cfg.env_id, self.due
        groups = [due] if TRAIN_EVAL_TOGETHER[env_id] else [[d] for d in due]
        self.clock.pause()
        returns = [
            r
            for g in groups
            for r in train_eval(env_id, self.ppo.blocks_act_fn([d.snapshot for d in g]), len(g))
        ]
        self.clock.resume()
        for d, mean_return in zip(due, returns, strict=True):
            self.record_eval(d, mean_return)
        self.due.clear()

    def write_rows(self, metrics: IO[str]) -> None:
        """Write the metrics rows, unless an evaluation they wait for has not run yet."""
        if self.due or not self.rows:
            return
        for row in self.rows:
            metrics.write(json.dumps(row) + "\n")
        metrics.flush()
        self.rows.clear()

    def record_eval(self, d: DueEval, mean_return: float) -> None:
        state = self.state
        if d.row is not None:
            d.row["eval_return"] = mean_return
        state.evals.append([round(d.seconds, 4), d.env_steps, round(mean_return, 3)])
        if mean_return >= state.solved_threshold and state.time_to_solve_seconds is None:
            state.time_to_solve_seconds = round(d.seconds, 4)
            state.env_steps_to_solve = d.env_steps
            progress.emit("solved", step=d.update, seconds=round(d.seconds, 4), eval_return=mean_return)

    def run(self) -> int:
        cfg = self.cfg
        progress.emit("ready", env_id=cfg.env_id, num_updates=cfg.num_updates, batch_size=cfg.batch_size)
        self.clock.start()
        if due_eval(cfg.env_id, 0, cfg.batch_size, self.horizon):
            self.take_eval(0, 0, 0.0, None)
        with open(self.run_dir / "metrics.jsonl", "a") as metrics:
            update, env_steps = self.train(metrics)
            taken: list[float] = [d.env_steps for d in self.due] or [e[1] for e in self.state.evals]
            if not taken or taken[-1] != env_steps:  # stopped early: the policy now
                self.take_eval(update, env_steps, self.clock.seconds(), None)
            self.run_evals()
            self.write_rows(metrics)
        self.state.finished = not self.stop.is_set()
        self.state.seconds = round(self.clock.seconds(), 4)
        self.save(update, env_steps)
        self.ppo.close()
        progress.emit(
            "done", step=update, env_steps=env_steps, time_to_solve_seconds=self.state.time_to_solve_seconds
        )
        return 0

    def train(self, metrics: IO[str]) -> tuple[int, int]:
        """PPO updates until the last step, PPO's last update or a stop; the (update, env steps) reached."""
        update = env_steps = 0
        last_save = 0.0
        for u in self.ppo.run(stop=self.stop.is_set):
            update, env_steps = u.update, u.env_steps
            seconds = self.clock.seconds()
            done = env_steps + self.cfg.batch_size > self.last_step
            self.rows.append(self.record(u, seconds, done))
            self.emit_step(self.rows[-1])
            if self.rungs_due and not done and env_steps + self.cfg.batch_size > self.rungs_due[0][1]:
                self.at_rung(u.update, env_steps)
            save = seconds - last_save >= SAVE_EVERY_S
            if save:
                self.run_evals()
            self.write_rows(metrics)
            if save:
                self.save(update, env_steps)
                last_save = seconds
            if self.stop.is_set() or done:
                break
        return update, env_steps

    def at_rung(self, update: int, env_steps: int) -> None:
        """The next update passes a rung: its curve up to the rung (the evaluations due by now, run off the
        clock) goes to rung-<k>.jsonl as score rows, as the score counts them, and the run waits, paused, for
        the runner's word (autorl.engine.progress.wait_for_go); a SIGTERM meanwhile is the early abort."""
        fraction, steps = self.rungs_due.pop(0)
        k = len(self.rungs) - len(self.rungs_due)
        self.run_evals()
        rows = [
            r for r in curve_rows(self.cfg.env_id, self.state.evals, self.horizon) if grid_step(r) <= steps
        ]
        out, go = self.run_dir / f"rung-{k}.jsonl", self.run_dir / f"rung-{k}.go"
        atomic.write_text(out, "".join(json.dumps(r) + "\n" for r in rows))
        at_s = self.clock.seconds()
        self.clock.pause()
        progress.emit(
            "rung",
            rung=k,
            fraction=fraction,
            at_s=round(at_s, 4),
            step=update,
            env_steps=env_steps,
            rows=str(out),
            go=str(go),
        )
        progress.wait_for_go(go, self.stop.is_set)
        self.clock.resume()

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
        if not self.stop.is_set() and (
            due_eval(cfg.env_id, u.env_steps, cfg.batch_size, self.horizon) or done
        ):
            self.take_eval(u.update, u.env_steps, seconds, row)
        return row

    def emit_step(self, row: dict[str, Any]) -> None:
        event = {k: row[k] for k in ("loss", "lr", "seconds", "samples_per_s", "env_steps")}
        if self.last_return is not None:
            event["reward"] = round(self.last_return, 3)
        progress.emit("step", step=row["step"], **event)


def main(argv: list[str] | None = None) -> int:
    args = ChildArgs.parse(argv, "classic-track PPO training child")

    stop = threading.Event()  # acted on between vector steps: the weights saved are a complete update's
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    resolved = json.loads(args.config.read_text())
    cfg = ClassicConfig.model_validate(resolved["ppo"])

    import torch

    torch.set_num_threads(cfg.torch_threads)
    harness = resolved.get("harness", {})
    rungs = [(float(f), int(steps)) for f, steps in harness.get("rungs", [])]
    return ClassicRun(cfg, args.seed, args.run_dir, stop, harness.get("score_env_steps"), rungs).run()


if __name__ == "__main__":
    sys.exit(main())
