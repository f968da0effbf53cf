"""Warm starts: a trial's children forked from a process that has already imported torch and the harness.

A cold child pays the interpreter and its imports on every launch: `import torch` and the `torch._dynamo`
that the first optimizer pulls in take about 5-12 s on a 2-core CPU, transformers 2-3 s more, and a seed
launches two children (training, then the fixed eval). On a classic trial that was most of a seed's wall
time. Here a *starter* process per distinct (Python, working directory, environment, modules) imports the
launch's `warm` modules once; each launch is then a fork of it that runs `python -m MODULE ARGS` as a fresh
interpreter would, without the imports. A `module:function` entry is called once after the imports, before the
starter serves (a prewarm: the embedded trainer's compiles, autorl/llm/embedded/prewarm.py); a child finds
what it left in memory.

A starter outlives its trial: it waits `AUTORL_WARM_KEEP` seconds (default 600) for the next trial's
launches, so an agent's next `uv run run.py` in the same directory forks at once instead of waiting for the
imports again; 0 ends it with its trial. It listens on a Linux abstract socket named after its key, answers
only its own user (SO_PEERCRED), and replaces itself when a module it imported changed on disk (an edited
harness or a `uv sync` never runs stale code). It holds no GPU, no file and no child between trials.

What a forked child keeps from a cold one: its own session and process group (the runner's killpg reaches it
and only it), its merged stdout/stderr on a pipe the runner reads, stdin from /dev/null, its slot's cores, the
runner's environment with the launch's, death with its parent (the starter), a fresh `random` state, and an
exit code reported as Popen reports one (-N for signal N). When the runner's connection closes (the trial
ended, or the runner was killed, even by SIGKILL) the starter kills what that runner still had running. It
ends without the interpreter's teardown of its modules (`_run`). The runner follows it through `WarmChild`,
which answers the part of Popen that autorl.engine.process uses. The budget clock, the start-up figure (from
the launch to the child's `ready`, including a new starter's one-time imports for the first child) and
everything recorded keep their meaning.

Warm starts are on inside `with starters():` (a trial's base eval and seeds, `autorl confirm`, a Ray seed
task, whose starter is its own), on Linux, for launches that name their modules (`Launch.warm`); anywhere
else, or when a starter cannot serve (its imports fail, or it would have touched CUDA, which a fork cannot
inherit), the launch runs cold, as before.
`AUTORL_WARM=0` turns them off.

Protocol, on a SOCK_SEQPACKET connection, one JSON message per packet:
  starter -> runner: {"ready": true} or {"error": text, "stale": bool} once, on accepting (after its imports)
  runner -> starter: {"module", "args", "cwd", "env", "cpus"} with the write end of the child's output pipe
  starter -> runner: {"pid": N} per request and {"exited": N, "code": C} when child N ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from autorl.engine.backend import Launch

ENV_SWITCH = "AUTORL_WARM"  # "0": every launch cold
KEEP_VAR = "AUTORL_WARM_KEEP"  # seconds a starter waits, idle, for the next trial; 0: it ends with its trial
KEEP_DEFAULT_S = 600.0
FIRST_CONTACT_S = 60.0  # a new starter waits at least this long for its first connection
CONNECT_S = 30.0  # a new starter's socket must be listening within this time (it binds before importing)
MAX_MESSAGE = 1 << 20
REAP_EVERY_S = 0.02  # how often the starter looks for ended children (the exit code's latency)
# Shell bookkeeping that differs between two commands of one session, and the terminal's size (two
# terminals, or one resized; a serial pytest run's children saw COLUMNS and LINES that its os.environ did
# not hold): not part of a starter's key (a child still gets the runner's values).
VOLATILE_ENV = frozenset({"_", "OLDPWD", "PWD", "SHLVL", "COLUMNS", "LINES"})
STALE = "the starter's modules changed on disk since it imported them"
GROUP_PREFIX = "autorl-warm-"
SUPERSEDED_EVERY_S = 2.0  # how often an idle starter looks for a newer one of its group (then it ends)
WAITING_NOTE_S = 15.0  # a launch waiting this long for a starter's imports and prewarms says so, and again


class StarterError(RuntimeError):
    """The starter cannot serve (its imports failed, it died or it stopped answering): launch cold."""


def keep_problem() -> str | None:
    """Why AUTORL_WARM_KEEP is unusable; None when it is unset or a number of seconds >= 0."""
    text = os.environ.get(KEEP_VAR)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        return f"{KEEP_VAR}={text!r}: a number of seconds >= 0 (0: a warm starter ends with its trial)"
    return None


def keep_seconds() -> float:
    """How long a starter started now waits, idle, for the next trial (keep_problem() refuses bad values
    before a trial starts)."""
    return KEEP_DEFAULT_S if keep_problem() is not None else float(os.environ.get(KEEP_VAR, KEEP_DEFAULT_S))


def _name(launch: Launch, env: dict[str, str], salt: str = "") -> str:
    """The abstract socket name of the starter that serves `launch`: one per user and what its imports may
    depend on, as `autorl-warm-UID-GROUP-ENV`. GROUP: the interpreter, the working directory, the modules,
    the launch's own environment (a GPU slot's devices) and `salt` (a private pool's: no other runner finds
    its starters, and no starter of another group ends for them); ENV: the rest of the runner's
    environment."""

    def digest(parts: list[str]) -> str:
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]

    group = digest(
        [
            sys.executable,
            str(launch.cwd),
            *launch.warm,
            "\0",
            *sorted(f"{k}={v}" for k, v in launch.env.items()),
            *([salt] if salt else []),  # a name no other pool computes
        ]
    )
    rest = digest(sorted(f"{k}={v}" for k, v in env.items() if k not in VOLATILE_ENV))
    return f"{GROUP_PREFIX}{os.getuid()}-{group}-{rest}"


def peer(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket."""
    pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return pid, uid


class WarmChild:
    """A forked child as autorl.engine.process sees a Popen: pid, stdout, poll, wait, kill, returncode."""

    def __init__(self, pid: int, stdout_fd: int) -> None:
        self.pid = pid
        self.stdout = open(stdout_fd, encoding="utf-8", errors="replace")  # noqa: SIM115 (closed by the reader)
        self.returncode: int | None = None
        self._exited = threading.Event()

    def _ended(self, code: int) -> None:
        self.returncode = code
        self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"warm child {self.pid}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)


_STARTED: list[subprocess.Popen[bytes]] = []  # starters this process started that may outlive their trial
_KEPT: set[str] = set()  # the addresses of the starters this process's trials left waiting for the next one


class _Starter:
    """The runner's connection to one starter process: the one serving its key, else a new one."""

    def __init__(self, launch: Launch, salt: str = "") -> None:
        self.lock = threading.Lock()  # one request at a time: a request's reply is the next "pid" message
        self.ready = threading.Event()
        self.error: str | None = None
        self.retry = False  # the starter closed before it was ready without being new: start another
        self.pid = 0  # the starter's
        self.pids: list[int] = []  # replies to requests, in order
        self.replied = threading.Condition()
        self.children: dict[int, WarmChild] = {}
        self.early_exits: dict[int, int] = {}  # a child that ended before its WarmChild was registered
        self.started: subprocess.Popen[bytes] | None = None
        self.keep_s = keep_seconds()
        self.reader: threading.Thread | None = None
        self.address = ""  # the starter's socket (abstract namespace)
        self.noted = time.monotonic()  # when a launch waiting for it last said so (one line an interval)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._connect(launch, salt)
        except (OSError, StarterError) as exc:
            self.sock.close()
            self.error = f"no warm starter: {exc}"
            self.ready.set()
            return
        self.reader = threading.Thread(target=self._read, name="warm-starter", daemon=True)
        self.reader.start()

    def _connect(self, launch: Launch, salt: str) -> None:
        env = launch.child_env()
        address = self.address = "\0" + _name(launch, env, salt)
        for proc in list(_STARTED):  # reap kept starters that have ended since
            if proc.poll() is not None:
                _STARTED.remove(proc)
        try:
            self.sock.connect(address)
        except (ConnectionRefusedError, FileNotFoundError):
            self.started = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "autorl.engine.warm_starter",
                    address[1:],
                    str(self.keep_s),
                    *launch.warm,
                ],
                cwd=launch.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # not the runner's: a Ctrl-C reaches the runner only
            )
            _STARTED.append(self.started)
            prewarms = [entry for entry in launch.warm if ":" in entry]
            if prewarms:  # its first launch waits for them: say why
                entries = ", ".join(prewarms)
                print(
                    f"[trial] a new warm starter runs {entries} once for every child, first (start-up; "
                    "its first launch waits for it)",
                    flush=True,
                )
            self._connect_new(address)
        self.pid, uid = peer(self.sock)
        if uid != os.getuid():
            raise StarterError(f"the socket {address[1:]} belongs to user {uid}")

    def _connect_new(self, address: str) -> None:
        """Connect to the starter just started; it listens before importing (or exits at once when another
        starter holds the name, and that one answers)."""
        assert self.started is not None
        deadline = time.monotonic() + CONNECT_S
        while True:
            ended = self.started.poll() is not None
            try:
                self.sock.connect(address)
                return
            except (ConnectionRefusedError, FileNotFoundError):
                if ended or time.monotonic() > deadline:
                    raise StarterError("the starter did not start") from None
                time.sleep(0.02)

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                break
            self._take(json.loads(data))
        self._gone("the starter process ended")

    def _take(self, msg: dict[str, Any]) -> None:
        with self.replied:
            if "ready" in msg:
                self.ready.set()
            elif "error" in msg:
                self.error = msg["error"]
                self.retry = bool(msg.get("stale"))
                self.ready.set()
            elif "pid" in msg:
                self.pids.append(msg["pid"])
            elif "exited" in msg:
                child = self.children.pop(msg["exited"], None)
                if child is None:
                    self.early_exits[msg["exited"]] = msg["code"]
                else:
                    child._ended(msg["code"])
            self.replied.notify_all()

    def _gone(self, why: str) -> None:
        """The starter is gone: its children die with it (parent-death signal), so each one is SIGKILLed."""
        with self.replied:
            if not self.ready.is_set() and self.started is None:
                self.retry = True  # a kept starter that ended as we came (idle): a new one will serve
            self.error = self.error or why
            for child in self.children.values():
                child._ended(-signal.SIGKILL)
            self.children.clear()
            self.ready.set()
            self.replied.notify_all()

    def wait_ready(self, timeout_s: float, give_up: Callable[[], bool]) -> None:
        """Wait until the starter serves. One not ready after `timeout_s` serves nothing more: its later
        launches start cold at once, and one this runner started is killed (a stuck prewarm would otherwise
        take the same wait from every seed)."""
        began = time.monotonic()
        deadline = began + timeout_s
        while not self.ready.wait(0.1):
            if give_up():
                raise StarterError("the trial was stopped while the starter imported")
            self._note_waiting(began)
            if time.monotonic() > deadline:
                with self.replied:
                    first = not self.ready.is_set()  # (two seeds at once may wait on one starter)
                    self.error = self.error or f"the warm starter was not ready within {timeout_s:.0f} s"
                    self.ready.set()
                if first:
                    if self.started is not None:
                        self.started.kill()
                    print(f"[trial] {self.error}: its launches start cold", flush=True)
        if self.error is not None:
            raise StarterError(self.error)

    def _note_waiting(self, began: float) -> None:
        """Every WAITING_NOTE_S of a wait, one line (two seeds waiting at once share it)."""
        now = time.monotonic()
        with self.replied:
            if now - max(began, self.noted) < WAITING_NOTE_S:
                return
            self.noted = now
        print(f"[trial] waiting for the warm starter's imports and prewarms: {now - began:.0f} s", flush=True)

    def fork(self, module: str, args: list[str], launch: Launch) -> WarmChild:
        request = {
            "module": module,
            "args": args,
            "cwd": str(launch.cwd),
            "env": launch.child_env(),
            "cpus": list(launch.cpus),
        }
        read_fd, write_fd = os.pipe()
        try:
            with self.lock:
                try:
                    socket.send_fds(self.sock, [json.dumps(request).encode()], [write_fd])
                except OSError as exc:
                    raise StarterError(f"the starter is gone ({exc})") from exc
                finally:
                    os.close(write_fd)
                pid = self._next_pid()
                child = WarmChild(pid, read_fd)
                with self.replied:
                    if pid in self.early_exits:
                        child._ended(self.early_exits.pop(pid))
                    else:
                        self.children[pid] = child
                return child
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(read_fd)
            raise

    def _next_pid(self) -> int:
        with self.replied:
            while not self.pids:
                if self.error is not None:
                    raise StarterError(self.error)
                self.replied.wait(1.0)
            return self.pids.pop(0)

    def close(self, end: bool = False) -> None:
        """Leave the starter: it kills what this runner still had running and, idle, waits for the next
        trial (or ends, with AUTORL_WARM_KEEP=0, or `end`: a trial stopped by a signal leaves nothing)."""
        if end and self.reader is not None and self.ready.is_set():
            with contextlib.suppress(OSError):
                send(self.sock, {"end": True})  # it ends once its other runners, if any, have left
        if self.reader is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.reader.join(timeout=2)
        if self.started is None or (self.keep_s != 0 and not end):
            return
        if not self.ready.is_set() or self.error:  # still importing (a trial stopped early): nothing to serve
            self.started.kill()  # a runner queued for it starts another
        with contextlib.suppress(subprocess.TimeoutExpired):  # it ends once its other runners leave
            self.started.wait(timeout=5)


class Starters:
    """The starters of one trial, one per distinct (working directory, environment, modules). Private: its
    own starters, which no other runner finds (`starters(private=True)`)."""

    def __init__(self, private: bool = False) -> None:
        self.salt = os.urandom(8).hex() if private else ""  # in its starters' names
        self.starters: dict[tuple[Any, ...], _Starter] = {}
        self.forked = 0  # children forked so far (launches that did not fall back to a cold start)
        self.lock = threading.Lock()

    def _starter(self, launch: Launch, stale: _Starter | None = None) -> _Starter:
        key = (str(launch.cwd), tuple(sorted(launch.env.items())), tuple(launch.warm))
        with self.lock:
            if key not in self.starters or self.starters[key] is stale:
                if stale is not None:
                    stale.close()
                self.starters[key] = _Starter(launch, self.salt)
            return self.starters[key]

    def spawn(self, launch: Launch, ready_timeout_s: float, give_up: Callable[[], bool]) -> WarmChild:
        """Fork `launch` (a `python -m` launch) from its starter; raises StarterError when it cannot."""
        module, args = _module_args(launch)
        starter = self._starter(launch)
        try:
            starter.wait_ready(ready_timeout_s, give_up)
        except StarterError:
            if not starter.retry:
                raise
            starter = self._starter(launch, stale=starter)  # stale, or ended idle as we came: once more
            starter.wait_ready(ready_timeout_s, give_up)
        child = starter.fork(module, args, launch)
        with self.lock:
            self.forked += 1
        return child

    def close(self, end: bool = False) -> None:
        with self.lock:
            for starter in self.starters.values():
                if not end and starter.ready.is_set() and starter.error is None:
                    _KEPT.add(starter.address)  # waiting for the next trial, unless this one is stopped yet
                starter.close(end)
            self.starters.clear()


_ACTIVE: Starters | None = None


@contextlib.contextmanager
def starters(stop: Any = None, private: bool = False) -> Iterator[Starters | None]:
    """Warm starts for the launches inside (None when AUTORL_WARM=0 or off Linux); every connection to a
    starter closes on the way out, and when `stop` (the trial's autorl.engine.process.Stop) is set by then,
    every starter ends: a trial stopped by a signal leaves no process (the keep-alive is for trials that
    end). `private`: starters of these launches alone, shared with no other runner and ended on the way out
    (a Ray task's: Ray kills a worker's child processes with the worker, and a forked child dies with its
    starter, so another task's children must never fork from it)."""
    global _ACTIVE
    if os.environ.get(ENV_SWITCH, "1") == "0" or not sys.platform.startswith("linux") or _ACTIVE is not None:
        yield _ACTIVE
        return
    _ACTIVE = pool = Starters(private)
    try:
        yield pool
    finally:
        _ACTIVE = None
        pool.close(end=bool(stop) or private)


def end_kept() -> None:
    """A stop that came after a trial's seeds were done (while it concluded or recorded, its starters already
    left waiting for the next trial): ask each of them to end; one ends once its other runners, if any, have
    left. A trial stopped by a signal leaves no process, whenever the signal came."""
    while _KEPT:
        address = _KEPT.pop()
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
            sock.settimeout(2.0)
            sock.connect(address)  # refused: it has ended already
            sock.recv(MAX_MESSAGE)  # its greeting: it has taken this runner on
            send(sock, {"end": True})


def fork(launch: Launch, ready_timeout_s: float, give_up: Callable[[], bool]) -> WarmChild | None:
    """`launch` forked from its starter, or None to start it cold: no starters active, a launch that names no
    modules or is not `python -m`, or a starter that cannot serve (a fault of the modules then shows in the
    cold child's own log). Waiting for the starter's imports ends after ready_timeout_s or once give_up()."""
    if _ACTIVE is None or not launch.warm or not _module_args(launch)[0]:
        return None
    try:
        return _ACTIVE.spawn(launch, ready_timeout_s, give_up)
    except StarterError:
        return None


def _module_args(launch: Launch) -> tuple[str, list[str]]:
    """("MODULE", ARGS) of a `python -m MODULE ARGS` launch on this interpreter, else ("", [])."""
    argv = launch.argv
    if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m":
        return argv[2], list(argv[3:])
    return "", []


def send(sock: socket.socket, msg: dict[str, Any]) -> None:
    """One JSON message on a SOCK_SEQPACKET connection (the protocol above; both sides use it)."""
    with contextlib.suppress(OSError):  # a runner that is gone: its connection is dropped when read
        sock.send(json.dumps(msg).encode())
