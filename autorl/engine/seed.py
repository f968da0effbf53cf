"""A seed is the unit of work of a trial: launch -> budgeted training -> collect -> fixed eval.

`run_seed` does all of it for one seed in its own directory and returns a `SeedResult` holding everything
the trial needs; it runs the same way in the runner's process, in a thread of the local pool
(autorl/engine/pool.py) or in a Ray task on another machine. what a trial asks of it (run.py's flags,
resolved) is a `TrialRequest` (autorl/engine/trial_types.py).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorl.engine import lease
from autorl.engine.backend import WHOLE_MACHINE, Backend, Collected, Launch, Slot, TrialConfig
from autorl.engine.process import BudgetSpec, ChildResult, Stop, run_budgeted
from autorl.io import atomic
from autorl.io.jsonl import eval_rows_problem, read_jsonl
from autorl.record import rungs
from autorl.record.outcome import SeedOutcome
from autorl.record.rungs import AbortRule, RungScore

EVAL_CAP_S = 3600.0  # the fixed eval is never budgeted, only capped against a hang
STATUS_RANK = {"ok": 0, "timeout": 1, "crash": 2, "interrupted": 3}  # the trial's status: the worst seed's


@dataclass
class SeedResult:
    """One seed's training and eval, as the trial pools them."""

    index: int  # 0-based position among the trial's seeds (the directory is seed-<index>)
    seed: int
    dir: Path
    status: str = "ok"  # ok | crash | timeout | interrupted
    error: str | None = None  # the crash report shown in the trial's log
    child: ChildResult | None = None
    collected: Collected | None = None  # what the backend found after the child ended
    eval_rows: list[dict[str, Any]] = field(default_factory=list)
    eval_seconds: float = 0.0
    slot: Slot = WHOLE_MACHINE
    host: str = ""  # the machine it ran on (Ray); "" = this one
    slot_wait_s: float = 0.0  # how long it waited for its slot's CPUs and GPU share (autorl/engine/lease.py)
    held: tuple[float, float] | None = None  # when it held its slot (epoch seconds, from, until)
    log: list[str] = field(default_factory=list)  # what the seed said, in order (printed by the trial)
    rungs: list[RungScore] = field(default_factory=list)  # its rungs, scored while it trained

    @property
    def aborted(self) -> RungScore | None:
        """The rung the early abort stopped it at (None: it was not stopped so)."""
        if self.child is None or self.child.stop_reason != "aborted" or not self.rungs:
            return None
        return self.rungs[-1]

    @property
    def cause(self) -> str | None:
        """The crash report's telling line (the last naming an error), None without one."""
        error = [line.strip() for line in (self.error or "").splitlines() if line.strip()]
        telling = [
            line for line in error if any(w in line for w in ("Error", "Exception", "error:", "Killed"))
        ]
        return (telling or error)[-1] if error else None

    @property
    def evaluated(self) -> bool:
        return bool(self.eval_rows) and self.status == "ok"

    @property
    def steps(self) -> int:
        if self.child is None:
            return 0
        return max(self.child.steps, self.collected.steps if self.collected else 0)

    @property
    def peak_memory_gb(self) -> float:
        if self.child is None:
            return 0.0
        return max(self.child.peak_rss_gb, (self.collected.peak_memory_gb or 0.0) if self.collected else 0.0)


def worst_status(statuses: Iterable[str]) -> str:
    """A trial's (or a confirmation side's) status: its worst seed's; `interrupted` when none ran."""
    return max(statuses, key=STATUS_RANK.__getitem__, default="interrupted")


def write_resolved(
    backend: Backend, cfg: TrialConfig, seed_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE
) -> Path:
    """The fully resolved config the child runs with, on its slot: written here and nowhere else."""
    seed_dir.mkdir(parents=True, exist_ok=True)
    path = seed_dir / "resolved.json"
    resolved = backend.resolve(cfg, seed_dir, seed, slot)
    atomic.write_text(path, json.dumps(resolved, indent=2, default=str) + "\n")
    return path


def run_eval(
    launch: Launch, out: Path, log: Path, stop: Stop | None = None
) -> tuple[list[dict[str, Any]], float, str | None]:
    """Run the backend's fixed eval command as a capped child; returns rows, seconds, error."""
    out.unlink(missing_ok=True)
    spec = BudgetSpec(budget_s=math.inf, startup_cap_s=EVAL_CAP_S, hang_s=EVAL_CAP_S, grace_s=10.0)
    started = time.monotonic()
    result = run_budgeted(launch, log, spec, stop=stop)
    seconds = time.monotonic() - started
    if result.status != "ok" or not out.exists():
        tail = "\n".join(result.log_tail[-15:])
        return [], seconds, f"eval failed ({result.reason_text}):\n{tail}"
    rows = read_jsonl(out)
    if problem := eval_rows_problem(rows):
        return [], seconds, f"eval failed: {out}: {problem}"
    return rows, seconds, None


def crash_report(result: SeedResult) -> str:
    child, collected = result.child, result.collected
    assert child is not None
    who = f" in {collected.failed_component}" if collected and collected.failed_component else ""
    tail = "\n".join(f"    {line}" for line in child.log_tail[-25:])
    return f"CRASH{who}: {child.reason_text}. Last lines of {result.dir / 'run.log'}:\n{tail}"


@dataclass(frozen=True)
class Judge:
    """How a seed's rungs are judged: the rule (None: scored, never stopped) and the trial's abort flag, set
    when one of its seeds is aborted, so that its seeds still running stop at their next rung (the local pool;
    a Ray task has none)."""

    rule: AbortRule | None = None
    trial_aborted: threading.Event | None = None


@dataclass
class RungScorer:
    """One seed's `on_rung`: scores the rung as the end is scored (a child's own rows, or its weights
    through the backend's eval), asks the rule, keeps the score in `result.rungs`; returns whether the child
    goes on."""

    result: SeedResult
    backend: Backend
    cfg: TrialConfig
    split: str
    stop: Stop | None
    judge: Judge

    def __call__(self, event: dict[str, Any]) -> bool:
        score = self._score(event)
        flag = self.judge.trial_aborted
        if flag is not None and flag.is_set():
            score = score.model_copy(update={"decision": rungs.ABORT, "error": "another seed was aborted"})
        elif self.judge.rule is not None:
            score = self.judge.rule.judge(score)
        self.result.rungs.append(score)
        self.result.log.append(f"seed {self.result.seed}: {score.describe()}")
        if score.decision == rungs.ABORT:
            if flag is not None:
                flag.set()
            return False
        return True

    def _score(self, event: dict[str, Any]) -> RungScore:
        from autorl.record.stats import eval_score

        k, seed_dir = int(event["rung"]), self.result.dir
        error, started = None, time.monotonic()
        if "rows" in event:  # the child scored itself (classic: its curve up to the rung)
            out = Path(event["rows"])
            rows = read_jsonl(out) if out.exists() else []
            error = eval_rows_problem(rows) if rows else f"{out.name} missing"
        else:  # weights to evaluate as the end is (llm)
            out = seed_dir / f"eval-rung-{k}.jsonl"
            weights = Path(event["weights"])
            launch = self.backend.eval_command(self.cfg, weights, out, self.result.slot, self.split)
            rows, _, error = run_eval(launch, out, out.with_suffix(".log"), self.stop)
            shutil.rmtree(weights, ignore_errors=True)
        return RungScore(
            rung=k,
            fraction=float(event["fraction"]),
            at_s=float(event.get("at_s", 0.0)),
            step=int(event.get("step", 0)),
            eval_score=None if error else round(eval_score(rows), 6),
            eval_file=out.name,
            eval_seconds=round(time.monotonic() - started, 3),
            error=error.splitlines()[0].rstrip(":") if error else None,  # the log's tail follows the colon
        )


def run_seed(
    backend: Backend,
    cfg: TrialConfig,
    seed: int,
    index: int,
    seed_dir: Path,
    spec: BudgetSpec,
    slot: Slot = WHOLE_MACHINE,
    on_event: Callable[[dict[str, Any], float], None] | None = None,
    stop: Stop | None = None,
    split: str = "eval",
    judge: Judge | None = None,
) -> SeedResult:
    """Train one seed under the budget on `slot`, then evaluate its latest saved weights on `split` (the
    sealed "test" split only for `autorl confirm`). The rungs the config asks for are scored as the seed
    reaches them (`judge`: whether one stops it, the early abort; an aborted seed is not evaluated at the
    end).

    A stopped trial (`stop` set) ends the training like the budget does (the trainer saves) and starts no
    eval: the seed is `interrupted`.
    """
    result = SeedResult(index=index, seed=seed, dir=seed_dir, slot=slot)
    try:
        with lease.hold(slot, seed_dir, stop) as held:  # its CPUs and GPU share, machine-wide
            if held is None:
                result.status = "interrupted"
                result.log.append(f"seed {seed}: stopped while it waited for {slot.describe()}")
                return result
            result.slot_wait_s, waited_for = held
            if waited_for:
                result.log.append(
                    f"seed {seed}: waited {result.slot_wait_s:.0f} s for {slot.describe()} ({waited_for})"
                )
            since = time.time()
            try:
                scorer = RungScorer(result, backend, cfg, split, stop, judge or Judge())
                return train_and_evaluate(result, backend, cfg, spec, on_event, stop, split, scorer)
            finally:
                result.held = (since, time.time())
    finally:
        if result.rungs:
            rungs.write(result.dir, result.rungs)
        write_outcome(result)


def write_outcome(result: SeedResult) -> None:
    """seed-<k>/outcome.json: how the seed ended, for `autorl show` (its only writer; Ray brings it back)."""
    child = result.child
    SeedOutcome(
        seed=result.seed,
        status=result.status,
        stop_reason=child.stop_reason if child else None,
        reason=child.reason_text if child else None,
        error=result.cause,
        training_seconds=round(child.training_seconds, 3) if child else None,
        startup_seconds=round(child.startup_seconds, 3) if child else None,
        steps=result.steps,
        eval_seconds=round(result.eval_seconds, 3) if result.eval_rows else None,
        peak_rss_gb=round(child.peak_rss_gb, 3) if child else None,
        cpu_wait_share=child.cpu_wait_share if child else None,
        slot_wait_seconds=round(result.slot_wait_s, 3),
        slot=list(result.slot.cpus),
        slot_held=(round(result.held[0], 2), round(result.held[1], 2)) if result.held else None,
    ).write(result.dir)


def finished_rows(seed_dir: Path, seed: int) -> list[dict[str, Any]] | None:
    """The eval rows of a seed that finished in an earlier run (a stopped run resumed: its outcome `ok` for
    this seed, its eval.jsonl whole), each with its `seed` as a fresh seed's are (the statistics tell seeds
    apart by it); None when it must run."""
    return outcome_rows(SeedOutcome.read(seed_dir), seed_dir, seed)


def outcome_rows(outcome: SeedOutcome, seed_dir: Path, seed: int) -> list[dict[str, Any]] | None:
    """`finished_rows` given the seed's outcome.json, already read."""
    if outcome.status != "ok" or outcome.seed != seed or not (seed_dir / "eval.jsonl").exists():
        return None
    rows = read_jsonl(seed_dir / "eval.jsonl")
    return None if eval_rows_problem(rows) else [{**row, "seed": seed} for row in rows]


def finished_seed(
    earlier: Path, index: int, seed: int, seed_dir: Path, backend: Backend, cfg: TrialConfig
) -> SeedResult | None:
    """Seed `seed` of a stopped trial's run directory `earlier`, kept by the same config's next trial in the
    same context when it finished there (trained to its end and evaluated, `finished_rows`): its files
    hard-linked into `seed_dir` (they are never written again), its result read back from them as
    `run_seed` returned it. None when it must run."""
    there = earlier / f"seed-{index}"
    outcome = SeedOutcome.read(there)
    if (rows := outcome_rows(outcome, there, seed)) is None:
        return None
    shutil.copytree(there, seed_dir, copy_function=_link_or_copy)
    child = ChildResult(
        stop_reason=outcome.stop_reason or "budget",
        returncode=0,
        startup_seconds=outcome.startup_seconds or 0.0,
        training_seconds=outcome.training_seconds or 0.0,
        paused_seconds=0.0,
        steps=outcome.steps or 0,
        last_step=None,
        hard_killed=False,
        survivors_killed=0,
        peak_rss_gb=outcome.peak_rss_gb or 0.0,
        cpu_wait_share=outcome.cpu_wait_share,
    )
    result = SeedResult(index, seed, seed_dir, child=child, eval_rows=rows)
    result.eval_seconds = outcome.eval_seconds or 0.0
    result.collected = backend.collect(cfg, seed_dir)
    result.rungs = rungs.read(seed_dir)
    return result


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or one without hard links
        shutil.copy2(src, dst)


def train_and_evaluate(
    result: SeedResult,
    backend: Backend,
    cfg: TrialConfig,
    spec: BudgetSpec,
    on_event: Callable[[dict[str, Any], float], None] | None,
    stop: Stop | None,
    split: str,
    on_rung: RungScorer,
) -> SeedResult:
    """The seed on its slot: the child launched and followed under the budget (its rungs scored on the way),
    its weights collected, then its fixed eval (none after a stop or an abort); `result` filled in."""
    seed, slot, seed_dir = result.seed, result.slot, result.dir
    write_resolved(backend, cfg, seed_dir, seed, slot)
    launch = backend.launch(cfg, seed_dir, seed, slot)
    result.child = child = run_budgeted(
        launch, seed_dir / "run.log", spec, on_event=on_event, stop=stop, on_rung=on_rung
    )
    result.status = child.status
    result.log.append(
        f"seed {seed}: {child.reason_text}, {child.training_seconds:.0f} s trained, {child.steps} steps"
    )
    result.collected = backend.collect(cfg, seed_dir)
    result.log.extend(result.collected.notes)
    if result.status == "crash":
        result.error = crash_report(result)
    if result.status == "interrupted" or (stop is not None and stop):
        result.status = "interrupted"
        return result
    if result.aborted is not None:  # its rung is its record: an end it never reached is not scored
        return result
    if result.collected.weights_dir is None:
        if result.status == "ok":
            result.status = "crash"
        no_weights = "no weights were saved: nothing to evaluate"
        result.error = f"{result.error.rstrip()}\n{no_weights}" if result.error else no_weights
        return result
    result.log.append(f"evaluating {result.collected.weights_dir}")
    out = seed_dir / "eval.jsonl"
    rows, result.eval_seconds, error = run_eval(
        backend.eval_command(cfg, result.collected.weights_dir, out, slot, split),
        out,
        seed_dir / "eval.log",
        stop,
    )
    if stop is not None and stop:
        result.status = "interrupted"
        return result
    if error:
        result.status, result.error = "crash", error
    for row in rows:
        row["seed"] = seed
    result.eval_rows = rows
    if result.collected.snapshots and not error:
        evaluate_along(result, backend, cfg, spec.budget_s, stop, split)
        if stop is not None and stop:
            result.status = "interrupted"
    return result


def evaluate_along(
    result: SeedResult, backend: Backend, cfg: TrialConfig, budget_s: float, stop: Stop | None, split: str
) -> None:
    """The snapshots the trainer kept along the run (`autorl fidelity`'s long seeds), each evaluated as the
    end was, into eval-at-<s>s.jsonl; along.jsonl gets one row per point, the seed's score curve: at_s (the
    training seconds), fraction (of the budget), step, eval_score (or error) and eval_file. A snapshot's
    weights are removed once evaluated."""
    from autorl.record.stats import eval_score

    assert result.collected is not None
    points = []
    for snap in result.collected.snapshots:
        out = result.dir / f"eval-at-{snap.at_s:g}s.jsonl"
        log = out.with_suffix(".log")
        rows, seconds, error = run_eval(
            backend.eval_command(cfg, snap.path, out, result.slot, split), out, log, stop
        )
        if stop is not None and stop:
            return
        point: dict[str, Any] = {
            "at_s": snap.at_s,
            "fraction": round(snap.at_s / budget_s, 6),
            "step": snap.step,
            "eval_file": out.name,
            "eval_seconds": round(seconds, 3),
        }
        if error:
            point["error"] = error.splitlines()[0]
            result.log.append(f"the snapshot at {snap.at_s:g} s: {error}")
        else:
            point["eval_score"] = eval_score(rows)
            shutil.rmtree(snap.path, ignore_errors=True)
        points.append(point)
    atomic.write_text(result.dir / "along.jsonl", "".join(json.dumps(p) + "\n" for p in points))
