"""Run one training child under a wall-clock budget, in its own process group, and leave nothing behind.

The budget counts training only: the clock starts at the child's first ``ready`` or ``step`` event
(autorl.progress), so interpreter start-up and model loading are measured separately (``startup_seconds``,
capped by ``startup_cap_s``). ``pause``/``resume`` events stop the clock (in-training evaluation).
At the budget the whole group gets SIGTERM, then SIGKILL after ``grace_s``. A child silent for ``hang_s``
is killed and recorded as ``timeout``. Descendants are tracked with psutil, so a grandchild that left the
process group (setsid) is killed too: no process of a trial survives it.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import sys
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
PR_SET_PDEATHSIG = 1  # prctl option: the signal a process gets when its parent dies (Linux)


class Stop:
    """A trial-wide stop request, set from the signal handler and seen by every running child's loop.

    `graceful`: the child's group gets SIGTERM (a trainer saves its weights), SIGKILL after the grace period.
    `hard`: SIGKILL at once (a second Ctrl-C). A repeat within `SAME_REQUEST_S` of the first is the same
    request: one Ctrl-C under `uv run` reaches run.py twice (from the terminal and forwarded by uv).
    """

    SAME_REQUEST_S = 1.0

    def __init__(self) -> None:
        self.graceful = threading.Event()
        self.hard = threading.Event()
        self.signum: int | None = None
        self.first_at: float | None = None

    def request(self, signum: int) -> bool:
        """Record a stop request; returns whether it is a new one (the first, or the one that kills)."""
        now = time.monotonic()
        if self.first_at is None:
            self.first_at, self.signum = now, signum
            self.graceful.set()
            return True
        if now - self.first_at < self.SAME_REQUEST_S or self.hard.is_set():
            return False
        self.hard.set()
        return True

    def __bool__(self) -> bool:
        return self.graceful.is_set()


def _libc_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()  # loaded once here: the pre-exec hook below must not load libraries


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux), so a SIGKILLed runner leaves
    no trainer behind. Called in the child before exec, and by grandchildren (the sampler) themselves."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)


def _pre_exec(cpus: tuple[int, ...]):
    def hook() -> None:
        die_with_parent()
        if cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, cpus)

    return hook


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
            return "interrupted"
        return "ok" if self.returncode == 0 else "crash"

    @property
    def reason_text(self) -> str:
        return {
            "exited": f"child exited with code {self.returncode}",
            "budget": "stopped at the training budget",
            "hang": "killed: no output for too long (hang)",
            "startup_cap": "killed: start-up took longer than its cap",
            "interrupted": "stopped by a signal (SIGINT/SIGTERM)",
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
    stop: Stop | None = None,
) -> ChildResult:
    """Run launch.argv to completion or to the budget. Child output goes to log_path (appended).

    on_event(event, training_seconds) is called for every progress event (for the live display). `stop`,
    when set (a signal to the runner), ends the child like the budget does: SIGTERM, then SIGKILL after the
    grace period, or at once when `stop.hard` is set. The child is pinned to `launch.cpus` and dies with
    the runner (parent-death signal).
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
        preexec_fn=_pre_exec(tuple(launch.cpus)),
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
                if stop is not None and stop.hard.is_set() and not hard_killed:
                    stop_reason = stop_reason or "interrupted"
                    _signal_group(pgid, signal.SIGKILL)
                    hard_killed = True
                    term_sent_at = term_sent_at or now
                if stop_reason is None:
                    if stop is not None and stop.graceful.is_set():
                        stop_reason = "interrupted"
                    elif clock_start is None and now - started > spec.startup_cap_s:
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
        except KeyboardInterrupt:  # a caller that kept Python's default SIGINT handler
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
    kill_processes(survivors)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return len(survivors)


def end_group(proc: subprocess.Popen, grace_s: float) -> None:
    """End a child started with start_new_session and everything in its process group: SIGTERM, then SIGKILL
    after grace_s seconds; returns once the child is reaped."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()


def kill_processes(procs: list[psutil.Process], timeout_s: float = 5.0) -> None:
    """SIGKILL each process (gone ones are skipped) and wait up to timeout_s for them to go."""
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=timeout_s)


def processes_with_env(name: str, value: str) -> list[psutil.Process]:
    """Live processes whose environment has name=value: a marker a launcher puts in its child's environment
    finds every process of that run afterwards, a grandchild that left the process group included. Other
    users' processes (whose environment cannot be read) are skipped."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get(name) == value and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.Error, OSError):
            continue  # gone, or another user's process
    return found
