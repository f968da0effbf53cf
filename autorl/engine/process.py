"""Run one training child under a wall-clock budget, in its own process group, and leave nothing behind.

The budget counts training only: the clock starts at the child's first ``ready`` or ``step`` event
(autorl.engine.progress), so interpreter start-up and model loading are measured separately
(``startup_seconds``, capped by ``startup_cap_s``). ``pause``/``resume`` events stop the clock (in-training
evaluation). At the budget the whole group gets SIGTERM, then SIGKILL after ``grace_s``. A child silent for
``hang_s`` is killed and recorded as ``timeout``. Descendants are tracked with psutil, so a grandchild that
left the process group (setsid) is killed too: no process of a trial survives it.
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
from typing import IO, Any

import psutil

from autorl.engine import warm
from autorl.engine.backend import Launch
from autorl.engine.warm import WarmChild

LOG_TAIL_LINES = 40
PR_SET_PDEATHSIG = 1  # prctl option: the signal a process gets when its parent dies (Linux)
Child = (
    subprocess.Popen[str] | WarmChild
)  # started cold, or forked from a warm starter (autorl/engine/warm.py)


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


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send `sig` (SIGKILL) to this process when its parent dies (Linux), so a SIGKILLed
    runner leaves no trainer behind. Called in the child before exec, and by grandchildren (the sampler)
    themselves; `autorl swarm`'s loops get SIGTERM, on which each ends its agent first."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, sig)


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
    stop_reason: str  # exited | budget | aborted | hang | startup_cap | interrupted
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
    # The share of its training time during which tasks on this machine waited for a CPU (cpu_wait_share);
    # None where the kernel does not say (no /proc/pressure/cpu) or the clock never started.
    cpu_wait_share: float | None = None

    @property
    def status(self) -> str:
        """ok | crash | timeout, as the summary and the ledger record it."""
        if self.stop_reason in ("hang", "startup_cap"):
            return "timeout"
        if self.stop_reason in ("budget", "aborted"):
            return "ok"  # stopping at the budget (or at a rung, by the rule) is a normal end
        if self.stop_reason == "interrupted":
            return "interrupted"
        return "ok" if self.returncode == 0 else "crash"

    @property
    def reason_text(self) -> str:
        return {
            "exited": f"child exited with code {self.returncode}",
            "budget": "stopped at the training budget",
            "aborted": "stopped at a rung: behind the reference (the early abort)",
            "hang": "killed: no output for too long (hang)",
            "startup_cap": "killed: start-up took longer than its cap",
            "interrupted": "stopped by a signal (SIGINT/SIGTERM)",
        }[self.stop_reason]


class _Tree:
    """Remembers every descendant ever seen, so survivors can be found after the parent died."""

    REFRESH_S = 1.0  # how often the running loop looks for new descendants and their memory

    def __init__(self, pid: int) -> None:
        self.root = pid
        self.seen: dict[int, psutil.Process] = {}
        self.peak_rss = 0
        self.refreshed_at = 0.0

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

    def refresh_every_second(self, now: float) -> None:
        if now - self.refreshed_at > self.REFRESH_S:
            self.refresh()
            self.refreshed_at = now

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


PSI_CPU = Path("/proc/pressure/cpu")  # Linux pressure stall information (4.20+): time tasks waited for a CPU
PRESSURE_VAR = "AUTORL_CPU_PRESSURE"  # a file read instead (a container's cpu.pressure); "": none (the tests)


def cpu_stall_us() -> int | None:
    """Microseconds (since boot) during which at least one task on this machine was runnable but waiting
    for a CPU (the `some` line's total, of PSI_CPU or PRESSURE_VAR's file); None where the kernel does not
    report it or PRESSURE_VAR is empty (no seed is then `contended`)."""
    try:
        some = Path(os.environ.get(PRESSURE_VAR, PSI_CPU) or "/").read_text().splitlines()[0]
        return int(some.rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None


def cpu_wait_share(stall_start: int | None, stall_end: int | None, seconds: float) -> float | None:
    """The share of `seconds` during which some task waited for a CPU: 0 on a machine that only runs this
    child on enough CPUs; well above it when other work (or an oversubscribed plan) shares them."""
    if stall_start is None or stall_end is None or seconds <= 0:
        return None
    return round(min(1.0, max(0.0, (stall_end - stall_start) / 1e6 / seconds)), 4)


class _Clock:
    """The budget clock: starts at the child's first `ready` or `step` event, stands still between `pause`
    and `resume`. Start-up is the time from the launch to the clock's start. It also reads the machine's
    CPU stall counter when it starts and ends (`cpu_wait_share`)."""

    def __init__(self, launched: float) -> None:
        self.launched = launched
        self.started: float | None = None  # monotonic time the budget clock started
        self.paused_at: float | None = None
        self.paused_total = 0.0
        self.stall_start: int | None = None
        self.stall_end: int | None = None

    @property
    def running(self) -> bool:
        return self.started is not None

    def on_event(self, kind: str | None, now: float) -> None:
        if kind in ("ready", "step") and self.started is None:
            self.started = now
            self.stall_start = cpu_stall_us()
        if kind == "pause" and self.paused_at is None and self.started is not None:
            self.paused_at = now
        if kind == "resume" and self.paused_at is not None:
            self.paused_total += now - self.paused_at
            self.paused_at = None

    def training(self, now: float) -> float:
        """Training seconds so far: since the start, pauses excluded."""
        if self.started is None:
            return 0.0
        paused_now = (now - self.paused_at) if self.paused_at is not None else 0.0
        return max(0.0, now - self.started - self.paused_total - paused_now)

    def end(self, ended: float) -> None:
        """The child is gone: a pause still open ends here."""
        self.stall_end = cpu_stall_us()
        if self.paused_at is not None:
            self.paused_total += ended - self.paused_at
            self.paused_at = None

    def startup(self, ended: float) -> float:
        return (self.started if self.started is not None else ended) - self.launched


class _Output:
    """The output pump: a thread reads the child's merged stdout/stderr into a queue (the child never
    blocks on a full pipe); the loop takes each line, appends it to the log and keeps the tail and the time
    of the last output (the hang timer)."""

    def __init__(self, stream: IO[str], log: IO[str]) -> None:
        self.log = log
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self.last_output = time.monotonic()
        self.eof = False
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in iter(stream.readline, ""):
            self.lines.put(line)
        self.lines.put(None)

    def next_line(self, timeout: float) -> str | None:
        """The next line (logged, without its newline), or None when none came within timeout."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            self.eof = True
            return None
        self.last_output = time.monotonic()
        self.log.write(line)
        self.log.flush()
        self.tail.append(line.rstrip("\n"))
        return line.rstrip("\n")

    def done(self, exited_for: float) -> bool:
        """Nothing more will come: the pipe closed, or the child exited over 2 s ago and nothing is queued
        (a grandchild may hold the pipe open after the child exited: drain briefly, then go)."""
        return self.eof or (exited_for > 2.0 and self.lines.empty())


class _Progress:
    """The child's progress events (autorl.engine.progress): they drive the clock, count steps and reach
    on_event(event, training_seconds) (the live display)."""

    def __init__(
        self,
        parse_line: Callable[[str], dict[str, Any] | None],
        clock: _Clock,
        on_event: Callable[[dict[str, Any], float], None] | None,
    ) -> None:
        self.parse_line, self.clock, self.on_event = parse_line, clock, on_event
        self.steps = 0
        self.last_step: dict[str, Any] | None = None

    def take(self, line: str, now: float) -> dict[str, Any] | None:
        """The line's event (None for a plain line), after it moved the clock and reached on_event."""
        event = self.parse_line(line)
        if event is None:
            return None
        kind = event.get("event")
        self.clock.on_event(kind, now)
        if kind == "step":
            self.steps = int(event.get("step", self.steps + 1))
            self.last_step = event
        if self.on_event is not None:
            self.on_event(event, self.clock.training(now))
        return event


class _Stopper:
    """The one place that decides why the child stops and signals its process group: the stop reason is set
    and SIGTERM/SIGKILL sent only here.

    A stop request or the budget: SIGTERM (the trainer saves its weights), SIGKILL after the grace period.
    A hang or an over-long start-up: SIGKILL at once (such a child is not saving anything useful). A hard
    stop request (a second signal): SIGKILL at once. At the end, `finish` kills whatever is left.
    """

    def __init__(self, proc: Child, spec: BudgetSpec, stop: Stop) -> None:
        self.proc, self.pgid, self.spec, self.stop = proc, proc.pid, spec, stop
        self.reason: str | None = None  # exited (None) | budget | aborted | hang | startup_cap | interrupted
        self.term_sent_at: float | None = None
        self.hard_killed = False  # SIGKILL was sent before the child ended

    def check(self, now: float, clock: _Clock, last_output: float) -> None:
        """Called on every turn of the loop: stop, or escalate a stop whose grace period is over."""
        if self.stop.hard.is_set() and not self.hard_killed:
            self.reason = self.reason or "interrupted"
            self._kill(now)
        if self.reason is None:
            self.reason = self._why(now, clock, last_output)
            if self.reason in ("hang", "startup_cap"):
                self._kill(now)
            elif self.reason is not None:
                _signal_group(self.pgid, signal.SIGTERM)
                self.term_sent_at = now
        elif (
            not self.hard_killed
            and self.term_sent_at is not None
            and now - self.term_sent_at > self.spec.grace_s
            and self.proc.poll() is None
        ):
            self._kill(now)

    def _why(self, now: float, clock: _Clock, last_output: float) -> str | None:
        if self.stop.graceful.is_set():
            return "interrupted"
        if not clock.running and now - clock.launched > self.spec.startup_cap_s:
            return "startup_cap"
        if clock.running and clock.training(now) >= self.spec.budget_s:
            return "budget"
        if now - last_output > self.spec.hang_s:
            return "hang"
        return None

    def _kill(self, now: float) -> None:
        _signal_group(self.pgid, signal.SIGKILL)
        self.hard_killed = True
        self.term_sent_at = self.term_sent_at or now

    def abort(self, now: float) -> None:
        """The runner's rule stopped the child at a rung (the early abort): it ends as at the budget."""
        if self.reason is None:
            self.reason = "aborted"
            _signal_group(self.pgid, signal.SIGTERM)
            self.term_sent_at = now

    def interrupt(self) -> None:
        """A KeyboardInterrupt in the runner (a caller that kept Python's default SIGINT handler)."""
        self.reason = "interrupted"
        _signal_group(self.pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=self.spec.grace_s)
        except subprocess.TimeoutExpired:
            pass

    def finish(self, tree: _Tree) -> int:
        """SIGKILL the group and every descendant ever seen; returns how many were still alive."""
        tree.refresh()
        survivors = [p for p in tree.alive() if p.pid != self.proc.pid]
        _signal_group(self.pgid, signal.SIGKILL)
        kill_processes(survivors)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return len(survivors)


def _spawn(launch: Launch, spec: BudgetSpec, stop: Stop) -> Child:
    """launch.argv in its own session and process group (one killpg reaches the whole trial), output merged
    into one pipe, pinned to launch.cpus, dying with the runner: forked from a warm starter when one serves
    the launch (autorl/engine/warm.py; waiting for its imports counts as start-up, at most half the cap, so a
    stuck starter leaves a cold start the other half), else a new interpreter."""
    if (child := warm.fork(launch, spec.startup_cap_s / 2, stop.graceful.is_set)) is not None:
        return child
    return subprocess.Popen(
        launch.argv,
        cwd=launch.cwd,
        env=launch.child_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
        start_new_session=True,
        preexec_fn=_pre_exec(tuple(launch.cpus)),
    )


OnRung = Callable[[dict[str, Any]], bool]  # a `rung` event -> whether the child goes on


def _at_rung(event: dict[str, Any], on_rung: OnRung | None, output: _Output, stopper: _Stopper) -> None:
    """The child waits paused at a rung: the runner scores it and lets it go on (creates the event's `go`
    file) or aborts it. Scoring took time in which the child said nothing: that is no hang."""
    go = on_rung(event) if on_rung is not None else True
    if go:
        Path(event["go"]).touch()
    else:
        stopper.abort(time.monotonic())
    output.last_output = time.monotonic()


def _watch(
    proc: Child,
    output: _Output,
    progress: _Progress,
    stopper: _Stopper,
    tree: _Tree,
    on_rung: OnRung | None = None,
) -> None:
    """The running loop: take output, stop at a limit, return once the child is gone and its output read."""
    exited_at: float | None = None
    while True:
        tree.refresh_every_second(time.monotonic())
        if (line := output.next_line(timeout=0.1)) is not None:
            event = progress.take(line, output.last_output)
            if event is not None and event.get("event") == "rung" and stopper.reason is None:
                _at_rung(event, on_rung, output, stopper)
        now = time.monotonic()
        if proc.poll() is not None:
            exited_at = exited_at or now
            if output.done(now - exited_at):
                return
        stopper.check(now, progress.clock, output.last_output)
        if output.eof and proc.poll() is None:
            time.sleep(0.05)  # output closed but the child is still exiting


def run_budgeted(
    launch: Launch,
    log_path: Path,
    spec: BudgetSpec,
    on_event: Callable[[dict[str, Any], float], None] | None = None,
    stop: Stop | None = None,
    on_rung: OnRung | None = None,
) -> ChildResult:
    """Run launch.argv to completion or to the budget. Child output goes to log_path (appended).

    on_event(event, training_seconds) is called for every progress event (for the live display);
    on_rung(event) for a `rung` event, while the child waits: False stops it (stop reason `aborted`). `stop`,
    when set (a signal to the runner), ends the child like the budget does: SIGTERM, then SIGKILL after the
    grace period, or at once when `stop.hard` is set; set before the call, no child is started. The child is
    pinned to `launch.cpus` and dies with the runner (parent-death signal).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    stop = stop if stop is not None else Stop()  # Stop is falsy until set
    if stop:  # requested before this launch: nothing is started (no child, no warm starter)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write("[autorl] not started: the trial was stopped before this launch\n")
        return ChildResult("interrupted", None, 0.0, 0.0, 0.0, 0, None, False, 0, 0.0)
    clock = _Clock(time.monotonic())
    proc = _spawn(launch, spec, stop)
    tree = _Tree(proc.pid)
    stopper = _Stopper(proc, spec, stop)
    progress = _Progress(launch.parse_line, clock, on_event)
    with open(log_path, "a", encoding="utf-8") as log:
        assert proc.stdout is not None
        output = _Output(proc.stdout, log)
        try:
            _watch(proc, output, progress, stopper, tree, on_rung)
        except KeyboardInterrupt:
            stopper.interrupt()
        finally:
            ended = time.monotonic()
            survivors = stopper.finish(tree)
            clock.end(ended)
            output.thread.join(timeout=2.0)
    train_s = 0.0 if clock.started is None else max(0.0, ended - clock.started - clock.paused_total)
    if stopper.reason == "budget":
        train_s = min(train_s, spec.budget_s)  # the grace period is not training
    return ChildResult(
        stop_reason=stopper.reason or "exited",
        returncode=proc.returncode,
        startup_seconds=round(clock.startup(ended), 2),
        training_seconds=round(train_s, 2),
        paused_seconds=round(clock.paused_total, 2),
        steps=progress.steps,
        last_step=progress.last_step,
        hard_killed=stopper.hard_killed,
        survivors_killed=survivors,
        peak_rss_gb=round(tree.peak_rss / 2**30, 3),
        log_tail=list(output.tail),
        cpu_wait_share=cpu_wait_share(clock.stall_start, clock.stall_end, ended - (clock.started or ended)),
    )


def end_group(proc: subprocess.Popen, grace_s: float) -> None:
    """End a child started with start_new_session and everything in its process group: SIGTERM, then SIGKILL
    after grace_s seconds; returns once the child is reaped and no process of its group is left (a trial the
    agent started records its row before it goes: the loop's next look at the ledger sees it)."""
    deadline = time.monotonic() + grace_s
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    _signal_group(proc.pid, signal.SIGKILL)  # what is left past the grace (nothing, normally)


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (a zombie waiting for its reaper does not)."""
    for p in psutil.process_iter(["status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(p.pid) == pgid:
                return True
        except (OSError, psutil.Error):
            continue
    return False


def kill_processes(procs: list[psutil.Process], timeout_s: float = 5.0) -> None:
    """SIGKILL each process (gone ones are skipped) and wait up to timeout_s for them to go."""
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=timeout_s)


def kill_marked(name: str, value: str, timeout_s: float = 10.0) -> list[int]:
    """SIGKILL every process whose environment has name=value (this one spared), looking again until a look
    finds none or `timeout_s` passes: a process killed between two looks may have started another (a Ray
    raylet its workers), which the next look finds. Returns the pids killed."""
    killed: list[int] = []
    deadline = time.monotonic() + timeout_s
    while procs := [p for p in processes_with_env(name, value) if p.pid != os.getpid()]:
        kill_processes(procs, timeout_s=max(0.0, min(5.0, deadline - time.monotonic())))
        killed += [p.pid for p in procs if p.pid not in killed]
        if time.monotonic() > deadline:
            break
    return killed


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
