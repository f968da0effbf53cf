"""Run one training child under a wall-clock budget, in its own process group, and leave nothing behind.

The budget counts training only: the clock starts at the child's first ``ready`` or ``step`` event
(autorl.progress), so interpreter start-up and model loading are measured separately (``startup_seconds``,
capped by ``startup_cap_s``). ``pause``/``resume`` events stop the clock (in-training evaluation).
At the budget the whole group gets SIGTERM, then SIGKILL after ``grace_s``. A child silent for ``hang_s``
is killed and recorded as ``timeout``. Descendants are tracked with psutil, so a grandchild that left the
process group (setsid) is killed too: no process of a trial survives it.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import psutil

from autorl.backend import Launch

LOG_TAIL_LINES = 40


@dataclass
class BudgetSpec:
    budget_s: float = 600.0  # training seconds, from the first ready/step event
    startup_cap_s: float = 900.0  # start-up (imports, model load, vLLM start) before the clock starts
    hang_s: float = 300.0  # no output at all for this long = hung
    grace_s: float = 30.0  # SIGTERM -> SIGKILL


@dataclass
class ChildResult:
    stop_reason: str  # exited | budget | hang | startup_cap | interrupted
    returncode: int | None
    startup_seconds: float
    training_seconds: float
    paused_seconds: float
    steps: int
    last_step: dict[str, Any] | None
    hard_killed: bool  # the group ignored SIGTERM for grace_s
    survivors_killed: int  # descendants still alive after the child ended (all killed)
    peak_rss_gb: float
    log_tail: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """ok | crash | timeout, as the summary and the ledger record it."""
        if self.stop_reason in ("hang", "startup_cap"):
            return "timeout"
        if self.stop_reason == "budget":
            return "ok"  # stopping at the budget is the normal end of a trial
        if self.stop_reason == "interrupted":
            return "crash"
        return "ok" if self.returncode == 0 else "crash"

    @property
    def reason_text(self) -> str:
        return {
            "exited": f"child exited with code {self.returncode}",
            "budget": "stopped at the training budget",
            "hang": "killed: no output for too long (hang)",
            "startup_cap": "killed: start-up took longer than its cap",
            "interrupted": "interrupted by the user",
        }[self.stop_reason]


class _Tree:
    """Remembers every descendant ever seen, so survivors can be found after the parent died."""

    def __init__(self, pid: int) -> None:
        self.root = pid
        self.seen: dict[int, psutil.Process] = {}
        self.peak_rss = 0

    def refresh(self) -> None:
        try:
            root = psutil.Process(self.root)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        rss = 0
        for proc in procs:
            self.seen.setdefault(proc.pid, proc)
            try:
                rss += proc.memory_info().rss
            except psutil.Error:
                pass
        self.peak_rss = max(self.peak_rss, rss)

    def alive(self) -> list[psutil.Process]:
        out = []
        for proc in self.seen.values():
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    out.append(proc)
            except psutil.Error:
                pass
        return out


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reader(stream: TextIO, lines: queue.Queue[str | None]) -> None:
    for line in iter(stream.readline, ""):
        lines.put(line)
    lines.put(None)


def run_budgeted(
    launch: Launch,
    log_path: Path,
    spec: BudgetSpec,
    on_event: Callable[[dict[str, Any], float], None] | None = None,
) -> ChildResult:
    """Run launch.argv to completion or to the budget. Child output goes to log_path (appended).

    on_event(event, training_seconds) is called for every progress event (for the live display).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **launch.env, "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    proc = subprocess.Popen(
        launch.argv,
        cwd=launch.cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
        start_new_session=True,  # own session and process group: one killpg reaches the whole trial
    )
    pgid = proc.pid
    tree = _Tree(proc.pid)
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True)
    reader.start()

    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    clock_start: float | None = None  # monotonic time the budget clock started
    paused_at: float | None = None
    paused_total = 0.0
    steps = 0
    last_step: dict[str, Any] | None = None
    last_output = time.monotonic()
    stop_reason: str | None = None
    term_sent_at: float | None = None
    hard_killed = False
    last_tree_refresh = 0.0
    eof = False
    exited_at: float | None = None

    def training_seconds(now: float) -> float:
        if clock_start is None:
            return 0.0
        paused_now = (now - paused_at) if paused_at is not None else 0.0
        return max(0.0, now - clock_start - paused_total - paused_now)

    with open(log_path, "a", encoding="utf-8") as log:
        try:
            while True:
                now = time.monotonic()
                if now - last_tree_refresh > 1.0:
                    tree.refresh()
                    last_tree_refresh = now
                try:
                    line = lines.get(timeout=0.1)
                except queue.Empty:
                    line = ""
                if line is None:
                    eof = True
                elif line:
                    now = time.monotonic()
                    last_output = now
                    log.write(line)
                    log.flush()
                    tail.append(line.rstrip("\n"))
                    event = launch.parse_line(line.rstrip("\n"))
                    if event is not None:
                        kind = event.get("event")
                        if kind in ("ready", "step") and clock_start is None:
                            clock_start = now
                        if kind == "pause" and paused_at is None and clock_start is not None:
                            paused_at = now
                        if kind == "resume" and paused_at is not None:
                            paused_total += now - paused_at
                            paused_at = None
                        if kind == "step":
                            steps = int(event.get("step", steps + 1))
                            last_step = event
                        if on_event is not None:
                            on_event(event, training_seconds(now))

                now = time.monotonic()
                if proc.poll() is not None:
                    exited_at = exited_at or now
                    # A grandchild may hold the pipe open after the child exited: drain briefly, then go.
                    if eof or (now - exited_at > 2.0 and lines.empty()):
                        break
                if stop_reason is None:
                    if clock_start is None and now - started > spec.startup_cap_s:
                        stop_reason = "startup_cap"
                    elif clock_start is not None and training_seconds(now) >= spec.budget_s:
                        stop_reason = "budget"
                    elif now - last_output > spec.hang_s:
                        stop_reason = "hang"
                    if stop_reason is not None:
                        # A hung or over-long start-up child gets no grace: it is not saving anything useful.
                        if stop_reason in ("hang", "startup_cap"):
                            _signal_group(pgid, signal.SIGKILL)
                            hard_killed = True
                        else:
                            _signal_group(pgid, signal.SIGTERM)
                        term_sent_at = now
                elif (
                    not hard_killed
                    and term_sent_at is not None
                    and now - term_sent_at > spec.grace_s
                    and proc.poll() is None
                ):
                    _signal_group(pgid, signal.SIGKILL)
                    hard_killed = True
                if eof and proc.poll() is None:
                    time.sleep(0.05)  # output closed but the child is still exiting
        except KeyboardInterrupt:
            stop_reason = "interrupted"
            _signal_group(pgid, signal.SIGTERM)
            try:
                proc.wait(timeout=spec.grace_s)
            except subprocess.TimeoutExpired:
                pass
        finally:
            ended = time.monotonic()
            survivors = _kill_everything(proc, pgid, tree)
            if paused_at is not None:
                paused_total += ended - paused_at
                paused_at = None
            reader.join(timeout=2.0)

    startup = (clock_start - started) if clock_start is not None else (ended - started)
    train_s = 0.0 if clock_start is None else max(0.0, ended - clock_start - paused_total)
    if stop_reason == "budget":
        train_s = min(train_s, spec.budget_s)  # the grace period is not training
    return ChildResult(
        stop_reason=stop_reason or "exited",
        returncode=proc.returncode,
        startup_seconds=round(startup, 2),
        training_seconds=round(train_s, 2),
        paused_seconds=round(paused_total, 2),
        steps=steps,
        last_step=last_step,
        hard_killed=hard_killed,
        survivors_killed=survivors,
        peak_rss_gb=round(tree.peak_rss / 2**30, 3),
        log_tail=list(tail),
    )


def _kill_everything(proc: subprocess.Popen[str], pgid: int, tree: _Tree) -> int:
    """SIGKILL the group and every descendant ever seen; returns how many were still alive."""
    tree.refresh()
    survivors = [p for p in tree.alive() if p.pid != proc.pid]
    _signal_group(pgid, signal.SIGKILL)
    for p in survivors:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(survivors, timeout=5)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return len(survivors)
